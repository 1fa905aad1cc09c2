package inspect

import "github.com/noetl/gcpengine/shared/types"

// LogComplete reports whether evs hold the whole event log of the ended
// execution st, so a reader that follows the log (the console's pages,
// the CLI's summary) may stop. The state is written before the batches
// carrying the last events land, and batches are projected in any order
// (a delivery retried after an error lands after later ones), so the end
// being in the log is not enough. The log is complete when:
//   - it holds playbook.finished;
//   - every step run and loop iteration that started has its end
//     (step.done|failed|canceled, loop.iteration.done|failed|canceled):
//     every started unit ends in the log (README "The soak");
//   - each step has as many step ends as st counts runs;
//   - each loop whose latest run ended ok has an iteration end for each
//     of its Total iterations (a failed or canceled loop need not have
//     started them all; a rerun's reused loop ran in another execution).
//
// A unit's task events are published no later than its end, so a log
// holding every end holds, but for a late projection of an earlier
// batch, every attempt. Duplicate event ids count once. st nil checks
// the log alone.
func LogComplete(st *Status, evs []types.Event) bool {
	type unit struct {
		step string
		run  int
		it   int
	}
	seen := make(map[string]bool, len(evs))
	finished := false
	started, ended := map[unit]bool{}, map[unit]bool{}
	stepEnds := map[string]int{}
	for _, e := range evs {
		if e.EventID != "" {
			if seen[e.EventID] {
				continue
			}
			seen[e.EventID] = true
		}
		// A step run's events key on the run (a loop's step.failed
		// carries the iteration that failed it); an iteration's on it.
		run := unit{e.Step, e.StepRun, -1}
		it := run
		if e.Iteration != nil {
			it.it = *e.Iteration
		}
		switch e.EventType {
		case types.EvPlaybookFinished:
			finished = true
		case types.EvStepStarted:
			started[run] = true
		case types.EvLoopIterationStarted:
			started[it] = true
		case types.EvStepDone, types.EvStepFailed, types.EvStepCanceled:
			ended[run] = true
			stepEnds[e.Step]++
		case types.EvLoopIterationDone, types.EvLoopIterationFailed, types.EvLoopIterationCanceled:
			ended[it] = true
		}
	}
	if !finished {
		return false
	}
	for k := range started {
		if !ended[k] {
			return false
		}
	}
	if st == nil {
		return true
	}
	for name, s := range st.Steps {
		if stepEnds[name] < s.Runs {
			return false
		}
		if s.Loop == nil || s.Loop.Total == 0 || s.Status != types.StatusOK || s.ReusedFrom != "" {
			continue
		}
		n := 0
		for k := range ended {
			// An event without its step run (0) counts for the latest.
			if k.step == name && k.it >= 0 && (k.run == s.Run || k.run == 0) {
				n++
			}
		}
		if n < s.Loop.Total {
			return false
		}
	}
	return true
}
