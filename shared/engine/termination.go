package engine

import (
	"fmt"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/types"
)

// Routing and termination rules of DSL v2 (NoETL DSL spec "DSL v2 names"; NoETL's
// workflow_entry_routing_termination.md): the `output` envelope arcs read,
// next.spec.on_no_match with executor.spec.no_next_is_error, and
// executor.spec.final_step. Joins are in joins.go.

// ErrKindRouting is the error kind of an execution failed because a step
// that succeeded matched no arc under executor.spec.no_next_is_error.
const ErrKindRouting = "routing"

// outputEnvelope is the `output` an arc's when/set reads on a step's
// boundary (DSL v2 `output.status`, `output.data`, `output.error`): the
// step's result as data, status "ok" or "error".
func outputEnvelope(ok bool, result any, b boundary) map[string]any {
	o := map[string]any{"status": dsl.OutcomeOK, "data": result, "error": nil}
	if !ok {
		o["status"] = dsl.OutcomeError
		if b.present {
			o["error"] = b.err
		}
	}
	return o
}

// NoMatchIsError reports whether a step whose boundary fired no arc fails
// the execution under the routing rules (dsl.Playbook.NoNextIsError,
// dsl.Next.OnNoMatch): only a success (ok) of a step that has arcs, with
// executor.spec.no_next_is_error set and on_no_match not "quiet". A
// failed step without a matching arc fails the execution anyway
// (finishStep), whatever these settings say.
func NoMatchIsError(noNextIsError bool, onNoMatch string, hasArcs, ok bool, fired int) bool {
	return noNextIsError && ok && hasArcs && fired == 0 && onNoMatch != "quiet"
}

// noMatch records the routing failure of NoMatchIsError.
func (t *transition) noMatch(stepName string, ss *StepState, ev types.EventType, ok bool, fired int) {
	step := t.e.PB.Step(stepName)
	if step == nil || step.Next == nil {
		return
	}
	if !NoMatchIsError(t.e.PB.NoNextIsError, step.Next.OnNoMatch, len(step.Next.Arcs) > 0, ok, fired) {
		return
	}
	msg := fmt.Sprintf("step %s: no arc matched its %s (executor.spec.no_next_is_error)", stepName, ev)
	ss.Error = map[string]any{"kind": ErrKindRouting, "message": msg}
	t.st.Failures = append(t.st.Failures, msg)
}

// beforeFinish runs what must happen before the execution may end: ready
// joins fire (all waiting ones once nothing else is active), then, when
// nothing is active any more, executor.spec.final_step runs once.
func (t *transition) beforeFinish() {
	if t.st.Terminal() || t.st.Compensating {
		return // a SAGA rollback (stop.go) runs neither joins nor the final step
	}
	t.checkJoins(false)
	// A join fired here may complete at once (a routing-only step) and
	// park tokens at another join: settle until nothing changes.
	for i := 0; i < len(t.e.PB.Workflow)+1 && t.st.Active == 0 && len(t.st.Joins) > 0; i++ {
		t.checkJoins(true)
	}
	final := t.e.PB.FinalStep
	if t.st.Active > 0 || final == "" || len(t.st.Joins) > 0 {
		return
	}
	if ss := t.st.Steps[final]; ss != nil && ss.Run > 0 {
		return
	}
	if err := t.schedule(final, nil, nil, "", 0); err != nil {
		t.st.Failures = append(t.st.Failures, fmt.Sprintf("final step %s: %v", final, err))
	}
}
