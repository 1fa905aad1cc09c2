package dsl

import "github.com/noetl/gcpengine/shared/types"

// ArcOn names the boundary event an arc listens to (Arc.On, the NoETL DSL
// spec "next.arcs[].on"). The engine (routing), the validator, the
// normaliser and the linter read the words from here only.
type ArcOn string

// Arc on values.
const (
	// ArcOnSuccess (the field left out) is the step's success: step.done,
	// or loop.done for a loop step.
	ArcOnSuccess ArcOn = ""
	// ArcOnStepDone is the step's success (as ArcOnSuccess).
	ArcOnStepDone = ArcOn(types.EvStepDone)
	// ArcOnStepFailed is the step's failure.
	ArcOnStepFailed = ArcOn(types.EvStepFailed)
	// ArcOnLoopDone is a loop step's loop.done only.
	ArcOnLoopDone = ArcOn(types.EvLoopDone)
	// ArcOnAny is every boundary event (filter with event.name in when).
	ArcOnAny ArcOn = "any"
)

// ArcOnWords lists the values a playbook may write, in the order error
// messages name them.
var ArcOnWords = []ArcOn{ArcOnStepDone, ArcOnStepFailed, ArcOnLoopDone, ArcOnAny}

// Valid reports whether o is ArcOnSuccess or one of ArcOnWords.
func (o ArcOn) Valid() bool {
	switch o {
	case ArcOnSuccess, ArcOnStepDone, ArcOnStepFailed, ArcOnLoopDone, ArcOnAny:
		return true
	}
	return false
}

// OnSuccess reports whether an arc with o can fire on the step's success.
func (o ArcOn) OnSuccess() bool {
	return o == ArcOnSuccess || o == ArcOnStepDone || o == ArcOnLoopDone || o == ArcOnAny
}

// OnFailure reports whether an arc with o can fire on the step's failure.
func (o ArcOn) OnFailure() bool { return o == ArcOnStepFailed || o == ArcOnAny }

// Listens reports whether an arc with o fires on a step's boundary event:
// ok is whether the step succeeded, loopDone whether the event is
// loop.done. An invalid o (refused by Validate) never fires.
func (o ArcOn) Listens(ok, loopDone bool) bool {
	switch o {
	case ArcOnSuccess, ArcOnStepDone:
		return ok
	case ArcOnAny:
		return true
	case ArcOnStepFailed:
		return !ok
	case ArcOnLoopDone:
		return ok && loopDone
	}
	return false
}

// ArcOnList is ArcOnWords joined by ", " (for messages).
func ArcOnList() string {
	s := ""
	for i, w := range ArcOnWords {
		if i > 0 {
			s += ", "
		}
		s += string(w)
	}
	return s
}

// Outcome statuses: outcome.status of a task attempt (the DSL's outcome
// envelope) and output.status of a step's boundary, as task policy and
// arc when templates compare them.
const (
	OutcomeOK    = string(types.StatusOK)
	OutcomeError = string(types.StatusError)
)

// WhenOutcome returns the when template that holds when outcome.status
// is status ("{{ outcome.status == 'error' }}"), with extra, when not
// empty, and-ed to it inside the template.
func WhenOutcome(status, extra string) string {
	if extra == "" {
		return "{{ outcome.status == '" + status + "' }}"
	}
	return "{{ outcome.status == '" + status + "' and " + extra + " }}"
}
