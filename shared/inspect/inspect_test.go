package inspect

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/types"
)

// at is t0 plus ms milliseconds, as an event timestamp.
var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func at(ms int) types.EventTime {
	return types.EventTimeOf(tm(ms))
}

// tm is t0 plus ms milliseconds.
func tm(ms int) time.Time {
	return t0.Add(time.Duration(ms) * time.Millisecond)
}

// ev builds an event; iteration < 0 means none.
func ev(id string, ms int, typ types.EventType, step string, run int, task string, attempt, iteration int, status types.Status, payload map[string]any) types.Event {
	e := types.Event{EventID: id, EventType: typ, Timestamp: at(ms), Step: step, StepRun: run, Task: task, Attempt: attempt, Status: status, Payload: payload}
	if iteration >= 0 {
		e.Iteration = types.IntPtr(iteration)
	}
	return e
}

// sample is a small execution's events: a step whose http task fails once
// and is retried after 200 ms, then a loop of three iterations in which
// iteration 1 pages twice (a jump: the same task and attempt number run
// again) and iteration 2 fails after a retry.
func sample() []types.Event {
	fail := map[string]any{"error": map[string]any{"kind": "server_error", "message": "HTTP 503"}}
	return []types.Event{
		ev("e1", 0, types.EvPlaybookStarted, "", 0, "", 0, -1, "", nil),
		ev("e2", 1, types.EvStepScheduled, "fetch", 1, "", 0, -1, "", nil),
		ev("e3", 5, types.EvStepStarted, "fetch", 1, "", 0, -1, "", nil),
		ev("e4", 5, types.EvTaskAttemptStarted, "fetch", 1, "get", 1, -1, "", nil),
		ev("e5", 55, types.EvTaskAttemptFailed, "fetch", 1, "get", 1, -1, types.StatusError, fail),
		ev("e6", 55, types.EvPolicyTaskEvaluated, "fetch", 1, "get", 1, -1, "", map[string]any{"do": "retry", "delay_s": 0.2}),
		ev("e7", 300, types.EvTaskAttemptStarted, "fetch", 1, "get", 2, -1, "", nil),
		ev("e8", 310, types.EvTaskAttemptDone, "fetch", 1, "get", 2, -1, types.StatusOK, nil),
		ev("e9", 312, types.EvStepDone, "fetch", 1, "", 0, -1, types.StatusOK, nil),
		ev("e10", 313, types.EvNextEvaluated, "fetch", 1, "", 0, -1, "", map[string]any{"fired": []any{"loop"}}),
		ev("e11", 314, types.EvStepScheduled, "loop", 1, "", 0, -1, "", nil),
		ev("e12", 314, types.EvLoopStarted, "loop", 1, "", 0, -1, "", map[string]any{"total": int64(3), "mode": "parallel", "max_in_flight": int64(2)}),
		ev("e13", 320, types.EvLoopIterationStarted, "loop", 1, "", 0, 0, "", nil),
		ev("e14", 320, types.EvTaskAttemptStarted, "loop", 1, "work", 1, 0, "", nil),
		ev("e15", 330, types.EvTaskAttemptDone, "loop", 1, "work", 1, 0, types.StatusOK, nil),
		ev("e16", 331, types.EvLoopIterationDone, "loop", 1, "", 1, 0, types.StatusOK, nil),
		ev("e17", 321, types.EvLoopIterationStarted, "loop", 1, "", 0, 1, "", nil),
		ev("e18", 321, types.EvTaskAttemptStarted, "loop", 1, "work", 1, 1, "", nil),
		ev("e19", 340, types.EvTaskAttemptDone, "loop", 1, "work", 1, 1, types.StatusOK, nil),
		ev("e20", 341, types.EvTaskAttemptStarted, "loop", 1, "work", 1, 1, "", nil),
		ev("e21", 360, types.EvTaskAttemptDone, "loop", 1, "work", 1, 1, types.StatusOK, nil),
		ev("e22", 361, types.EvLoopIterationDone, "loop", 1, "", 1, 1, types.StatusOK, nil),
		ev("e23", 332, types.EvLoopIterationStarted, "loop", 1, "", 0, 2, "", nil),
		ev("e24", 332, types.EvTaskAttemptStarted, "loop", 1, "work", 1, 2, "", nil),
		ev("e25", 342, types.EvTaskAttemptFailed, "loop", 1, "work", 1, 2, types.StatusError, fail),
		ev("e26", 342, types.EvPolicyTaskEvaluated, "loop", 1, "work", 1, 2, "", map[string]any{"do": "retry", "delay_s": 0.5}),
		ev("e27", 850, types.EvTaskAttemptFailed, "loop", 1, "work", 2, 2, types.StatusError, fail), // its start not projected
		ev("e28", 851, types.EvLoopIterationFailed, "loop", 1, "", 2, 2, types.StatusError, fail),
		ev("e29", 900, types.EvLoopDone, "loop", 1, "", 0, -1, types.StatusOK, nil),
		ev("e30", 900, types.EvStepDone, "loop", 1, "", 0, -1, types.StatusOK, nil),
		ev("e31", 905, types.EvPlaybookFinished, "", 0, "", 0, -1, types.StatusOK, nil),
		ev("e31", 905, types.EvPlaybookFinished, "", 0, "", 0, -1, types.StatusOK, nil), // a duplicate
	}
}

func TestAttemptStats(t *testing.T) {
	stats := AttemptStats(sample())
	want := map[string]StepStats{"fetch": {Attempts: 2, FailedAttempts: 1, First: 0}, "loop": {Attempts: 5, FailedAttempts: 2, First: 1}}
	if len(stats) != len(want) {
		t.Fatalf("stats for %d steps, want %d: %v", len(stats), len(want), stats)
	}
	for name, w := range want {
		if got := stats[name]; got == nil || *got != w {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
	names := []string{"zeta", "loop", "alpha", "fetch"}
	StepOrder(names, stats)
	if names[0] != "fetch" || names[1] != "loop" || names[2] != "alpha" || names[3] != "zeta" {
		t.Errorf("StepOrder = %v, want [fetch loop alpha zeta]", names)
	}
}

func TestBuildTimeline(t *testing.T) {
	tl := BuildTimeline(sample())
	if !tl.Finished || !tl.Start.Equal(t0) || !tl.End.Equal(t0.Add(905*time.Millisecond)) {
		t.Fatalf("span %v–%v finished %v", tl.Start, tl.End, tl.Finished)
	}
	if len(tl.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(tl.Runs))
	}
	fetch, loop := tl.Runs[0], tl.Runs[1]
	if fetch.Step != "fetch" || fetch.Status != types.StatusOK || !fetch.Scheduled.Equal(t0.Add(time.Millisecond)) || !fetch.Started.Equal(t0.Add(5*time.Millisecond)) || !fetch.Ended.Equal(t0.Add(312*time.Millisecond)) {
		t.Errorf("fetch run %+v", fetch)
	}
	if len(fetch.Attempts) != 2 || !fetch.Attempts[0].Retried || fetch.Attempts[0].DelayS != 0.2 || fetch.Attempts[0].Status != types.StatusError || fetch.Attempts[1].Retried || fetch.Attempts[1].Status != types.StatusOK {
		t.Errorf("fetch attempts %+v", fetch.Attempts)
	}
	if fetch.Attempts[0].Error == nil || !fetch.Attempts[1].Started.Equal(t0.Add(300*time.Millisecond)) {
		t.Errorf("fetch attempts %+v", fetch.Attempts)
	}
	if loop.Loop == nil || loop.Loop.Total != 3 || loop.Loop.Mode != "parallel" || loop.Loop.MaxInFlight != 2 || loop.Loop.Done != 2 || loop.Loop.Failed != 1 {
		t.Fatalf("loop %+v", loop.Loop)
	}
	its := loop.Loop.Iterations
	if len(its) != 3 || its[0].Index != 0 || its[1].Index != 1 || its[2].Index != 2 {
		t.Fatalf("iterations %+v", its)
	}
	if len(its[1].Attempts) != 2 || its[1].Attempts[1].Started.Sub(its[1].Attempts[0].Ended) != time.Millisecond {
		t.Errorf("the jump's second run of work attempt 1 is its own attempt: %+v", its[1].Attempts)
	}
	a := its[2].Attempts
	if its[2].Status != types.StatusError || len(a) != 2 || !a[0].Retried || a[0].DelayS != 0.5 || a[1].Attempt != 2 || !a[1].Started.Equal(t0.Add(850*time.Millisecond)) {
		t.Errorf("failed iteration %+v attempts %+v (an attempt without its start begins at its end minus its duration)", its[2], a)
	}
	if loop.Status != types.StatusOK || !loop.Ended.Equal(t0.Add(900*time.Millisecond)) || len(loop.Attempts) != 0 {
		t.Errorf("loop run %+v", loop)
	}
	attempts, failed, retried := tl.Counts()
	if attempts != 7 || failed != 3 || retried != 2 {
		t.Errorf("Counts = %d, %d, %d; want 7, 3, 2", attempts, failed, retried)
	}
	if empty := BuildTimeline(nil); len(empty.Runs) != 0 || !empty.Start.IsZero() || empty.Finished {
		t.Errorf("no events: %+v", empty)
	}
}

func TestStatusOf(t *testing.T) {
	profile := &engine.LoopProfile{FirstUS: 1, LastUS: 2, Ended: []int{1, 1}}
	st := &engine.State{ExecutionID: "x1", Playbook: "p", Status: engine.ExecRunning, CreatedAt: tm(0), Version: 7,
		Steps: map[string]*engine.StepState{
			"a":  {Status: types.StatusOK, Run: 1, Runs: 1, DurationMS: 12, StartedAt: tm(1), FinishedAt: tm(13), Error: map[string]any{"message": "password=hunter2"}},
			"lp": {Status: types.StatusRunning, Run: 2, Runs: 1, Loop: &engine.LoopStatus{Total: 10, Mode: "parallel", MaxInFlight: 3}},
			"ld": {Status: types.StatusOK, Run: 1, Runs: 1, Loop: &engine.LoopStatus{Total: 2, Mode: "sequential", Profile: profile}},
		},
		Results:  map[string]any{"a": map[string]any{"api_token": "s3cr3t", "n": int64(1)}},
		Failures: []string{"step a: token=abc123def456"},
	}
	var asked []string
	count := func(key string) (int, error) { asked = append(asked, key); return 4, nil }
	v := StatusOf(st, redact.New(nil), count, t0.Add(1500*time.Millisecond))
	if v.DurationMS != 1500 || v.Version != 7 || v.ExecutionID != "x1" || v.Status != engine.ExecRunning {
		t.Errorf("status %+v", v)
	}
	if len(asked) != 1 || asked[0] != "lp.2" || v.Steps["lp"].Loop.Done != 4 || v.Steps["ld"].Loop.Done != 2 || v.Steps["ld"].Loop.Profile != profile {
		t.Errorf("loop progress: asked %v, lp %+v, ld %+v", asked, v.Steps["lp"].Loop, v.Steps["ld"].Loop)
	}
	if !v.Steps["a"].StartedAt.Equal(tm(1)) || !v.Steps["a"].FinishedAt.Equal(tm(13)) || v.Steps["a"].DurationMS != 12 {
		t.Errorf("step a %+v", v.Steps["a"])
	}
	b, _ := json.Marshal(v)
	for _, secret := range []string{"hunter2", "s3cr3t", "abc123def456"} {
		if json.Valid(b) && contains(string(b), secret) {
			t.Errorf("status leaks %q: %s", secret, b)
		}
	}
	// Ended: the duration runs to the end, and no count is asked.
	st.Status, st.FinishedAt = engine.ExecOK, tm(900)
	st.Steps["lp"].Status = types.StatusOK
	asked = nil
	v = StatusOf(st, redact.New(nil), count, t0.Add(time.Hour))
	if v.DurationMS != 900 || len(asked) != 0 || v.Steps["lp"].Loop.Done != 10 {
		t.Errorf("ended: duration %d, asked %v, lp %+v", v.DurationMS, asked, v.Steps["lp"].Loop)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestCostOf(t *testing.T) {
	st := &engine.State{ExecutionID: "x", Steps: map[string]*engine.StepState{
		"a": {Runs: 2}, "l": {Runs: 1, Loop: &engine.LoopStatus{Total: 8}},
	}}
	c := CostOf(st, map[string]float64{"firestore.read": 100000, "firestore.write": 100000})
	if c.Steps != 10 || c.Operations["firestore"]["read"] != 100000 || len(c.Lines) != 2 {
		t.Fatalf("cost %+v", c)
	}
	want := 0.03 + 0.09
	if d := c.USDTotal - want; d > 1e-12 || d < -1e-12 {
		t.Errorf("usd_total %v, want %v", c.USDTotal, want)
	}
	if d := c.USDPer1000Steps - want/10*1000; d > 1e-9 || d < -1e-9 {
		t.Errorf("usd_per_1000_steps %v", c.USDPer1000Steps)
	}
	// From the status document: the same figures.
	sv := StatusOf(st, nil, nil, time.Now())
	if cs := CostOfStatus(&sv, map[string]float64{"firestore.read": 100000, "firestore.write": 100000}); cs.Steps != c.Steps || cs.USDTotal != c.USDTotal || cs.ExecutionID != "x" {
		t.Errorf("CostOfStatus %+v, CostOf %+v", cs, c)
	}
	// An answer with operations only (no lines) still lists them, sorted.
	c2 := Cost{Operations: map[string]map[string]float64{"pubsub": {"publish": 2}, "firestore": {"write": 3, "read": 1}}}
	lines := c2.SortedLines()
	if len(lines) != 3 || lines[0].Kind != "read" || lines[1].Kind != "write" || lines[2].Service != "pubsub" {
		t.Errorf("SortedLines = %+v", lines)
	}
	if none := CostOf(&engine.State{}, nil); none.Steps != 0 || none.USDPer1000Steps != 0 || none.USDTotal != 0 {
		t.Errorf("empty cost %+v", none)
	}
}
