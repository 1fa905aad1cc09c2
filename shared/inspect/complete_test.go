package inspect

import (
	"testing"

	"github.com/noetl/gcpengine/shared/types"
)

// A followed log is complete only with its end, every started unit's
// end and every iteration of an ok loop; a failed loop need not have
// started them all, and a duplicate end counts once.
func TestLogComplete(t *testing.T) {
	ev := func(id string, typ types.EventType, step string, it int) types.Event {
		e := types.Event{EventID: id, EventType: typ, Step: step, StepRun: 1}
		if it >= 0 {
			e.Iteration = types.IntPtr(it)
		}
		return e
	}
	iteration := func(i int) []types.Event {
		n := string(rune('a' + i))
		return []types.Event{ev("s"+n, types.EvLoopIterationStarted, "fan", i), ev("d"+n, types.EvLoopIterationDone, "fan", i)}
	}
	base := []types.Event{ev("fs", types.EvStepStarted, "fan", -1), ev("fd", types.EvStepDone, "fan", -1), ev("end", types.EvPlaybookFinished, "", -1)}
	okLoop := &Status{Steps: map[string]Step{"fan": {Status: types.StatusOK, Run: 1, Runs: 1, Loop: &Loop{Total: 3, Done: 3}}}}
	failedLoop := &Status{Steps: map[string]Step{"fan": {Status: types.StatusFailed, Run: 1, Runs: 1, Loop: &Loop{Total: 3, Done: 3}}}}
	all := append(append(append(append([]types.Event{}, base...), iteration(0)...), iteration(1)...), iteration(2)...)
	for _, c := range []struct {
		name string
		st   *Status
		evs  []types.Event
		want bool
	}{
		{"whole", okLoop, all, true},
		{"no playbook.finished", okLoop, all[:2:2], false},
		{"an ok loop's iteration missing", okLoop, all[:len(all)-2], false},
		{"an ok loop's iteration end duplicated instead of another", okLoop, append(all[:len(all)-2:len(all)-2], iteration(1)...), false},
		{"a started iteration without its end", failedLoop, all[:len(all)-1], false},
		{"a failed loop that did not start them all", failedLoop, all[:len(all)-2], true},
		{"a loop's step.failed carrying the iteration that failed it", failedLoop,
			append(append([]types.Event{ev("fs", types.EvStepStarted, "fan", -1), ev("ff", types.EvStepFailed, "fan", 1), ev("end", types.EvPlaybookFinished, "", -1)}, iteration(0)...), iteration(1)...), true},
		{"a rerun's reused loop", &Status{Steps: map[string]Step{"fan": {Status: types.StatusOK, Run: 1, Runs: 1, ReusedFrom: "x0", Loop: &Loop{Total: 3, Done: 3}}}}, base, true},
		{"a step run without its end", nil, append([]types.Event{ev("fs2", types.EvStepStarted, "other", -1)}, base...), false},
		{"fewer step ends than runs", &Status{Steps: map[string]Step{"fan": {Status: types.StatusOK, Run: 2, Runs: 2}}}, base, false},
	} {
		if got := LogComplete(c.st, c.evs); got != c.want {
			t.Errorf("%s: complete %v, want %v", c.name, got, c.want)
		}
	}
}
