package tracetree

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

const (
	traceA = "0af7651916cd43dd8448eb211c80319c"
	traceB = "4bf92f3577b34da6a3ce929d0e0e4736"
)

// synthetic returns the spans of execution "ex-1" (trace A) with a
// redelivered dispatch span, an attempt whose parent is not exported,
// and a span of another execution (trace B).
func synthetic() []Span {
	return []Span{
		{TraceID: traceA, SpanID: "00000000000000d1", ParentSpanID: "00000000000000r0", Name: "server.dispatch", Start: at(100), End: at(900), Status: "ok",
			Attributes: map[string]any{"execution_id": "ex-1", "step_id": "fetch", "tool_kind": "http"}},
		{TraceID: traceA, SpanID: "00000000000000p1", ParentSpanID: "00000000000000d1", Name: "worker.plugin.http", Start: at(150), End: at(400), Status: "error", StatusMessage: "503\nService Unavailable",
			Attributes: map[string]any{"execution_id": "ex-1", "attempt": 1, "spec_signature": "GET https://api/x"}},
		{TraceID: traceA, SpanID: "00000000000000p2", ParentSpanID: "00000000000000d1", Name: "worker.plugin.http", Start: at(500), End: at(800), Status: "ok",
			Attributes: map[string]any{"execution_id": "ex-1", "attempt": 2, "step_id": "fetch", "tool_kind": "http", "task": "get"}},
		{TraceID: traceA, SpanID: "00000000000000r1", ParentSpanID: "00000000000000r0", Name: "server.route", Start: at(950), End: at(951), Status: "ok",
			Attributes: map[string]any{"execution_id": "ex-1", "from_step": "fetch", "edge_index": 0, "target_step": "end", "outcome": "taken"}},
		{TraceID: traceA, SpanID: "00000000000000r0", Name: "server.execution", Start: at(0), End: at(1200), Status: "ok",
			Attributes: map[string]any{"execution_id": "ex-1", "workflow_ref": "examples/hello"}},
		// the dispatch span recorded again by a redelivery, ending later.
		{TraceID: traceA, SpanID: "00000000000000d1", ParentSpanID: "00000000000000r0", Name: "server.dispatch", Start: at(100), End: at(1000), Status: "ok",
			Attributes: map[string]any{"execution_id": "ex-1", "step_id": "fetch", "tool_kind": "http"}},
		// an attempt of the same trace whose unit span was never exported.
		{TraceID: traceA, SpanID: "00000000000000p9", ParentSpanID: "00000000000000d9", Name: "worker.plugin.python", Start: at(1050), End: at(1100), Status: "error", ForcedOnError: true},
		{TraceID: traceB, SpanID: "00000000000000b0", Name: "server.execution", Start: at(0), End: at(10), Status: "ok",
			Attributes: map[string]any{"execution_id": "ex-2"}},
	}
}

func writeSpans(t *testing.T, dir, name string, spans []Span, extra string) {
	t.Helper()
	var buf bytes.Buffer
	for _, s := range spans {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	buf.WriteString(extra)
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	sp := synthetic()
	writeSpans(t, dir, "a-1.jsonl", sp[:4], "not json\n\n{\"name\":\"no ids\"}\n")
	writeSpans(t, dir, "b-2.jsonl", sp[4:], `{"trace_id":"`+traceA+`","span_id":"half`) // a line being written
	writeSpans(t, dir, "ignored.txt", sp, "")
	got, st, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 2 || st.Spans != len(sp) || st.Bad != 3 || len(got) != len(sp) {
		t.Errorf("stats %+v, %d spans; want 2 files, %d spans, 3 bad", st, len(got), len(sp))
	}
	if _, _, err := ReadDir(filepath.Join(dir, "nope")); err == nil {
		t.Error("a missing directory is not an error")
	}
}

func TestForExecution(t *testing.T) {
	got := ForExecution(synthetic(), "ex-1")
	if len(got) != 6 {
		t.Fatalf("%d spans, want 6 (trace A without the duplicate)", len(got))
	}
	for _, s := range got {
		if s.TraceID != traceA {
			t.Errorf("span of another trace: %+v", s)
		}
		if s.SpanID == "00000000000000d1" && !s.End.Equal(at(1000)) {
			t.Errorf("duplicate span kept the earlier copy (end %v)", s.End)
		}
	}
	if n := len(ForExecution(synthetic(), "ex-3")); n != 0 {
		t.Errorf("unknown execution: %d spans", n)
	}
}

func TestBuildAndPrint(t *testing.T) {
	tree := Build("ex-1", ForExecution(synthetic(), "ex-1"))
	if len(tree.Roots) != 2 || !tree.Roots[1].Missing || tree.Roots[1].Span.SpanID != "00000000000000d9" {
		t.Fatalf("roots %+v", tree.Roots)
	}
	var out bytes.Buffer
	if err := tree.Print(&out); err != nil {
		t.Fatal(err)
	}
	want := `execution ex-1  trace ` + traceA + `  6 spans
server.execution  +0s  1.2s  ok  workflow_ref=examples/hello
├─ server.dispatch  +100ms  900ms  ok  step_id=fetch  tool_kind=http
│  ├─ worker.plugin.http  +150ms  250ms  error: "503 Service Unavailable"  attempt=1  spec_signature="GET https://api/x"
│  └─ worker.plugin.http  +500ms  300ms  ok  task=get  attempt=2
└─ server.route  +950ms  1ms  ok  from_step=fetch  edge_index=0  target_step=end  outcome=taken
? (span 00000000000000d9 not exported)  +1.05s
└─ worker.plugin.python  +1.05s  50ms  error  (forced on error)
`
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestLoadNoSpans(t *testing.T) {
	dir := t.TempDir()
	writeSpans(t, dir, "x.jsonl", synthetic(), "")
	_, _, err := Load(dir, "missing")
	if !errors.Is(err, ErrNoSpans) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("err = %v, want ErrNoSpans naming the execution", err)
	}
	tree, _, err := Load(dir, "ex-2")
	if err != nil || tree.Spans != 1 || tree.Roots[0].Span.Name != "server.execution" {
		t.Errorf("ex-2: %v %+v", err, tree)
	}
}
