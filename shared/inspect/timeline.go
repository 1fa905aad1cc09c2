package inspect

import (
	"sort"
	"time"

	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/types"
)

// Timeline is when the parts of an execution ran, derived from its events
// (in the api's causal order): its step runs, each loop run's iterations,
// and the task attempts of every unit (a step run without loop, or one
// iteration), with the policy's retries and their backoff.
type Timeline struct {
	// Start is the first event's time, End the last one's (zero without
	// events).
	Start, End time.Time
	// Finished reports that playbook.finished is among the events.
	Finished bool
	// Runs are the step runs in the order they first appear.
	Runs []*Run
}

// Run is one step run.
type Run struct {
	Step string
	Run  int
	// Status is the run's end (ok, failed, canceled), or running /
	// scheduled while it has not ended.
	Status types.Status
	// Scheduled, Started and Ended are the times of step.scheduled,
	// step.started and the run's end (step.done, step.failed,
	// step.canceled, loop.done); zero when not among the events.
	Scheduled, Started, Ended time.Time
	// Attempts are the task attempts of a run without loop.
	Attempts []Attempt
	// Loop is the run's loop (nil for a step without loop).
	Loop *LoopRun
	// Error is the run's error (step.failed's payload.error), if any.
	Error any
}

// LoopRun is a loop step run's iterations.
type LoopRun struct {
	// Total, Mode and MaxInFlight are loop.started's.
	Total       int
	Mode        string
	MaxInFlight int
	// Iterations are the iterations with any event, by index.
	Iterations []*Iteration
	// Done and Failed count the iterations that ended ok and in error.
	Done, Failed int
}

// Iteration is one loop iteration.
type Iteration struct {
	Index  int
	Status types.Status
	// Started and Ended are loop.iteration.started's and the iteration's
	// end (loop.iteration.done or .failed).
	Started, Ended time.Time
	Attempts       []Attempt
	Error          any
}

// Attempt is one task attempt.
type Attempt struct {
	Task    string
	Attempt int
	// Status is ok or error ("" while it runs).
	Status types.Status
	// Started and Ended are task.attempt.started's and the end event's
	// times (Ended is zero while it runs).
	Started, Ended time.Time
	DurationMS     int64
	// Retried reports that the task policy retried the task after this
	// attempt, after DelayS seconds of backoff.
	Retried bool
	DelayS  float64
	// Error is the attempt's error (kind, message, ...), if any.
	Error any
}

// Counts sums the attempts of every run: all of them, the failed ones and
// the ones the policy retried.
func (t *Timeline) Counts() (attempts, failed, retried int) {
	add := func(as []Attempt) {
		for _, a := range as {
			attempts++
			if a.Status == types.StatusError {
				failed++
			}
			if a.Retried {
				retried++
			}
		}
	}
	for _, r := range t.Runs {
		add(r.Attempts)
		if r.Loop != nil {
			for _, it := range r.Loop.Iterations {
				add(it.Attempts)
			}
		}
	}
	return
}

// BuildTimeline folds events (in causal order) into a Timeline.
func BuildTimeline(evs []types.Event) *Timeline {
	t := &Timeline{}
	runs := map[string]*Run{}
	iters := map[*Run]map[int]*Iteration{}
	run := func(e types.Event) *Run {
		key := e.Step + "\x00" + itoa(e.StepRun)
		r := runs[key]
		if r == nil {
			r = &Run{Step: e.Step, Run: e.StepRun, Status: types.StatusScheduled}
			runs[key] = r
			t.Runs = append(t.Runs, r)
		}
		return r
	}
	iteration := func(r *Run, idx int) *Iteration {
		if r.Loop == nil {
			r.Loop = &LoopRun{}
		}
		m := iters[r]
		if m == nil {
			m = map[int]*Iteration{}
			iters[r] = m
		}
		it := m[idx]
		if it == nil {
			it = &Iteration{Index: idx, Status: types.StatusRunning}
			m[idx] = it
			r.Loop.Iterations = append(r.Loop.Iterations, it)
		}
		return it
	}
	for _, e := range evs {
		ts := e.Timestamp.Time
		if !ts.IsZero() {
			if t.Start.IsZero() || ts.Before(t.Start) {
				t.Start = ts
			}
			if ts.After(t.End) {
				t.End = ts
			}
		}
		if e.EventType == types.EvPlaybookFinished {
			t.Finished = true
		}
		if e.Step == "" || e.StepRun < 1 {
			continue
		}
		r := run(e)
		// The unit the event belongs to: its attempts list.
		var attempts *[]Attempt
		if e.Iteration != nil {
			it := iteration(r, *e.Iteration)
			attempts = &it.Attempts
		} else {
			attempts = &r.Attempts
		}
		switch e.EventType {
		case types.EvStepScheduled:
			r.Scheduled = ts
		case types.EvStepStarted:
			r.Started = ts
			if r.Status == types.StatusScheduled {
				r.Status = types.StatusRunning
			}
		case types.EvLoopStarted:
			if r.Loop == nil {
				r.Loop = &LoopRun{}
			}
			p, _ := history.Decode[history.LoopStarted](e) // a malformed key reads as absent
			if p.Total != nil {
				r.Loop.Total = *p.Total
			}
			r.Loop.Mode, r.Loop.MaxInFlight = p.Mode, p.MaxInFlight
			if r.Started.IsZero() {
				r.Started = ts
			}
			if r.Status == types.StatusScheduled {
				r.Status = types.StatusRunning
			}
		case types.EvStepDone, types.EvStepFailed, types.EvStepCanceled:
			r.Ended = ts
			r.Status = endStatus(e)
			if e.EventType == types.EvStepFailed {
				p, _ := history.Decode[history.StepFailed](e)
				r.Error = p.Error
			}
		case types.EvLoopDone:
			if r.Ended.IsZero() {
				r.Ended = ts
			}
		case types.EvLoopIterationStarted:
			if e.Iteration != nil {
				it := iteration(r, *e.Iteration)
				it.Started = ts
			}
		case types.EvLoopIterationDone, types.EvLoopIterationFailed:
			if e.Iteration != nil {
				it := iteration(r, *e.Iteration)
				it.Ended = ts
				it.Status = types.StatusOK
				if e.EventType == types.EvLoopIterationFailed || e.Status == types.StatusError || e.Status == types.StatusFailed {
					it.Status = types.StatusError
					it.Error = iterationError(e)
				}
			}
		case types.EvTaskAttemptStarted:
			*attempts = append(*attempts, Attempt{Task: e.Task, Attempt: e.Attempt, Started: ts})
		case types.EvTaskAttemptDone, types.EvTaskAttemptFailed:
			a := openAttempt(*attempts, e.Task)
			if a == nil {
				*attempts = append(*attempts, Attempt{Task: e.Task, Attempt: e.Attempt, Started: ts.Add(-time.Duration(e.DurationMS) * time.Millisecond)})
				a = &(*attempts)[len(*attempts)-1]
			}
			a.Ended, a.DurationMS, a.Status = ts, e.DurationMS, types.StatusOK
			if e.EventType == types.EvTaskAttemptFailed {
				a.Status = types.StatusError
				a.Error = attemptError(e)
			}
		case types.EvPolicyTaskEvaluated:
			if p, _ := history.Decode[history.PolicyTaskEvaluated](e); p.Do == types.ActRetry {
				if a := lastAttempt(*attempts, e.Task); a != nil {
					a.Retried = true
					if p.DelayS != nil {
						a.DelayS = *p.DelayS
					}
				}
			}
		}
	}
	for r, m := range iters {
		sort.Slice(r.Loop.Iterations, func(i, j int) bool { return r.Loop.Iterations[i].Index < r.Loop.Iterations[j].Index })
		for _, it := range m {
			switch it.Status {
			case types.StatusOK:
				r.Loop.Done++
			case types.StatusError:
				r.Loop.Failed++
			}
		}
	}
	return t
}

// endStatus is the status a step run's end event gives it.
func endStatus(e types.Event) types.Status {
	switch e.EventType {
	case types.EvStepFailed:
		return types.StatusFailed
	case types.EvStepCanceled:
		return types.StatusCanceled
	}
	if e.Status == types.StatusError || e.Status == types.StatusFailed {
		return types.StatusFailed
	}
	return types.StatusOK
}

// openAttempt is the last attempt of task that has not ended, or nil.
func openAttempt(as []Attempt, task string) *Attempt {
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].Task == task {
			if as[i].Ended.IsZero() {
				return &as[i]
			}
			return nil
		}
	}
	return nil
}

// lastAttempt is the last attempt of task, or nil.
func lastAttempt(as []Attempt, task string) *Attempt {
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].Task == task {
			return &as[i]
		}
	}
	return nil
}

// iterationError is a loop.iteration.failed event's error entry (nil for
// another event, or when its payload does not decode).
func iterationError(e types.Event) any {
	if e.EventType != types.EvLoopIterationFailed {
		return nil
	}
	p, _ := history.Decode[history.IterationFailed](e)
	return p.Error
}

// attemptError is a task.attempt.failed event's error object (nil when
// it has none).
func attemptError(e types.Event) any {
	p, _ := history.Decode[history.TaskAttempt](e)
	if p.Error == nil {
		return nil
	}
	return p.Error.Map()
}

func itoa(i int) string { return types.DeriveIDPart(i) }
