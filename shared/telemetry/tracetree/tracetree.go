// Package tracetree reads the spans written by telemetry's file exporter
// (one JSON object per line, Span, in *.jsonl files under a directory,
// NOETL_TRACE_DIR) and builds the span tree of one execution: what
// `noetl trace ID` prints. It depends on the standard library only, so
// the CLI can use it without the OpenTelemetry SDK.
package tracetree

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/noetl/gcpengine/shared/errs"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Span is one exported span, the line format of the file exporter.
// Ids are lower-case hex (trace 32 digits, span 16); ParentSpanID is ""
// for a root. Times are RFC 3339 with nanoseconds. Status is "unset",
// "ok" or "error". Attribute values are JSON scalars or arrays.
// ForcedOnError is true for a span outside the head sample exported
// because it (or an earlier span of its trace) ended with an error.
type Span struct {
	TraceID       string         `json:"trace_id"`                 // 32 hex digits
	SpanID        string         `json:"span_id"`                  // 16 hex digits
	ParentSpanID  string         `json:"parent_span_id,omitempty"` // "" for a root
	Name          string         `json:"name"`                     // e.g. "server.dispatch"
	Kind          string         `json:"kind,omitempty"`           // OpenTelemetry span kind: internal, server, client, ...
	Start         time.Time      `json:"start"`                    // UTC
	End           time.Time      `json:"end"`                      // UTC
	Status        string         `json:"status"`                   // unset, ok or error
	StatusMessage string         `json:"status_message,omitempty"` // the error's (redacted) message
	Attributes    map[string]any `json:"attributes,omitempty"`     // NoETL observability spec §8.3 attributes
	Events        []Event        `json:"events,omitempty"`         // span events in time order
	Links         []Link         `json:"links,omitempty"`          // linked spans
	Service       string         `json:"service,omitempty"`        // service.name of the writer
	ForcedOnError bool           `json:"forced_on_error,omitempty"`
}

// Event is a span event (e.g. an exception recorded on the span).
type Event struct {
	Name       string         `json:"name"`                 // e.g. "exception"
	Time       time.Time      `json:"time"`                 // UTC
	Attributes map[string]any `json:"attributes,omitempty"` // the event's attributes
}

// Link points at another span (e.g. a child execution's root, or the unit
// whose boundary event a route decision handles).
type Link struct {
	TraceID string `json:"trace_id"` // 32 hex digits
	SpanID  string `json:"span_id"`  // 16 hex digits
}

// Duration is End − Start (0 when End is before Start).
func (s Span) Duration() time.Duration {
	if s.End.Before(s.Start) {
		return 0
	}
	return s.End.Sub(s.Start)
}

// ReadStats counts what ReadDir read.
type ReadStats struct {
	Files int // *.jsonl files read
	Spans int // lines decoded as spans
	Bad   int // lines that are not a span (skipped)
}

// ReadDir reads every *.jsonl file directly under dir and returns the
// spans they hold, in file then line order. Lines that do not decode as a
// span with trace and span ids are skipped and counted in ReadStats.Bad
// (a line being written while reading is one). It fails when dir cannot
// be listed or a file cannot be read.
func ReadDir(dir string) ([]Span, ReadStats, error) {
	var st ReadStats
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, st, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, st, fmt.Errorf("tracetree: trace dir: %w", err)
	}
	sort.Strings(files)
	var out []Span
	for _, f := range files {
		spans, bad, err := readFile(f)
		if err != nil {
			return nil, st, err
		}
		st.Files++
		st.Spans += len(spans)
		st.Bad += bad
		out = append(out, spans...)
	}
	return out, st, nil
}

func readFile(name string) ([]Span, int, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, fmt.Errorf("tracetree: %w", err)
	}
	defer f.Close()
	var out []Span
	bad := 0
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var s Span
			if json.Unmarshal(line, &s) != nil || s.TraceID == "" || s.SpanID == "" {
				bad++
			} else {
				out = append(out, s)
			}
		}
		if err == io.EOF {
			return out, bad, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("tracetree: read %s: %w", name, err)
		}
	}
}

// ErrNoSpans is returned (wrapped) by Load when no span names the
// execution (NotFound: the spans of an unsampled or unrecorded execution
// do not appear later by asking again).
var ErrNoSpans = errs.Sentinel(errs.NotFound, "no spans for this execution")

// ForExecution returns the spans of every trace that holds a span whose
// execution_id attribute is id, each (trace, span) once: when a span was
// recorded more than once (a redelivered unit), the copy that ended last
// is kept.
func ForExecution(spans []Span, id string) []Span {
	traces := map[string]bool{}
	for _, s := range spans {
		if v, ok := s.Attributes["execution_id"].(string); ok && v == id {
			traces[s.TraceID] = true
		}
	}
	idx := map[[2]string]int{}
	var out []Span
	for _, s := range spans {
		if !traces[s.TraceID] {
			continue
		}
		k := [2]string{s.TraceID, s.SpanID}
		if i, ok := idx[k]; ok {
			if s.End.After(out[i].End) {
				out[i] = s
			}
			continue
		}
		idx[k] = len(out)
		out = append(out, s)
	}
	return out
}

// Node is a span and its children, ordered by start time. A Node with
// Missing set stands for a parent span that is not in the files (the
// execution root is recorded only when the execution ends, and spans
// outside the sample are only exported on error); its Span holds the ids
// only.
type Node struct {
	Span     Span    `json:"span"`               // the span (ids only when Missing)
	Missing  bool    `json:"missing,omitempty"`  // a parent that is not in the files
	Children []*Node `json:"children,omitempty"` // by start time, then name
}

// Tree is the span tree of an execution.
type Tree struct {
	ExecutionID string   `json:"execution_id"` // the execution asked for
	TraceIDs    []string `json:"trace_ids"`    // its traces, sorted (one when propagation held)
	Spans       int      `json:"spans"`        // spans in the tree (Missing nodes excluded)
	Roots       []*Node  `json:"roots"`        // by start time, then name
}

// Build arranges spans (one execution's, see ForExecution) into a tree:
// a span's parent is the span with its trace id and parent span id; spans
// whose parent is absent hang under one Missing node per absent parent;
// roots and children are ordered by start time, then name.
func Build(executionID string, spans []Span) *Tree {
	t := &Tree{ExecutionID: executionID, Spans: len(spans)}
	nodes := map[[2]string]*Node{}
	seenTrace := map[string]bool{}
	for _, s := range spans {
		nodes[[2]string{s.TraceID, s.SpanID}] = &Node{Span: s}
		if !seenTrace[s.TraceID] {
			seenTrace[s.TraceID] = true
			t.TraceIDs = append(t.TraceIDs, s.TraceID)
		}
	}
	sort.Strings(t.TraceIDs)
	missing := map[[2]string]*Node{}
	for _, s := range spans {
		n := nodes[[2]string{s.TraceID, s.SpanID}]
		if s.ParentSpanID == "" {
			t.Roots = append(t.Roots, n)
			continue
		}
		pk := [2]string{s.TraceID, s.ParentSpanID}
		if p, ok := nodes[pk]; ok {
			p.Children = append(p.Children, n)
			continue
		}
		m, ok := missing[pk]
		if !ok {
			m = &Node{Missing: true, Span: Span{TraceID: s.TraceID, SpanID: s.ParentSpanID}}
			missing[pk] = m
			t.Roots = append(t.Roots, m)
		}
		m.Children = append(m.Children, n)
	}
	for _, m := range missing {
		// A missing parent starts with its earliest child.
		for _, c := range m.Children {
			if m.Span.Start.IsZero() || c.Span.Start.Before(m.Span.Start) {
				m.Span.Start = c.Span.Start
			}
		}
	}
	sortNodes(t.Roots)
	return t
}

func sortNodes(ns []*Node) {
	sort.SliceStable(ns, func(i, j int) bool {
		a, b := ns[i].Span, ns[j].Span
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		return a.Name < b.Name
	})
	for _, n := range ns {
		sortNodes(n.Children)
	}
}

// Load reads dir and builds the tree of execution id. It returns an error
// wrapping ErrNoSpans when no span names the execution (not sampled, not
// started, or the wrong directory).
func Load(dir, id string) (*Tree, ReadStats, error) {
	spans, st, err := ReadDir(dir)
	if err != nil {
		return nil, st, err
	}
	mine := ForExecution(spans, id)
	if len(mine) == 0 {
		return nil, st, fmt.Errorf("tracetree: execution %s in %s (%d files, %d spans): %w", id, dir, st.Files, st.Spans, ErrNoSpans)
	}
	return Build(id, mine), st, nil
}

// KeyAttributes are the attributes Print shows, in this order (NoETL observability spec
// §8.3 attributes and the engine's additions); others are omitted.
var KeyAttributes = []string{
	"workflow_ref", "workload_size", "status", "step_id", "step_run", "loop_index", "task", "tool_kind", "attempt",
	"spec_signature", "args_signature", "from_step", "edge_index", "target_step", "condition", "when_expr",
	"outcome", "error_class",
}

// Print writes the tree as indented text, one span a line:
//
//	execution <id>  trace <trace id>  <n> spans
//	server.execution  +0s  12.345s  ok  workflow_ref=... workload_size=2
//	├─ server.dispatch  +0.1s  1.2s  ok  step_id=fetch ...
//	│  └─ worker.plugin.http  +0.1s  812ms  error: boom  attempt=1 ...
//
// "+x" is the offset of the span's start from the earliest span of the
// tree; an attribute with the same value as on the parent's line is not
// repeated; a span exported only because of an error is marked
// "(forced on error)"; a missing parent prints as "? (span <id> not
// exported)".
func (t *Tree) Print(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "execution %s  trace %s  %d spans\n", t.ExecutionID, strings.Join(t.TraceIDs, ","), t.Spans)
	var t0 time.Time
	for _, r := range t.Roots {
		if t0.IsZero() || (!r.Span.Start.IsZero() && r.Span.Start.Before(t0)) {
			t0 = r.Span.Start
		}
	}
	for _, r := range t.Roots {
		printNode(bw, r, "", "", t0, nil)
	}
	return bw.Flush()
}

func printNode(w *bufio.Writer, n *Node, first, rest string, t0 time.Time, parent map[string]any) {
	w.WriteString(first)
	if n.Missing {
		fmt.Fprintf(w, "? (span %s not exported)  +%s\n", n.Span.SpanID, fmtDur(n.Span.Start.Sub(t0)))
	} else {
		s := n.Span
		fmt.Fprintf(w, "%s  +%s  %s  %s", s.Name, fmtDur(s.Start.Sub(t0)), fmtDur(s.Duration()), status(s))
		for _, k := range KeyAttributes {
			v, ok := s.Attributes[k]
			if !ok || v == nil || v == "" {
				continue
			}
			if pv, ok := parent[k]; ok && fmtVal(pv) == fmtVal(v) {
				continue // shown on the parent's line
			}
			fmt.Fprintf(w, "  %s=%s", k, fmtVal(v))
		}
		if s.ForcedOnError {
			w.WriteString("  (forced on error)")
		}
		w.WriteByte('\n')
	}
	for i, c := range n.Children {
		if i == len(n.Children)-1 {
			printNode(w, c, rest+"└─ ", rest+"   ", t0, n.Span.Attributes)
		} else {
			printNode(w, c, rest+"├─ ", rest+"│  ", t0, n.Span.Attributes)
		}
	}
}

func status(s Span) string {
	switch s.Status {
	case "error":
		if s.StatusMessage != "" {
			return "error: " + strconv.Quote(oneLine(s.StatusMessage, 120))
		}
		return "error"
	case "ok":
		return "ok"
	}
	return "unset"
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func fmtVal(v any) string {
	switch x := v.(type) {
	case string:
		x = oneLine(x, 120)
		if x == "" || strings.ContainsAny(x, " \t\"=") {
			return strconv.Quote(x)
		}
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// fmtDur prints d rounded to a readable precision: 1.234s, 12ms, 250µs.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + fmtDur(-d)
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}
