package inspect

import (
	"sort"

	"github.com/noetl/gcpengine/shared/types"
)

// StepStats are the per-step figures derived from an execution's events.
type StepStats struct {
	// Attempts counts task attempts (task.attempt.started, or the
	// finished ones when a start is not projected yet).
	Attempts int `json:"attempts"`
	// FailedAttempts counts task.attempt.failed events.
	FailedAttempts int `json:"failed_attempts"`
	// First is the rank of the step's first event among the steps (0 for
	// the step that appeared first).
	First int `json:"-"`
}

// AttemptStats counts the task.attempt.* events of each step (each event
// once, by event_id) and ranks the steps by their first event.
func AttemptStats(evs []types.Event) map[string]*StepStats {
	out := map[string]*StepStats{}
	seen := map[string]bool{}
	started, finished := map[string]int{}, map[string]int{}
	for _, e := range evs {
		if e.Step == "" || (e.EventID != "" && seen[e.EventID]) {
			continue
		}
		seen[e.EventID] = true
		s := out[e.Step]
		if s == nil {
			s = &StepStats{First: len(out)}
			out[e.Step] = s
		}
		switch e.EventType {
		case types.EvTaskAttemptStarted:
			started[e.Step]++
		case types.EvTaskAttemptDone:
			finished[e.Step]++
		case types.EvTaskAttemptFailed:
			finished[e.Step]++
			s.FailedAttempts++
		}
	}
	for name, s := range out {
		s.Attempts = max(started[name], finished[name])
	}
	return out
}

// StepOrder sorts step names in the order the steps first appeared in
// the events (stats from AttemptStats), steps without events last by
// name.
func StepOrder(names []string, stats map[string]*StepStats) {
	sort.Slice(names, func(i, j int) bool {
		si, sj := stats[names[i]], stats[names[j]]
		switch {
		case si != nil && sj != nil:
			return si.First < sj.First
		case si != nil || sj != nil:
			return si != nil
		}
		return names[i] < names[j]
	})
}
