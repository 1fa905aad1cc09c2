package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// EventsPerPage is the number of events on one page of the events table.
const EventsPerPage = 100

// executionPage is one execution's page.
type executionPage struct {
	ID     string
	Status *inspect.Status
	// Ended: the execution has reached its final status (no cancel).
	Ended bool
	// Follow: the page refreshes itself: until the execution has ended
	// and its log is complete (inspect.LogComplete; the state lands first).
	Follow   bool
	Duration time.Duration
	// Units counts step runs plus loop iterations; Detail says whether
	// all events were read (Units ≤ Config.DetailUnits, or asked with
	// ?detail=all), else the page is drawn from the state and the loop
	// profiles (Summary).
	Units   int
	Detail  bool
	Summary string
	// DetailURL reads every event of a large execution anyway.
	DetailURL  string
	EventCount int
	Graph      *graphView
	GraphError string
	Steps      []stepRow
	Timeline   *ganttView
	Failures   []failureRow
	Results    []resultRow
	Cost       *inspect.Cost
	CostError  string
	// CostURL is the cost page (summary mode: reading the cost means
	// reading every event batch).
	CostURL string
	// Events is the events table (detail mode).
	Events *eventsTable
	// EventsURL is the events page (summary mode).
	EventsURL string
	DLQ       []dlqRow
	// MayDLQ, MayCancel, MayRerun: the visitor's role allows these
	// actions.
	MayDLQ, MayCancel, MayRerun bool
	// Failed: some step failed (a rerun from the failed step is offered).
	Failed bool
	// Workload is the execution's workload (redacted), indented.
	Workload string
	// Render is how long the server took to build the page.
	Render time.Duration
	// FollowEvery is how often the script refreshes a running execution's
	// page (FollowMS in milliseconds): every 2 s, every 10 s past
	// FollowFastUnits units (each refresh reads all the events again).
	FollowEvery time.Duration
	FollowMS    int64
}

// FollowFastUnits is the most units an execution may have for its page to
// be refreshed every 2 s while it runs.
const FollowFastUnits = 1000

// stepRow is one step of the steps table.
type stepRow struct {
	Name                     string
	Status                   string
	Run, Runs                int
	Duration                 string
	Attempts, FailedAttempts int
	// Counted: Attempts and FailedAttempts come from the events (detail
	// mode).
	Counted bool
	Loop    *inspect.Loop
	Error   string
	// URL is the step's inspector; ReusedFrom the execution a rerun
	// reused its latest run from.
	URL        string
	ReusedFrom string
}

// failureRow is one kind of failure, with how often it happened.
type failureRow struct {
	Where   string
	Kind    string
	Message string
	Count   int
}

// resultRow is one step's result: inline, or a reference to the results
// tier.
type resultRow struct {
	Step   string
	Inline string
	// SameAs names the step whose result this is too (not repeated).
	SameAs string
	// Truncated: Inline is the start of a longer value (Max long).
	Truncated bool
	Max       string
	Ref       *refView
}

// refView is a result reference ("$ref", NoETL result storage RFC).
type refView struct {
	URI, Key, Format string
	Bytes, Rows      int64
	Extracted        string
}

// dlqRow is one DLQ entry in a table.
type dlqRow struct {
	store.DLQEntry
	Pending bool
}

// execution serves one execution's page.
func (v *visit) execution(id string) {
	start := time.Now()
	ctx := v.r.Context()
	q := v.r.URL.Query()
	// The playbook's source and the DLQ do not depend on the status: read
	// them while the status is read (then events and cost, when the
	// status says the page reads them).
	var (
		wg            sync.WaitGroup
		evs           []types.Event
		evErr, srcErr error
		src           string
		dlqErr        error
		dlq           []dlqRow
	)
	mayDLQ := v.may(http.MethodGet, "/dlq")
	wg.Add(2)
	go func() { defer wg.Done(); src, srcErr = v.h.cfg.Backend.Source(ctx, id) }()
	go func() {
		defer wg.Done()
		if mayDLQ {
			dlq, dlqErr = v.dlqOf(id)
		}
	}()
	var st inspect.Status
	if err := v.call(http.MethodGet, "/executions/"+url.PathEscape(id), nil, &st); err != nil {
		wg.Wait()
		v.fail(err)
		return
	}
	now := v.h.cfg.Now()
	data := &executionPage{ID: id, Status: &st, Ended: ended(st.Status), Duration: time.Duration(st.DurationMS) * time.Millisecond,
		MayDLQ: mayDLQ, MayCancel: v.may(http.MethodPost, "/executions/"+id+"/cancel"), MayRerun: v.may(http.MethodPost, "/executions/"+id+"/rerun"),
		Workload: indentValue(st.Workload, 16<<10)}
	for _, s := range st.Steps {
		if s.Status == types.StatusFailed {
			data.Failed = true
		}
	}
	data.Units = unitsOf(&st)
	data.FollowEvery = 2 * time.Second
	if data.Units > FollowFastUnits {
		data.FollowEvery = 10 * time.Second
	}
	data.FollowMS = data.FollowEvery.Milliseconds()
	data.Detail = data.Units <= v.h.cfg.DetailUnits || q.Get("detail") == "all"
	pathID := url.PathEscape(id)
	if !data.Detail {
		data.Summary = fmt.Sprintf("This execution has %d units (step runs and loop iterations), more than the %d whose events this page reads: it is drawn from the execution's state and its loops' profiles.", data.Units, v.h.cfg.DetailUnits)
		data.DetailURL = v.base + "/executions/" + pathID + "?detail=all"
		data.EventsURL = v.base + "/executions/" + pathID + "/events"
		data.CostURL = v.base + "/executions/" + pathID + "/cost"
	}
	var ops map[string]float64
	if data.Detail {
		// One read of the batches gives the events and the cost.
		wg.Add(1)
		go func() { defer wg.Done(); evs, ops, evErr = v.h.cfg.Backend.Events(ctx, id) }()
	}
	wg.Wait()
	if evErr != nil {
		v.fail(evErr)
		return
	}
	// The state ends before the batches with the last events land, in
	// any order: keep following until the log is complete too.
	data.Follow = !data.Ended || (data.Detail && followLog(evs, &st, now))
	data.EventCount = len(evs)
	stats := inspect.AttemptStats(evs)
	var tl *inspect.Timeline
	if data.Detail {
		tl = inspect.BuildTimeline(evs)
	} else {
		tl = stateTimeline(&st)
	}
	if srcErr != nil {
		data.GraphError = srcErr.Error()
	} else if pb, err := dsl.Load([]byte(src), "playbook"); err != nil {
		data.GraphError = "the playbook does not load: " + err.Error()
	} else {
		var detailStats map[string]*inspect.StepStats
		if data.Detail {
			detailStats = stats
		}
		var taken map[[2]string]int
		if data.Detail {
			taken = takenArcs(evs)
		}
		data.Graph = buildGraph(pb, &st, detailStats, taken)
	}
	data.Steps = stepRows(&st, stats, data.Detail)
	for i := range data.Steps {
		data.Steps[i].URL = v.base + "/executions/" + pathID + "/steps/" + url.PathEscape(data.Steps[i].Name)
	}
	t0, t1 := spanOf(&st, tl, now)
	profiles := map[string]*engine.LoopProfile{}
	for name, s := range st.Steps {
		if s.Loop != nil && s.Loop.Profile != nil {
			profiles[name] = s.Loop.Profile
		}
	}
	data.Timeline = buildGantt(tl, t0, t1, profiles)
	data.Failures = failures(&st, tl)
	data.Results = resultRows(&st)
	if data.Detail {
		cost := inspect.CostOfStatus(&st, ops)
		data.Cost = &cost
		data.Events = v.eventsTable(id, evs, data.Follow, "")
	}
	if dlqErr == nil {
		data.DLQ = dlq
	}
	data.Render = time.Since(start)
	v.w.Header().Set("Server-Timing", fmt.Sprintf("render;dur=%.1f", float64(data.Render.Microseconds())/1000))
	v.render(http.StatusOK, "execution", "Execution "+id, data)
}

// unitsOf counts an execution's units: step runs plus loop iterations.
func unitsOf(st *inspect.Status) int {
	n := 0
	for _, s := range st.Steps {
		if s.Loop != nil {
			n += max(s.Loop.Total, s.Loop.Done)
		} else {
			n += max(s.Runs, s.Run)
		}
	}
	return n
}

// stateTimeline is the timeline the state alone gives (summary mode):
// each step's latest run.
func stateTimeline(st *inspect.Status) *inspect.Timeline {
	tl := &inspect.Timeline{}
	for name, s := range st.Steps {
		r := &inspect.Run{Step: name, Run: s.Run, Status: s.Status}
		r.Started, r.Ended = s.StartedAt, s.FinishedAt
		if s.Loop != nil {
			r.Loop = &inspect.LoopRun{Total: s.Loop.Total, Mode: s.Loop.Mode, MaxInFlight: s.Loop.MaxInFlight}
		}
		tl.Runs = append(tl.Runs, r)
	}
	sort.SliceStable(tl.Runs, func(i, j int) bool {
		a, b := tl.Runs[i], tl.Runs[j]
		if a.Started.IsZero() != b.Started.IsZero() {
			return !a.Started.IsZero()
		}
		if !a.Started.Equal(b.Started) {
			return a.Started.Before(b.Started)
		}
		return a.Step < b.Step
	})
	return tl
}

// spanOf is the time axis of the timeline: from the execution's creation
// (or first event) to its end (or last event, or now while it runs).
func spanOf(st *inspect.Status, tl *inspect.Timeline, now time.Time) (time.Time, time.Time) {
	t0 := st.CreatedAt
	if t0.IsZero() || (!tl.Start.IsZero() && tl.Start.Before(t0)) {
		t0 = tl.Start
	}
	t1 := st.FinishedAt
	if tl.End.After(t1) {
		t1 = tl.End
	}
	if !ended(st.Status) {
		t1 = now
	}
	if t0.IsZero() {
		t0 = now
	}
	return t0, t1
}

// stepRows are the steps in the order they first ran (by start time in
// summary mode).
func stepRows(st *inspect.Status, stats map[string]*inspect.StepStats, detail bool) []stepRow {
	names := make([]string, 0, len(st.Steps))
	for n := range st.Steps {
		names = append(names, n)
	}
	if detail {
		inspect.StepOrder(names, stats)
	} else {
		sort.Slice(names, func(i, j int) bool {
			a, b := st.Steps[names[i]].StartedAt, st.Steps[names[j]].StartedAt
			if !a.Equal(b) {
				return a.Before(b)
			}
			return names[i] < names[j]
		})
	}
	var out []stepRow
	for _, n := range names {
		s := st.Steps[n]
		row := stepRow{Name: n, Status: string(s.Status), Run: s.Run, Runs: s.Runs, Loop: s.Loop, Counted: detail, ReusedFrom: s.ReusedFrom}
		if s.DurationMS > 0 {
			row.Duration = fmtDur(time.Duration(s.DurationMS) * time.Millisecond)
		}
		if ss := stats[n]; ss != nil {
			row.Attempts, row.FailedAttempts = ss.Attempts, ss.FailedAttempts
		}
		if s.Error != nil {
			row.Error = errorText(s.Error)
		}
		out = append(out, row)
	}
	return out
}

// failures groups what failed: the execution's failure messages, failed
// step runs, failed iterations and failed attempts, by where and error
// kind, with a sample message and a count.
func failures(st *inspect.Status, tl *inspect.Timeline) []failureRow {
	var out []failureRow
	for _, f := range st.Failures {
		out = append(out, failureRow{Where: "execution", Message: f, Count: 1})
	}
	type key struct{ where, kind string }
	groups := map[key]*failureRow{}
	var order []key
	add := func(where string, errv any) {
		kind, msg := errorParts(errv)
		k := key{where, kind}
		g := groups[k]
		if g == nil {
			g = &failureRow{Where: where, Kind: kind, Message: msg}
			groups[k] = g
			order = append(order, k)
		}
		g.Count++
	}
	for _, r := range tl.Runs {
		where := r.Step
		if r.Status == types.StatusFailed && r.Error != nil {
			add(where+" (step run)", r.Error)
		}
		for _, a := range r.Attempts {
			if a.Status == types.StatusError {
				add(where+" / "+a.Task+" (attempts)", a.Error)
			}
		}
		if r.Loop == nil {
			continue
		}
		for _, it := range r.Loop.Iterations {
			if it.Status == types.StatusError {
				add(where+" (iterations)", it.Error)
			}
			for _, a := range it.Attempts {
				if a.Status == types.StatusError {
					add(where+" / "+a.Task+" (attempts)", a.Error)
				}
			}
		}
	}
	if len(order) == 0 {
		for name, s := range st.Steps {
			if s.Error != nil {
				add(name+" (step)", s.Error)
			}
		}
	}
	for _, k := range order {
		out = append(out, *groups[k])
	}
	return out
}

// errorParts splits an error value into kind and message.
func errorParts(v any) (string, string) {
	switch x := v.(type) {
	case nil:
		return "", ""
	case map[string]any:
		kind, _ := x["kind"].(string)
		msg, _ := x["message"].(string)
		if msg == "" {
			b, _ := json.Marshal(x)
			msg = string(b)
		}
		return kind, msg
	case string:
		return "", x
	}
	b, _ := json.Marshal(v)
	return "", string(b)
}

// errorText is an error value in one line: "kind: message".
func errorText(v any) string {
	kind, msg := errorParts(v)
	if kind == "" {
		return msg
	}
	return kind + ": " + msg
}

// MaxInline is the most bytes of a result value shown inline.
const MaxInline = 4096

// resultRows are the steps' results, then the execution's.
func resultRows(st *inspect.Status) []resultRow {
	var out []resultRow
	if m, ok := st.Results.(map[string]any); ok {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, resultOf(n, m[n]))
		}
	}
	if st.Result != nil {
		row := resultOf("(execution)", st.Result)
		// The execution's result is its last step's: named, not repeated.
		if last := lastResultStep(st); last != "" {
			row = resultRow{Step: "(execution)", SameAs: last}
		}
		out = append(out, row)
	}
	return out
}

// lastResultStep names the step whose result the execution's is (the
// step that ended last with a JSON-equal result), "" when none is.
func lastResultStep(st *inspect.Status) string {
	m, ok := st.Results.(map[string]any)
	if !ok {
		return ""
	}
	want, err := json.Marshal(st.Result)
	if err != nil {
		return ""
	}
	best, bestAt := "", time.Time{}
	for name, v := range m {
		if b, err := json.Marshal(v); err == nil && string(b) == string(want) {
			if at := st.Steps[name].FinishedAt; best == "" || at.After(bestAt) {
				best, bestAt = name, at
			}
		}
	}
	return best
}

func resultOf(step string, v any) resultRow { return resultOfMax(step, v, MaxInline) }

// resultOfMax is resultOf showing at most max bytes inline.
func resultOfMax(step string, v any, max int) resultRow {
	row := resultRow{Step: step, Max: humanBytes(int64(max))}
	if results.IsRef(v) {
		m := v.(map[string]any)
		ref, _ := m[results.RefKey].(map[string]any)
		rv := &refView{}
		rv.URI, _ = ref["uri"].(string)
		rv.Key, _ = ref["key"].(string)
		rv.Format, _ = ref["format"].(string)
		rv.Bytes = int64Of(ref["bytes"])
		rv.Rows = int64Of(ref["rows"])
		if ex, ok := m["extracted"]; ok {
			b, _ := json.Marshal(ex)
			rv.Extracted = shorten(string(b), 300)
		}
		row.Ref = rv
		return row
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		row.Inline = fmt.Sprint(v)
		return row
	}
	if len(b) > max {
		b, row.Truncated = b[:max], true
	}
	row.Inline = strings.ToValidUTF8(string(b), "")
	return row
}

func int64Of(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case float64:
		return int64(x)
	}
	return 0
}

// costPage serves an execution's cost on its own (large executions:
// reading it means reading every event batch).
func (v *visit) costPage(id string) {
	var st inspect.Status
	if err := v.call(http.MethodGet, "/executions/"+url.PathEscape(id), nil, &st); err != nil {
		v.fail(err)
		return
	}
	var c inspect.Cost
	if err := v.call(http.MethodGet, "/executions/"+url.PathEscape(id)+"/cost", nil, &c); err != nil {
		v.fail(err)
		return
	}
	v.render(http.StatusOK, "cost", "Cost of "+id, &costPageData{ID: id, Status: &st, Cost: &c})
}

// costPageData is the cost page's data.
type costPageData struct {
	ID     string
	Status *inspect.Status
	Cost   *inspect.Cost
}

// atoi parses a positive page number (1 when it does not parse).
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 1
	}
	return n
}
