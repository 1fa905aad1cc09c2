package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// LoopMaxInFlight returns a loop's max_in_flight for a run: the literal
// value, else loop.spec.max_in_flight written as a template
// (dsl.Loop.MaxInFlightTemplate) rendered once in sc when the loop starts,
// else def. A rendered value must be an integer ≥ 1 (a numeric string or
// a whole float is converted); anything else is an error (the step fails
// with error kind "loop").
func LoopMaxInFlight(l *dsl.Loop, sc template.Scope, def int) (int, error) {
	if l.MaxInFlightTemplate == "" {
		if l.MaxInFlight > 0 {
			return l.MaxInFlight, nil
		}
		return def, nil
	}
	v, err := template.Render(l.MaxInFlightTemplate, sc)
	if err != nil {
		return 0, fmt.Errorf("loop max_in_flight: %w", err)
	}
	n, ok := wholeNumber(v)
	if !ok || n < 1 {
		return 0, fmt.Errorf("loop max_in_flight %q rendered %v, want an integer ≥ 1", l.MaxInFlightTemplate, v)
	}
	return n, nil
}

// wholeNumber converts a rendered value to an int when it is a whole
// number (int, whole float, or a string holding one).
func wholeNumber(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<31 {
			return int(x), true
		}
	case string:
		s := strings.TrimSpace(x)
		if n, err := strconv.Atoi(s); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return wholeNumber(f)
		}
	}
	return 0, false
}

// failLoop fails a loop step before any unit ran because its loop spec
// cannot be applied (error kind "loop"; e.g. a max_in_flight template that
// does not render to an integer ≥ 1).
func (t *transition) failLoop(step *dsl.Step, ss *StepState, msg string) error {
	ss.Status = types.StatusRunning
	ev := types.NewEvent(types.EvStepFailed, t.st.ExecutionID, Source, t.now, step.Name, itoa(ss.Run))
	ev.Step, ev.StepRun = step.Name, ss.Run
	ev.Payload = history.Encode(history.StepFailed{Error: map[string]any{"kind": ErrKindLoop, "message": msg}})
	t.out.Events = append(t.out.Events, withEntity(ev))
	return t.finishStep(step, ss, false, nil, boundaryOf(ev))
}

// ErrKindLoop is the error kind of a loop step whose loop spec cannot be
// applied at run time (dsl.Loop: max_in_flight and frame templates,
// unsupported frame modes).
const ErrKindLoop = "loop"
