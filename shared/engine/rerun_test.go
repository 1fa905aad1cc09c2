package engine

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/types"
)

// end is how a simulated unit ends: a result (with ctx and step patches)
// or a failure.
type end struct {
	result any
	ctx    map[string]any
	vars   map[string]any
	fail   string
}

// simUnit is a step run (or a loop run) waiting for its end.
type simUnit struct {
	step string
	run  int
	loop *LoopPlan
}

// sim runs one execution through the pure engine: units end as outcome
// says, in the order the engine asked for them (FIFO) unless order lists
// step names to end first. log is the execution's event log in causal
// order (each boundary event before the transition's own events, as the
// control plane publishes them); ran lists the units that were asked for
// (commands and loop plans), "step#run".
type sim struct {
	t       *testing.T
	e       *Engine
	st      *State
	log     []types.Event
	queue   []simUnit
	ran     []string
	order   []string
	outcome func(st *State, step string, run int) end
}

func (s *sim) take(out Output) {
	s.log = append(s.log, out.Events...)
	for _, c := range out.Commands {
		if c.Kind == types.CmdRunStep {
			s.queue = append(s.queue, simUnit{step: c.Step, run: c.StepRun})
			s.ran = append(s.ran, c.Step+"#"+itoa(c.StepRun))
		}
	}
	for i := range out.Loops {
		p := out.Loops[i]
		s.queue = append(s.queue, simUnit{step: p.Step, run: p.Run, loop: &p})
		s.ran = append(s.ran, p.Step+"#"+itoa(p.Run))
	}
}

func (s *sim) start() {
	out, err := s.e.Start(s.st, t0)
	if err != nil {
		s.t.Fatal(err)
	}
	s.take(out)
}

// drive ends units until the execution ends.
func (s *sim) drive() {
	for n := 0; len(s.queue) > 0 && !s.st.Terminal(); n++ {
		if n > 1000 {
			s.t.Fatal("the simulation does not end")
		}
		i := 0
		for _, name := range s.order {
			if j := slices.IndexFunc(s.queue, func(u simUnit) bool { return u.step == name }); j >= 0 {
				i = j
				break
			}
		}
		u := s.queue[i]
		s.queue = slices.Delete(s.queue, i, i+1)
		o := s.outcome(s.st, u.step, u.run)
		var ev types.Event
		switch {
		case o.fail != "":
			ev = types.NewEvent(types.EvStepFailed, s.st.ExecutionID, "execute", t0, u.step, itoa(u.run))
			ev.Payload = history.Encode(history.StepFailed{Error: map[string]any{"kind": "python", "message": o.fail}})
			ev.Status = types.StatusFailed
		case u.loop != nil:
			ev = LoopDoneEvent(s.st.ExecutionID, *u.loop, o.result, 0, t0)
			if o.ctx != nil {
				ev.Payload = history.Encode(history.LoopDone{Result: o.result, Total: u.loop.Total, Ctx: o.ctx})
			}
		default:
			ev = types.NewEvent(types.EvStepDone, s.st.ExecutionID, "execute", t0, u.step, itoa(u.run))
			ev.Payload = history.Encode(history.StepDone{Result: o.result, Ctx: o.ctx, Step: o.vars})
			ev.Status = types.StatusOK
		}
		ev.Step, ev.StepRun = u.step, u.run
		s.log = append(s.log, ev)
		out, _, err := s.e.Apply(s.st, ev, t0)
		if err != nil {
			s.t.Fatal(err)
		}
		s.take(out)
	}
}

func runSim(t *testing.T, e *Engine, id string, wl map[string]any, outcome func(*State, string, int) end, order ...string) *sim {
	t.Helper()
	s := &sim{t: t, e: e, st: NewState(id, "", e.PB, wl, t0), outcome: outcome, order: order}
	s.start()
	s.drive()
	return s
}

// rerunSim starts a rerun of src planned from from, with workload wl, and
// drives it with outcome.
func rerunSim(t *testing.T, e *Engine, src *sim, from string, wl map[string]any, outcome func(*State, string, int) end) (*sim, *RerunPlan) {
	t.Helper()
	plan, err := PlanRerun(e.PB, src.st, src.log, from)
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{t: t, e: e, st: NewState("rerun", "", e.PB, wl, t0), outcome: outcome}
	s.st.RerunOf, s.st.RerunFrom, s.st.Reuse = src.st.ExecutionID, from, maps.Clone(plan.Reuse)
	s.start()
	s.drive()
	return s, plan
}

// reusedIn lists the step runs a log completed with reused_from, and
// checks that each names the source's run.
func reusedIn(t *testing.T, log []types.Event, source string) []string {
	t.Helper()
	var out []string
	for _, ev := range log {
		if ev.EventType != types.EvStepDone {
			continue
		}
		p, err := history.Decode[history.StepDone](ev)
		if err != nil {
			t.Fatal(err)
		}
		if p.ReusedFrom == nil {
			continue
		}
		if p.ReusedFrom.ExecutionID != source || p.ReusedFrom.StepRun != ev.StepRun || ev.Status != types.StatusOK {
			t.Errorf("reused step.done of %s#%d: reused_from %+v, status %s", ev.Step, ev.StepRun, *p.ReusedFrom, ev.Status)
		}
		out = append(out, ev.Step+"#"+itoa(ev.StepRun))
	}
	return out
}

const rerunChain = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: rerun_chain}
workload: {fix: false, v: 1}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: a, args: {v: "{{ workload.v }}"}}]}
  - step: a
    tool: {kind: python, code: "result = 1"}
    next: {arcs: [{step: b}]}
  - step: b
    tool: {kind: python, code: "result = 2"}
    next: {arcs: [{step: c, args: {from_a: "{{ a.n }}"}}]}
  - step: c
    tool: {kind: python, code: "result = 3"}
`

// chainOutcome: a returns {"n": 7} and patches ctx; b fails unless the
// workload says fix.
func chainOutcome(st *State, step string, run int) end {
	{
		switch step {
		case "a":
			return end{result: map[string]any{"n": int64(7)}, ctx: map[string]any{"seen_a": true}, vars: map[string]any{"k": "v"}}
		case "b":
			if st.Workload["fix"] != true {
				return end{fail: "b is broken"}
			}
		}
		return end{result: step + "-ok"}
	}
}

// TestRerunFromFailedReusesWhatEndedBefore: a chain start → a → b → c
// whose b failed, rerun from "failed" with a workload that fixes b: start
// and a are not run again (no unit is asked for them), their recorded
// ends stand (result, ctx, step scope), b and c run, the rerun ends ok.
func TestRerunFromFailedReusesWhatEndedBefore(t *testing.T) {
	e := load(t, rerunChain)
	src := runSim(t, e, "source", map[string]any{"fix": false, "v": int64(1)}, chainOutcome)
	if src.st.Status != ExecFailed {
		t.Fatalf("source %s, want failed", src.st.Status)
	}
	if strings.Join(src.ran, ",") != "start#1,a#1,b#1" {
		t.Fatalf("source ran %v", src.ran)
	}
	plan, err := PlanRerun(e.PB, src.st, src.log, RerunFailed)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Step != "b" || plan.Run != 1 || strings.Join(plan.Reused(), ",") != "a#1,start#1" {
		t.Fatalf("plan from %s#%d reusing %v", plan.Step, plan.Run, plan.Reused())
	}
	re := &sim{t: t, e: e, st: NewState("rerun", "", e.PB, map[string]any{"fix": true, "v": int64(1)}, t0)}
	re.outcome = chainOutcome
	re.st.RerunOf, re.st.RerunFrom, re.st.Reuse = "source", RerunFailed, plan.Reuse
	re.start()
	// Start's transition reuses start and a at once: one unit, b.
	if strings.Join(re.ran, ",") != "b#1" {
		t.Fatalf("the rerun's start asked for %v, want b#1 only", re.ran)
	}
	if re.st.Reuse != nil {
		t.Errorf("plan entries left after use: %v", re.st.Reuse)
	}
	if re.st.Ctx["seen_a"] != true || !reflect.DeepEqual(re.st.Results["a"], map[string]any{"n": int64(7)}) || re.st.Steps["a"].Vars["k"] != "v" {
		t.Errorf("a's recorded end is not the rerun's: ctx %v results %v vars %v", re.st.Ctx, re.st.Results, re.st.Steps["a"].Vars)
	}
	if re.st.Steps["a"].ReusedFrom != "source" || re.st.Steps["start"].ReusedFrom != "source" || re.st.Steps["b"].ReusedFrom != "" {
		t.Errorf("steps' reused_from: start %q a %q b %q", re.st.Steps["start"].ReusedFrom, re.st.Steps["a"].ReusedFrom, re.st.Steps["b"].ReusedFrom)
	}
	re.drive()
	if re.st.Status != ExecOK || strings.Join(re.ran, ",") != "b#1,c#1" {
		t.Fatalf("rerun %s, ran %v; want ok after b#1,c#1", re.st.Status, re.ran)
	}
	if got := reusedIn(t, re.log, "source"); strings.Join(got, ",") != "start#1,a#1" {
		t.Errorf("reused step.done events %v", got)
	}
	// c's arc args read a's reused result.
	for _, ev := range re.log {
		if ev.EventType == types.EvStepScheduled && ev.Step == "c" {
			if p, _ := history.Decode[history.StepScheduled](ev); p.Args["from_a"] != int64(7) && p.Args["from_a"] != 7 {
				t.Errorf("c entered with %v, want from_a 7 (a's reused result)", p.Args)
			}
		}
	}
	// Every event id of the rerun is unique.
	ids := map[string]bool{}
	for _, ev := range re.log {
		if ids[ev.EventID] {
			t.Errorf("duplicate event id %s (%s %s)", ev.EventID, ev.EventType, ev.Step)
		}
		ids[ev.EventID] = true
	}
}

// TestRerunLogFolds: the rerun's log folds to its state through the
// engine of an execution that is not a rerun (no plan): Start, then each
// boundary event of the log applied in order. The reused runs are
// ordinary step.done events.
func TestRerunLogFolds(t *testing.T) {
	e := load(t, rerunChain)
	src := runSim(t, e, "source", map[string]any{"fix": false, "v": int64(1)}, chainOutcome)
	re := &sim{t: t, e: e, st: NewState("rerun", "", e.PB, map[string]any{"fix": true, "v": int64(1)}, t0)}
	re.outcome = chainOutcome
	plan, err := PlanRerun(e.PB, src.st, src.log, RerunFailed)
	if err != nil {
		t.Fatal(err)
	}
	re.st.RerunOf, re.st.Reuse = "source", plan.Reuse
	re.start()
	re.drive()

	fold := NewState("rerun", "", e.PB, map[string]any{"fix": true, "v": int64(1)}, t0)
	if _, err := e.Start(fold, t0); err != nil {
		t.Fatal(err)
	}
	for _, ev := range re.log {
		if ev.EventType.IsBoundary() {
			if _, _, err := e.Apply(fold, ev, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fold.Status != re.st.Status || !jsonEqual(fold.Results, re.st.Results) || !jsonEqual(fold.Ctx, re.st.Ctx) {
		t.Fatalf("folded state %s %v %v, live %s %v %v", fold.Status, fold.Results, fold.Ctx, re.st.Status, re.st.Results, re.st.Ctx)
	}
	for name, ss := range re.st.Steps {
		if f := fold.Steps[name]; f == nil || f.Status != ss.Status || f.Run != ss.Run || !jsonEqual(f.Vars, ss.Vars) {
			t.Errorf("step %s folded %+v, live %+v", name, f, ss)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestRerunFromStep: "from: STEP" starts at the step's first run; the
// start (or the entry step) reuses nothing.
func TestRerunFromStep(t *testing.T) {
	e := load(t, rerunChain)
	src := runSim(t, e, "source", map[string]any{"fix": false, "v": int64(1)}, chainOutcome)
	for _, c := range []struct{ from, reused string }{
		{"a", "start#1"}, {"b", "a#1,start#1"}, {"start", ""}, {"", ""},
	} {
		plan, err := PlanRerun(e.PB, src.st, src.log, c.from)
		if err != nil {
			t.Fatalf("from %q: %v", c.from, err)
		}
		if got := strings.Join(plan.Reused(), ","); got != c.reused {
			t.Errorf("from %q reuses %q, want %q", c.from, got, c.reused)
		}
	}
	// "Run again with the same input": nothing reused, every unit runs.
	re, _ := rerunSim(t, e, src, "", src.st.Workload, chainOutcome)
	if strings.Join(re.ran, ",") != "start#1,a#1,b#1" || len(reusedIn(t, re.log, "source")) != 0 {
		t.Errorf("a rerun from the start ran %v", re.ran)
	}
}

// TestRerunRunsAStepEnteredWithAnotherToken: a reused run must be entered
// with the token it had; a workload that changes a's arc args makes a run
// again (start is still reused).
func TestRerunRunsAStepEnteredWithAnotherToken(t *testing.T) {
	e := load(t, rerunChain)
	src := runSim(t, e, "source", map[string]any{"fix": false, "v": int64(1)}, chainOutcome)
	var re *sim
	re, _ = rerunSim(t, e, src, RerunFailed, map[string]any{"fix": true, "v": int64(2)}, chainOutcome)
	if re == nil {
		t.Fatal("no rerun")
	}
	if strings.Join(re.ran, ",") != "a#1,b#1,c#1" {
		t.Errorf("ran %v, want a (entered with v=2, not 1), b, c", re.ran)
	}
	if got := reusedIn(t, re.log, "source"); strings.Join(got, ",") != "start#1" {
		t.Errorf("reused %v", got)
	}
}

const rerunPages = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: rerun_pages}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: page, args: {n: 1}}]}
  - step: page
    tool: {kind: python, code: "result = 1"}
    next:
      arcs:
        - step: page
          when: "{{ input.n < 3 }}"
          args: {n: "{{ input.n + 1 }}"}
`

// TestRerunReusesEarlierRunsOfTheFailedStep: pagination (a step that runs
// again through its own arc) failing on its third page: the rerun reuses
// runs 1 and 2 and runs the third page with its token.
func TestRerunReusesEarlierRunsOfTheFailedStep(t *testing.T) {
	e := load(t, rerunPages)
	broken := true
	out := func(_ *State, step string, run int) end {
		if step == "page" && run == 3 && broken {
			return end{fail: "page 3 timed out"}
		}
		return end{result: map[string]any{"page": int64(run)}}
	}
	src := runSim(t, e, "source", nil, out)
	if src.st.Status != ExecFailed {
		t.Fatalf("source %s", src.st.Status)
	}
	broken = false
	re, plan := rerunSim(t, e, src, RerunFailed, nil, out)
	if plan.Step != "page" || plan.Run != 3 {
		t.Fatalf("plan starts at %s#%d", plan.Step, plan.Run)
	}
	if re.st.Status != ExecOK || strings.Join(re.ran, ",") != "page#3" {
		t.Fatalf("rerun %s ran %v, want ok after page#3 alone", re.st.Status, re.ran)
	}
	for _, ev := range re.log {
		if ev.EventType == types.EvStepScheduled && ev.Step == "page" && ev.StepRun == 3 {
			if p, _ := history.Decode[history.StepScheduled](ev); !jsonEqual(p.Args, map[string]any{"n": 3}) {
				t.Errorf("page#3 entered with %v", p.Args)
			}
		}
	}
	if got := reusedIn(t, re.log, "source"); strings.Join(got, ",") != "start#1,page#1,page#2" {
		t.Errorf("reused %v", got)
	}
}

const rerunLoop = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: rerun_loop}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: crunch}]}
  - step: crunch
    loop:
      in: [1, 2, 3]
      iterator: n
      spec: {mode: parallel, max_in_flight: 2}
    tool: {kind: python, code: "result = n"}
    next: {arcs: [{step: check}]}
  - step: check
    tool: {kind: python, code: "result = 1"}
`

// TestRerunReusesALoopWhole: a loop step that ended before the failure is
// reused whole: no loop plan, no iteration, its result and shape stand.
func TestRerunReusesALoopWhole(t *testing.T) {
	e := load(t, rerunLoop)
	broken := true
	loopResult := map[string]any{"results": []any{int64(1), int64(2), int64(3)}}
	out := func(_ *State, step string, run int) end {
		switch {
		case step == "crunch":
			return end{result: loopResult, ctx: map[string]any{"crunched": true}}
		case step == "check" && broken:
			return end{fail: "check failed"}
		}
		return end{result: "ok"}
	}
	src := runSim(t, e, "source", nil, out)
	broken = false
	re, _ := rerunSim(t, e, src, RerunFailed, nil, out)
	if re.st.Status != ExecOK || strings.Join(re.ran, ",") != "check#1" {
		t.Fatalf("rerun %s ran %v, want ok after check#1 alone", re.st.Status, re.ran)
	}
	ss := re.st.Steps["crunch"]
	if ss.Loop == nil || ss.Loop.Total != 3 || ss.Loop.Mode != "parallel" || ss.Loop.MaxInFlight != 2 || ss.ReusedFrom != "source" {
		t.Errorf("reused loop step %+v (loop %+v)", ss, ss.Loop)
	}
	if !jsonEqual(re.st.Results["crunch"], loopResult) || re.st.Ctx["crunched"] != true {
		t.Errorf("loop result %v ctx %v", re.st.Results["crunch"], re.st.Ctx)
	}
	for _, ev := range re.log {
		if ev.EventType == types.EvLoopStarted || ev.EventType == types.EvLoopIterationStarted {
			t.Errorf("the reused loop started again: %s", ev.EventType)
		}
	}
	// A rerun of the rerun reuses the loop the rerun reused.
	re.st.Status = ExecFailed // as if check had failed in it
	plan, err := PlanRerun(e.PB, re.st, re.log, "check")
	if err != nil {
		t.Fatal(err)
	}
	if r := plan.Reuse[LoopKey("crunch", 1)]; r == nil || r.Loop == nil || r.Loop.Total != 3 || !jsonEqual(r.Result, loopResult) {
		t.Errorf("the second rerun's plan for crunch: %+v", r)
	}
}

const rerunBranches = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: rerun_branches}
executor: {spec: {policy: {on_step_fail: continue}}}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs: [{step: x}, {step: y}, {step: z}]
  - step: x
    tool: {kind: python, code: "result = 1"}
  - step: y
    tool: {kind: python, code: "result = 1"}
  - step: z
    tool: {kind: python, code: "result = 1"}
`

// TestRerunBranches: parallel branches x, y, z; y fails after x ended and
// before z did. From "failed": x (ended before the failure) is reused, z
// (still running then) runs again, and so does y.
func TestRerunBranches(t *testing.T) {
	e := load(t, rerunBranches)
	broken := true
	out := func(_ *State, step string, run int) end {
		if step == "y" && broken {
			return end{fail: "y failed"}
		}
		return end{result: step}
	}
	src := runSim(t, e, "source", nil, out, "x", "y", "z")
	// (on_step_fail: continue keeps z running after y failed.)
	if src.st.Steps["y"].Status != types.StatusFailed || src.st.Steps["z"].Status != types.StatusOK {
		t.Fatalf("source: y %s, z %s", src.st.Steps["y"].Status, src.st.Steps["z"].Status)
	}
	broken = false
	re, plan := rerunSim(t, e, src, RerunFailed, nil, out)
	if got := strings.Join(plan.Reused(), ","); got != "start#1,x#1" {
		t.Fatalf("plan reuses %s, want start#1,x#1", got)
	}
	slices.Sort(re.ran)
	if re.st.Status != ExecOK || strings.Join(re.ran, ",") != "y#1,z#1" {
		t.Errorf("rerun %s ran %v", re.st.Status, re.ran)
	}
}

// TestRerunRefusals: what cannot be defined is refused with its reason.
func TestRerunRefusals(t *testing.T) {
	e := load(t, rerunChain)
	src := runSim(t, e, "source", map[string]any{"fix": false, "v": int64(1)}, chainOutcome)
	okSrc := runSim(t, e, "fine", map[string]any{"fix": true, "v": int64(1)}, chainOutcome)
	running := NewState("busy", "", e.PB, nil, t0)
	if _, err := e.Start(running, t0); err != nil {
		t.Fatal(err)
	}
	compensated := *src.st
	rollback := append(append([]types.Event(nil), src.log...), types.NewEvent(types.EvCompensationStarted, "source", "route", t0, "x"))
	for _, c := range []struct {
		name     string
		st       *State
		log      []types.Event
		from     string
		conflict bool
		want     string
	}{
		{"running", running, nil, RerunFailed, true, "only an ended execution is rerun"},
		{"nothing failed", okSrc.st, okSrc.log, RerunFailed, false, "no step run of execution fine failed"},
		{"unknown step", src.st, src.log, "nope", false, `no step "nope" in the playbook`},
		{"never ran", src.st, src.log, "c", false, "step c never ran in execution source"},
		{"rolled back", &compensated, rollback, "b", true, "rolled back"},
		{"log not complete", src.st, src.log[:len(src.log)-1], RerunFailed, true, "playbook.finished is not recorded"},
		{"a run's end missing", src.st, slices.DeleteFunc(slices.Clone(src.log), func(ev types.Event) bool { return ev.EventType == types.EvStepDone && ev.Step == "a" }), "b", true, "the end of step a run 1 is not recorded"},
	} {
		_, err := PlanRerun(e.PB, c.st, c.log, c.from)
		var re *RerunError
		if !errors.As(err, &re) || re.Conflict != c.conflict || !strings.Contains(re.Reason, c.want) {
			t.Errorf("%s: %v, want a RerunError (conflict %v) saying %q", c.name, err, c.conflict, c.want)
		}
	}
	// A rolled-back source may still run again from the start.
	if _, err := PlanRerun(e.PB, &compensated, rollback, ""); err != nil {
		t.Errorf("from the start: %v", err)
	}
}
