package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/types"
)

// Rerun (POST /executions/{id}/rerun; docs "Rerun"). A rerun is a new
// execution of a playbook that reuses the recorded ends of step runs of an
// ended execution, its source, instead of running them again: their
// results, ctx and step-scope patches, never their side effects.
//
// What "before" means. The source's event log is in causal order (the
// api's order: hybrid logical clocks, types.EventsInOrder). The rerun
// starts from one step run of the source (RerunPlan.Step, Run): the first
// run that failed ("failed"), or a step's first run ("from": a step). The
// cut is that run's end in the log — its step.failed, step.done, loop.done
// or step.canceled (the end of the log when it never ended). Every other
// step run that ended ok (step.done, or loop.done for a loop step) before
// the cut is reused: a run that ended before the start run ended cannot
// have read anything that run did (its result, ctx patches and arcs are
// applied at its end), so its recorded end still stands. So:
//
//   - a chain of steps before the start is reused whole;
//   - parallel branches: a branch that ended before the start run ended is
//     reused (it did not depend on it), one still running at that point
//     runs again, and so does everything the start run led to;
//   - loops: a loop step is reused whole (its result, with every
//     iteration's) or runs whole; iterations are never reused one by one;
//   - joins: a join that ended before the cut is reused (its branches all
//     ended before it); one that had not runs when its branches arrive;
//   - a step that ran several times (pagination arcs, a re-joined step):
//     each run is reused by its run number; "from: STEP" starts at the
//     step's first run, "failed" at the run that failed (earlier runs of
//     the same step are reused).
//
// What is refused (RerunError, with the reason): a source that has not
// ended; "failed" when no step run failed; a step that is not in the
// playbook or never ran in the source (nothing orders the other steps
// before it); a source whose SAGA rollback ran (compensation.started): the
// side effects of its completed steps were undone, so their results no
// longer stand — it can only be run again from the start.

// RerunFailed is the "from" of a rerun that starts from the source's first
// failed step run.
const RerunFailed = "failed"

// ReusedRun is the recorded end of one step run of a rerun's source
// (State.Reuse): what the run's step.done (or loop.done) carried.
type ReusedRun struct {
	Step string `json:"step"`
	Run  int    `json:"run"`
	// Args is the token the run was entered with (its step.scheduled
	// args); the rerun reuses the run only when it enters it with the
	// same token (compared as canonical JSON).
	Args map[string]any `json:"args,omitempty"`
	// Result, Ctx and Vars are the run's result and its ctx and step
	// scope patches.
	Result any            `json:"result"`
	Ctx    map[string]any `json:"ctx,omitempty"`
	Vars   map[string]any `json:"vars,omitempty"`
	// Loop is a loop step's shape (nil for a step without loop).
	Loop *LoopStatus `json:"loop,omitempty"`
}

// RerunPlan is what PlanRerun decides: where the rerun starts and the
// step runs it reuses.
type RerunPlan struct {
	// From is the start as asked: RerunFailed, a step name, or "".
	From string
	// Step and Run are the step run the rerun starts from ("" and 0 for
	// the start: nothing is reused).
	Step string
	Run  int
	// Reuse are the reused step runs, by LoopKey(step, run)
	// (State.Reuse).
	Reuse map[string]*ReusedRun
}

// Reused returns the reused step runs as "step#run", sorted by step and
// run (for answers and messages).
func (p *RerunPlan) Reused() []string {
	keys := make([]*ReusedRun, 0, len(p.Reuse))
	for _, r := range p.Reuse {
		keys = append(keys, r)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Step != keys[j].Step {
			return keys[i].Step < keys[j].Step
		}
		return keys[i].Run < keys[j].Run
	})
	out := make([]string, len(keys))
	for i, r := range keys {
		out[i] = r.Step + "#" + itoa(r.Run)
	}
	return out
}

// RerunError refuses a rerun that cannot be defined; Reason says why (the
// api answers it with 409 or 400).
type RerunError struct {
	// Conflict: the source is in a state that forbids it (still running,
	// rolled back), rather than a request naming something wrong.
	Conflict bool
	Reason   string
}

// Error implements error.
func (e *RerunError) Error() string { return "rerun: " + e.Reason }

func refuse(conflict bool, format string, args ...any) error {
	return &RerunError{Conflict: conflict, Reason: fmt.Sprintf(format, args...)}
}

// PlanRerun plans a rerun of the ended execution src (its final state and
// its event log evs in causal order) with the playbook pb that the rerun
// runs (the source's, or a fixed one), starting from from: "" or pb's entry
// step (nothing reused: "run again with the same input"), RerunFailed (the
// first step run that failed, in causal order) or a step's name (its first
// run). See the comment above for what is reused. Pure. Errors are
// *RerunError.
func PlanRerun(pb *dsl.Playbook, src *State, evs []types.Event, from string) (*RerunPlan, error) {
	plan := &RerunPlan{From: from, Reuse: map[string]*ReusedRun{}}
	if !src.Terminal() {
		return nil, refuse(true, "execution %s is %s: only an ended execution is rerun (cancel it first, or wait for its end)", src.ExecutionID, src.Status)
	}
	if from == "" || (from != RerunFailed && from == pb.EntryStep()) {
		return plan, nil
	}
	if missing := logGaps(src, evs); missing != "" {
		return nil, refuse(true, "the event log of execution %s is not complete yet (%s is not recorded): its last events are still being stored, try again in a few seconds", src.ExecutionID, missing)
	}
	cutStep, cutRun := "", 0
	if from == RerunFailed {
		for _, ev := range evs {
			if ev.EventType == types.EvStepFailed && ev.Step != "" {
				cutStep, cutRun = ev.Step, ev.StepRun
				break
			}
		}
		if cutStep == "" {
			return nil, refuse(false, "no step run of execution %s failed (it ended %s%s): rerun it from a step that ran (%s) or from the start", src.ExecutionID, src.Status, failuresOf(src), strings.Join(ranSteps(evs), ", "))
		}
		if pb.Step(cutStep) == nil {
			return nil, refuse(false, "the failed step %s is not in the playbook the rerun runs (steps: %s)", cutStep, strings.Join(stepNames(pb), ", "))
		}
	} else {
		if pb.Step(from) == nil {
			return nil, refuse(false, "no step %q in the playbook the rerun runs (steps: %s)", from, strings.Join(stepNames(pb), ", "))
		}
		cutStep = from
	}
	// The start run: the failed run, or the step's first run (its first
	// step.scheduled that is not a parked token, or a step.failed of a
	// run refused before it was scheduled).
	if cutRun == 0 {
		for _, ev := range evs {
			if ev.Step == cutStep && (ev.EventType == types.EvStepFailed || (ev.EventType == types.EvStepScheduled && !queued(ev))) {
				cutRun = ev.StepRun
				break
			}
		}
		if cutRun == 0 {
			return nil, refuse(false, "step %s never ran in execution %s, so nothing says which of its steps came before it: rerun from a step that ran (%s) or from the start", cutStep, src.ExecutionID, strings.Join(ranSteps(evs), ", "))
		}
	}
	cut := len(evs)
	for i, ev := range evs {
		if ev.Step == cutStep && ev.StepRun == cutRun && endsRun(ev) {
			cut = i
			break
		}
	}
	plan.Step, plan.Run = cutStep, cutRun
	for _, ev := range evs {
		if ev.EventType == types.EvCompensationStarted {
			return nil, refuse(true, "execution %s rolled back (a SAGA compensation ran: %s): the side effects of its completed steps were undone, so their results cannot be reused; run it again from the start", src.ExecutionID, strings.Join(src.Compensated, ", "))
		}
	}
	type runKey struct {
		step string
		run  int
	}
	// A run that failed anywhere in the log is never reused: the engine
	// fails a run after its step.done when its set or arcs cannot be
	// evaluated (a step.failed in the transition that applied it).
	failed := map[runKey]bool{{cutStep, cutRun}: true}
	for _, ev := range evs {
		if ev.EventType == types.EvStepFailed || ev.EventType == types.EvStepCanceled {
			failed[runKey{ev.Step, ev.StepRun}] = true
		}
	}
	args := map[runKey]map[string]any{}
	loops := map[runKey]*LoopStatus{}
	for _, ev := range evs[:cut] {
		k := runKey{ev.Step, ev.StepRun}
		if ev.Step == "" || pb.Step(ev.Step) == nil || failed[k] {
			continue
		}
		switch ev.EventType {
		case types.EvStepScheduled:
			if p, _ := history.Decode[history.StepScheduled](ev); !p.Queued {
				args[k] = p.Args
			}
		case types.EvLoopStarted:
			p, _ := history.Decode[history.LoopStarted](ev)
			ls := &LoopStatus{Mode: p.Mode, MaxInFlight: p.MaxInFlight}
			if p.Total != nil {
				ls.Total = *p.Total
			}
			loops[k] = ls
		case types.EvLoopDone:
			p, _ := history.Decode[history.LoopDone](ev)
			ls := loops[k]
			if ls == nil {
				ls = &LoopStatus{}
			}
			ls.Total = max(ls.Total, p.Total)
			plan.Reuse[LoopKey(ev.Step, ev.StepRun)] = &ReusedRun{Step: ev.Step, Run: ev.StepRun, Args: args[k], Result: p.Result, Ctx: p.Ctx, Loop: ls}
		case types.EvStepDone:
			p, _ := history.Decode[history.StepDone](ev)
			if p.Loop && p.ReusedFrom == nil {
				continue // the loop step's own step.done: its loop.done is the boundary
			}
			r := &ReusedRun{Step: ev.Step, Run: ev.StepRun, Args: args[k], Result: p.Result, Ctx: p.Ctx, Vars: p.Step}
			if p.Loop {
				// A loop the source itself reused (a rerun of a rerun).
				r.Loop = &LoopStatus{}
				if ss := src.Steps[ev.Step]; ss != nil && ss.Run == ev.StepRun && ss.Loop != nil {
					r.Loop = &LoopStatus{Total: ss.Loop.Total, Mode: ss.Loop.Mode, MaxInFlight: ss.Loop.MaxInFlight}
				}
			}
			plan.Reuse[LoopKey(ev.Step, ev.StepRun)] = r
		}
	}
	return plan, nil
}

// logGaps names what the log of an ended execution must hold and does
// not ("" when complete): its playbook.finished, and the end of the latest
// run of every step that ran (the state is written before the batch with
// a transition's events is stored, so a log read at once may lack them).
func logGaps(st *State, evs []types.Event) string {
	type runKey struct {
		step string
		run  int
	}
	ended := map[runKey]bool{}
	finished := false
	for _, ev := range evs {
		if ev.EventType == types.EvPlaybookFinished {
			finished = true
		}
		if endsRun(ev) {
			ended[runKey{ev.Step, ev.StepRun}] = true
		}
	}
	if !finished {
		return string(types.EvPlaybookFinished)
	}
	names := make([]string, 0, len(st.Steps))
	for n := range st.Steps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ss := st.Steps[n]
		if ss.Run > 0 && (ss.Status == types.StatusOK || ss.Status == types.StatusFailed) && !ended[runKey{n, ss.Run}] {
			return fmt.Sprintf("the end of step %s run %d", n, ss.Run)
		}
	}
	return ""
}

// endsRun reports whether ev ends its step run: step.failed,
// step.canceled, loop.done, or a step.done that is not a loop step's own
// (which follows its loop.done) unless a rerun reused the loop.
func endsRun(ev types.Event) bool {
	switch ev.EventType {
	case types.EvStepFailed, types.EvStepCanceled, types.EvLoopDone:
		return true
	case types.EvStepDone:
		p, _ := history.Decode[history.StepDone](ev)
		return !p.Loop || p.ReusedFrom != nil
	}
	return false
}

// queued reports whether a step.scheduled event parked a token (its run
// starts later, with its own step.scheduled).
func queued(ev types.Event) bool {
	p, _ := history.Decode[history.StepScheduled](ev)
	return p.Queued
}

// ranSteps lists the steps with a step.scheduled in evs, in order.
func ranSteps(evs []types.Event) []string {
	var out []string
	seen := map[string]bool{}
	for _, ev := range evs {
		if ev.EventType == types.EvStepScheduled && ev.Step != "" && !seen[ev.Step] {
			seen[ev.Step] = true
			out = append(out, ev.Step)
		}
	}
	if len(out) == 0 {
		return []string{"none did"}
	}
	return out
}

func stepNames(pb *dsl.Playbook) []string {
	out := make([]string, 0, len(pb.Workflow))
	for _, s := range pb.Workflow {
		out = append(out, s.Name)
	}
	return out
}

func failuresOf(st *State) string {
	if len(st.Failures) == 0 {
		return ""
	}
	return ": " + strings.Join(st.Failures, "; ")
}

// reusable takes the plan's entry for run of step name out of the state
// (State.Reuse) and returns it when the run is entered with the token it
// was entered with in the source (nil otherwise: the run runs).
func (t *transition) reusable(name string, run int, args map[string]any) *ReusedRun {
	if len(t.st.Reuse) == 0 {
		return nil
	}
	key := LoopKey(name, run)
	r := t.st.Reuse[key]
	if r == nil {
		return nil
	}
	delete(t.st.Reuse, key)
	if len(t.st.Reuse) == 0 {
		t.st.Reuse = nil
	}
	if !sameJSON(r.Args, args) {
		return nil
	}
	return r
}

// sameJSON reports whether a and b encode to the same JSON (maps encode
// with sorted keys; 2 and 2.0 are the same number). Empty and nil maps are
// the same token.
func sameJSON(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// reuse completes a scheduled step run with the recorded end r: the
// events a run that completes at once emits (step.started, step.done with
// reused_from), then the step's end as for any step.done.
func (t *transition) reuse(step *dsl.Step, ss *StepState, r *ReusedRun) error {
	ss.Status = types.StatusRunning
	ss.ReusedFrom = t.st.RerunOf
	loop := step.Loop != nil
	if loop {
		ls := LoopStatus{}
		if r.Loop != nil {
			ls = LoopStatus{Total: r.Loop.Total, Mode: r.Loop.Mode, MaxInFlight: r.Loop.MaxInFlight}
		}
		ss.Loop = &ls
	}
	t.event(types.EvStepStarted, step.Name, ss.Run, history.StepStarted{Loop: loop, Reused: true})
	done := t.event(types.EvStepDone, step.Name, ss.Run, history.StepDone{Result: r.Result, Ctx: r.Ctx, Step: r.Vars, Loop: loop,
		ReusedFrom: &history.ReusedFrom{ExecutionID: t.st.RerunOf, StepRun: r.Run}})
	done.Status = types.StatusOK
	return t.finishStep(step, ss, true, r.Result, boundaryOf(*done))
}
