package engine

import (
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/types"
)

// ArcListens reports whether arc a is evaluated on a step's boundary event
// evName (step.done, step.failed or loop.done): the rule route applies
// before an arc's when (NoETL DSL spec "next": an arc's `on`, default the step's
// success). ok is false only for step.failed. Observers (shared/control's
// metrics and server.route spans) use it to tell the arcs a next.evaluated
// event considered from those it did not.
func ArcListens(a *dsl.Arc, evName types.EventType, ok bool) bool {
	return arcListens(a, evName, ok)
}
