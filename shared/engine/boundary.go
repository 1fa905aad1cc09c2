package engine

import (
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/types"
)

// boundary is what a transition reads of a boundary event (step.done,
// step.failed, loop.done): its typed payload (history), decoded once.
type boundary struct {
	// typ is the event's type.
	typ types.EventType
	// present is false for an event without a payload (the templates'
	// event.error and output.error are then absent, not null).
	present bool
	// result is the step's result (step.done, loop.done).
	result any
	// ctx and vars are the unit's ctx and step-scope patches (step.done;
	// loop.done carries ctx).
	ctx, vars map[string]any
	// err is the step's error entry (step.failed).
	err any
	// profile is a loop.done's iteration profile (nil when absent,
	// malformed or empty: a profile is an aid, never an error).
	profile *LoopProfile
}

// boundaryOf decodes ev's payload. A malformed key reads as absent, as it
// always has: a payload the engine cannot read never fails a transition
// (the caller would retry it forever, README "Security").
func boundaryOf(ev types.Event) boundary {
	b := boundary{typ: ev.EventType, present: ev.Payload != nil}
	switch ev.EventType {
	case types.EvStepDone:
		p, _ := history.Decode[history.StepDone](ev)
		b.result, b.ctx, b.vars = p.Result, p.Ctx, p.Step
	case types.EvLoopDone:
		p, _ := history.Decode[history.LoopDone](ev)
		b.result, b.ctx, b.profile = p.Result, p.Ctx, p.Profile
		if b.profile != nil && len(b.profile.Ended) == 0 {
			b.profile = nil
		}
	case types.EvStepFailed:
		p, _ := history.Decode[history.StepFailed](ev)
		b.err = p.Error
	}
	return b
}
