package main

// The end of `run` and `wait`: one JSON line for scripts, or a short
// summary for people (status, duration, a table of steps, the final
// step's result cut to a few lines, failures, the console's URL).

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Limits of the summary's result and failure excerpts.
const (
	// SummaryLines is how many lines of the final result the summary shows.
	SummaryLines = 8
	// SummaryWidth is the widest line (in runes) of the result excerpt.
	SummaryWidth = 100
	// SummaryFailures is how many failure messages the summary lists.
	SummaryFailures = 3
)

// eventsSettle bounds how long the summary waits for an ended execution's
// events (its attempt counts) to be projected (inspect.LogComplete).
const eventsSettle = 10 * time.Second

// waitEnd polls execution id until it ends (progress on stderr unless
// quiet, for at most timeout; none for an execution already ended at the
// first poll when ended is false) and prints its outcome: the JSON line
// {"execution_id", "status", "duration_ms", "steps", "failures"?} with
// --output json (the default when stdout is not a terminal), else the
// summary. The error is ExitFailed when the execution did not end ok.
func (a *app) waitEnd(id string, timeout time.Duration, quiet, ended bool) error {
	st, err := a.waitEndStatus(id, timeout, quiet, ended)
	if err != nil || st.Status == "ok" {
		return err
	}
	return &exitError{code: ExitFailed}
}

// waitEndStatus is waitEnd returning the ended execution's status
// document (nil with the error when it did not end).
func (a *app) waitEndStatus(id string, timeout time.Duration, quiet, ended bool) (*inspect.Status, error) {
	var raw map[string]any
	st, err := a.pollEndRaw(id, timeout, quiet, ended, &raw)
	if err != nil {
		return nil, err
	}
	if a.jsonOut() {
		out := map[string]any{"execution_id": id, "status": raw["status"], "duration_ms": raw["duration_ms"], "steps": raw["results"]}
		if f, ok := raw["failures"]; ok && f != nil {
			out["failures"] = f
		}
		ob, _ := json.Marshal(out)
		fmt.Fprintln(a.stdout, string(ob))
	} else {
		writeSummary(a.stdout, st, a.settledStats(st), a.base()+"/console/executions/"+url.PathEscape(id))
	}
	return st, nil
}

// pollEnd polls execution id until it ends and returns its status
// document (progress on stderr as waitEnd says); the error is
// ExitFailed when timeout passed first, or the poller's.
func (a *app) pollEnd(id string, timeout time.Duration, quiet, ended bool) (*inspect.Status, error) {
	return a.pollEndRaw(id, timeout, quiet, ended, nil)
}

// pollEndRaw is pollEnd also decoding the status document into raw (the
// JSON numbers kept as jsonx decodes them) when raw is not nil.
func (a *app) pollEndRaw(id string, timeout time.Duration, quiet, ended bool, raw *map[string]any) (*inspect.Status, error) {
	deadline := time.Now().Add(timeout)
	first := true
	last := map[string]string{}
	p := a.newPoller()
	for {
		b, err := p.get("/executions/"+url.PathEscape(id), "execution "+id)
		if err != nil {
			return nil, err
		}
		if b != nil {
			var st map[string]any
			if err := jsonx.Unmarshal(b, &st); err != nil {
				return nil, fail(ExitUnavailable, "api at %s: status of %s is not JSON: %v", a.base(), id, err)
			}
			status, _ := st["status"].(string)
			if !quiet && (ended || !first || !terminal(status)) {
				a.progress(st, last)
			}
			first = false
			if terminal(status) {
				var doc inspect.Status
				if err := json.Unmarshal(b, &doc); err != nil {
					return nil, fail(ExitUnavailable, "api at %s: status of %s: %v", a.base(), id, err)
				}
				if raw != nil {
					*raw = st
				}
				return &doc, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fail(ExitFailed, "execution %s still running after %s", id, timeout)
		}
		time.Sleep(a.interval)
	}
}

// settledStats returns the attempt counts of an ended execution's steps
// once its events are projected (inspect.LogComplete, and the list unchanged
// since the previous poll), or what is there after eventsSettle; nil when
// the events cannot be read (the summary then shows no attempt counts).
func (a *app) settledStats(st *inspect.Status) map[string]*inspect.StepStats {
	until := time.Now().Add(eventsSettle)
	prev := -1
	for {
		l, _, err := a.fetchEvents(nil, st.ExecutionID)
		if err != nil {
			return nil
		}
		if inspect.LogComplete(st, l.events) && len(l.events) == prev || time.Now().After(until) {
			return inspect.AttemptStats(l.events)
		}
		prev = len(l.events)
		time.Sleep(a.interval)
	}
}

// writeSummary writes the summary of an ended execution: a headline
// (id, status, duration, playbook), one row per step (in the order the
// steps first ran: status, runs, task attempts with the failed ones,
// duration, loop progress), the failures (at most SummaryFailures), the
// result of the step that finished last (at most SummaryLines lines of
// SummaryWidth runes) and the console's URL of the execution. stats may
// be nil (attempts unknown: "-").
func writeSummary(w io.Writer, st *inspect.Status, stats map[string]*inspect.StepStats, console string) {
	head := fmt.Sprintf("execution %s: %s in %s", st.ExecutionID, st.Status, fmtDuration(st.DurationMS))
	if st.Playbook != "" {
		head += " (" + st.Playbook + ")"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w)
	names := make([]string, 0, len(st.Steps))
	loops := false
	for n, s := range st.Steps {
		names = append(names, n)
		loops = loops || s.Loop != nil
	}
	inspect.StepOrder(names, stats)
	header := []string{"STEP", "STATUS", "RUNS", "ATTEMPTS", "DURATION"}
	if loops {
		header = append(header, "LOOP")
	}
	t := newTable(w, header...)
	for _, n := range names {
		s := st.Steps[n]
		att := "-"
		if ss := stats[n]; ss != nil {
			att = strconv.Itoa(ss.Attempts)
			if ss.FailedAttempts > 0 {
				att += fmt.Sprintf(" (%d failed)", ss.FailedAttempts)
			}
		} else if stats != nil {
			att = "0"
		}
		row := []string{n, string(s.Status), strconv.Itoa(s.Runs), att, fmtDuration(s.DurationMS)}
		if loops {
			loop := ""
			if s.Loop != nil {
				loop = fmt.Sprintf("%d/%d", s.Loop.Done, s.Loop.Total)
			}
			row = append(row, loop)
		}
		t.row(row...)
	}
	t.flush()
	if len(st.Failures) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "failures:")
		for i, f := range st.Failures {
			if i == SummaryFailures {
				fmt.Fprintf(w, "  … %d more (scripts/noetl describe %s)\n", len(st.Failures)-i, st.ExecutionID)
				break
			}
			fmt.Fprintln(w, "  - "+oneLine(f, SummaryWidth*2))
		}
	}
	if name := lastStep(st); name != "" && st.Result != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "result of %s (the step that finished last):\n", name)
		for _, l := range excerpt(st.Result, SummaryLines, SummaryWidth) {
			fmt.Fprintln(w, "  "+l)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "console: "+console)
}

// lastStep is the ok step whose latest run finished last: the one whose
// result is the execution's result ("" when none finished ok).
func lastStep(st *inspect.Status) string {
	name, at := "", time.Time{}
	for n, s := range st.Steps {
		if s.Status != types.StatusOK || s.FinishedAt.IsZero() {
			continue
		}
		if s.FinishedAt.After(at) || s.FinishedAt.Equal(at) && n < name {
			name, at = n, s.FinishedAt
		}
	}
	return name
}

// excerpt renders v in at most lines lines of at most width runes: a
// mapping one "key: value" line per key (sorted; the value as compact
// JSON), a list one line per item after its length, anything else as
// compact JSON (a string as its first lines). What does not fit is
// counted in a last "…" line.
func excerpt(v any, lines, width int) []string {
	var out []string
	more := func(n int, what string) {
		out = append(out, fmt.Sprintf("… %d more %s", n, what))
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i == lines-1 && len(keys) > lines {
				more(len(keys)-i, "keys")
				break
			}
			out = append(out, cut(k+": "+compactJSON(x[k]), width))
		}
	case []any:
		out = append(out, fmt.Sprintf("%d items:", len(x)))
		for i, item := range x {
			if i == lines-2 && len(x) > lines-1 {
				more(len(x)-i, "items")
				break
			}
			out = append(out, cut("- "+compactJSON(item), width))
		}
	case string:
		ls := strings.Split(strings.TrimRight(x, "\n"), "\n")
		for i, l := range ls {
			if i == lines-1 && len(ls) > lines {
				more(len(ls)-i, "lines")
				break
			}
			out = append(out, cut(l, width))
		}
	default:
		out = append(out, cut(compactJSON(x), width))
	}
	return out
}

// compactJSON is v as one line of JSON (a string unquoted).
func compactJSON(v any) string {
	if s, ok := v.(string); ok {
		return oneLine(s, 0)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// cut shortens s to width runes, ending in "…" when cut.
func cut(s string, width int) string {
	if r := []rune(s); len(r) > width {
		return string(r[:width-1]) + "…"
	}
	return s
}

// fmtDuration formats milliseconds for people: "331ms", "22.8s",
// "2m44s" ("-" for none).
func fmtDuration(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return d.String()
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}
