package console

import (
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/types"
)

// loopRun is a loop run of n iterations, width at a time, each taking
// 10 ms with one attempt (every seventh failed once and was retried).
func loopRun(n, width int) (*inspect.Timeline, time.Time, time.Time) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &inspect.Run{Step: "l", Run: 1, Status: types.StatusOK, Started: t0, Loop: &inspect.LoopRun{Total: n}}
	for i := range n {
		a := t0.Add(time.Duration(i/width) * 11 * time.Millisecond)
		b := a.Add(10 * time.Millisecond)
		it := &inspect.Iteration{Index: i, Status: types.StatusOK, Started: a, Ended: b}
		if i%7 == 0 {
			it.Attempts = append(it.Attempts, inspect.Attempt{Task: "t", Attempt: 1, Status: types.StatusError, Started: a, Ended: a.Add(2 * time.Millisecond), Retried: true, DelayS: 0.005})
			it.Attempts = append(it.Attempts, inspect.Attempt{Task: "t", Attempt: 2, Status: types.StatusOK, Started: a.Add(8 * time.Millisecond), Ended: b})
		} else {
			it.Attempts = append(it.Attempts, inspect.Attempt{Task: "t", Attempt: 1, Status: types.StatusOK, Started: a, Ended: b})
		}
		r.Loop.Iterations = append(r.Loop.Iterations, it)
	}
	r.Ended = t0.Add(time.Duration((n+width-1)/width) * 11 * time.Millisecond)
	return &inspect.Timeline{Start: t0, End: r.Ended, Runs: []*inspect.Run{r}}, t0, r.Ended
}

func count(g *ganttView, kind string, retried bool) int {
	n := 0
	for _, b := range g.Bars {
		if b.Kind == kind && (!retried || b.Retried) {
			n++
		}
	}
	return n
}

func TestGanttLanes(t *testing.T) {
	tl, t0, t1 := loopRun(100, 4)
	g := buildGantt(tl, t0, t1, nil)
	if n := count(g, "iteration", false); n != 100 {
		t.Fatalf("%d iteration bars, want 100", n)
	}
	lanes := 0
	for _, r := range g.Rows {
		if strings.HasPrefix(r.Label, "lane ") {
			lanes++
		}
	}
	if lanes != 4 {
		t.Errorf("%d lanes for a loop 4 wide", lanes)
	}
	if g.Iterations != 100 || g.Attempts != 115 || g.Failed != 15 || g.Retried != 15 || count(g, "attempt", true) != 15 || len(g.Gaps) != 15 {
		t.Errorf("figures: %d iterations, %d attempts, %d failed, %d retried, %d gaps", g.Iterations, g.Attempts, g.Failed, g.Retried, len(g.Gaps))
	}
	for _, gp := range g.Gaps {
		if gp.X2 <= gp.X1 {
			t.Errorf("a backoff gap runs backwards: %+v", gp)
		}
	}
	for _, b := range g.Bars {
		if b.X < ganttLabelW-0.01 || b.X+b.W > ganttW-ganttRight+1.6 || b.W <= 0 {
			t.Errorf("bar %+v outside the time axis", b)
		}
	}
	if !strings.Contains(g.Summary, "100 iterations in 4 lanes") || !strings.Contains(g.Summary, "15 retried") {
		t.Errorf("summary %q", g.Summary)
	}
}

// Past MaxLaneIterations, or wider than MaxLanes, iterations become a
// density strip: the drawing's size no longer grows with them.
func TestGanttDensity(t *testing.T) {
	for _, c := range []struct{ n, width int }{{MaxLaneIterations + 1, 8}, {500, MaxLanes + 10}} {
		tl, t0, t1 := loopRun(c.n, c.width)
		g := buildGantt(tl, t0, t1, nil)
		if count(g, "iteration", false) != 0 || count(g, "attempt", false) != 0 {
			t.Errorf("%d×%d: iterations drawn one by one", c.n, c.width)
		}
		total := 0
		if d := count(g, "density", false); d == 0 || d > densityBuckets {
			t.Errorf("%d×%d: %d density bars", c.n, c.width, d)
		}
		total = g.Iterations
		if total != c.n || g.Attempts != c.n+(c.n+6)/7 {
			t.Errorf("%d×%d: counted %d iterations, %d attempts", c.n, c.width, total, g.Attempts)
		}
	}
	// A loop known only by its profile (summary mode).
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ended := make([]int, engine.ProfileBuckets)
	failed := make([]int, engine.ProfileBuckets)
	ended[0], ended[59], failed[59] = 70, 30, 2
	prof := &engine.LoopProfile{FirstUS: t0.UnixMicro(), LastUS: t0.Add(time.Minute).UnixMicro(), Ended: ended, Failed: failed}
	tl := &inspect.Timeline{Runs: []*inspect.Run{{Step: "l", Run: 1, Status: types.StatusOK, Started: t0, Ended: t0.Add(time.Minute), Loop: &inspect.LoopRun{Total: 100}}}}
	g := buildGantt(tl, t0, t0.Add(time.Minute), map[string]*engine.LoopProfile{"l": prof})
	if count(g, "density", false) != 3 || g.Iterations != 100 {
		t.Errorf("profile strip: %d bars (2 buckets + 1 failed overlay), %d iterations", count(g, "density", false), g.Iterations)
	}
}

func TestGraph(t *testing.T) {
	pb, err := dsl.Load([]byte(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: g}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs:
        - step: a
        - step: b
          when: "{{ workload.x > 1 }}"
  - step: a
    loop: {in: [1, 2], iterator: i}
    tool: {kind: noop}
    next:
      arcs: [{step: join}]
  - step: b
    tool: {kind: noop}
    next:
      arcs:
        - step: join
        - step: b
          on: step.failed
  - step: join
    tool: {kind: noop}
`), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := &inspect.Status{Steps: map[string]inspect.Step{"start": {Status: types.StatusOK, Run: 1, Runs: 1}, "a": {Status: types.StatusRunning, Run: 1, Loop: &inspect.Loop{Total: 2, Done: 1}}}}
	stats := map[string]*inspect.StepStats{"start": {Attempts: 3, FailedAttempts: 2}}
	g := buildGraph(pb, st, stats, map[[2]string]int{{"start", "a"}: 1})
	if len(g.Nodes) != 4 || len(g.Edges) != 5 || len(g.Arcs) != 5 {
		t.Fatalf("%d nodes, %d edges, %d arcs", len(g.Nodes), len(g.Edges), len(g.Arcs))
	}
	nodes := map[string]graphNode{}
	for _, n := range g.Nodes {
		nodes[n.Name] = n
		if n.X < 0 || n.Y < 0 || n.X+n.W > g.Width || n.Y+n.H > g.Height {
			t.Errorf("node %s outside the drawing", n.Name)
		}
	}
	has := func(n graphNode, mark string) bool { return contains(n.Marks, mark) }
	if !has(nodes["start"], "entry") || !has(nodes["start"], "fan-out") || !has(nodes["a"], "loop") || !has(nodes["join"], "join") {
		t.Errorf("marks: %+v", g.Nodes)
	}
	if nodes["start"].Status != "ok" || nodes["a"].Status != "running" || nodes["b"].Status != "" || nodes["b"].Lines[len(nodes["b"].Lines)-1] != "not reached" {
		t.Errorf("statuses: %+v", g.Nodes)
	}
	if !strings.Contains(strings.Join(nodes["start"].Lines, "|"), "3 attempts · 2 failed") || !strings.Contains(strings.Join(nodes["a"].Lines, "|"), "1/2") {
		t.Errorf("figures: %v %v", nodes["start"].Lines, nodes["a"].Lines)
	}
	classes := map[string]string{}
	for _, e := range g.Edges {
		classes[e.From+">"+e.To] = e.Class
		if e.D == "" {
			t.Errorf("edge %s → %s has no path", e.From, e.To)
		}
	}
	if classes["start>a"] != "taken" || !strings.HasPrefix(classes["start>b"], "idle") || !strings.Contains(classes["b>b"], "fail") {
		t.Errorf("edge classes %v", classes)
	}
	if nodes["join"].Y <= nodes["a"].Y || nodes["a"].Y <= nodes["start"].Y {
		t.Error("the steps are not drawn top to bottom")
	}
}
