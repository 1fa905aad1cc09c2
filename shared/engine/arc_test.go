package engine

import (
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/types"
)

// TestArcOnVocabularyAgreesWithValidator: an arc's on word fires on some
// boundary event exactly when the validator accepts it. The engine used to
// route on words the validator refuses ("done", "success", "*", "failed",
// "failure", "error"): two vocabularies for one field (a drift);
// both now read dsl.ArcOn.
func TestArcOnVocabularyAgreesWithValidator(t *testing.T) {
	words := []string{"", "step.done", "step.failed", "loop.done", "any",
		"done", "success", "*", "failed", "failure", "error", "step.maybe", "STEP.DONE"}
	for _, w := range words {
		src := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\nworkflow:\n" +
			"  - step: start\n    tool: {kind: noop}\n    next:\n      arcs: [{step: b, on: \"" + w + "\"}]\n" +
			"  - step: b\n    tool: {kind: noop}\n"
		_, err := dsl.Load([]byte(src), "t.yaml")
		accepted := err == nil
		a := &dsl.Arc{Step: "b"}
		reflect.ValueOf(&a.On).Elem().SetString(w) // whatever the field's string type
		fires := false
		for _, b := range []struct {
			ev types.EventType
			ok bool
		}{{types.EvStepDone, true}, {types.EvStepFailed, false}, {types.EvLoopDone, true}} {
			fires = fires || arcListens(a, b.ev, b.ok)
		}
		if accepted != fires {
			t.Errorf("on %q: validator accepts %v (err %v), engine fires %v", w, accepted, err, fires)
		}
	}
}
