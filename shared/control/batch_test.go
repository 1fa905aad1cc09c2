package control

import (
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/types"
)

// TestDeferrable: an end is deferred (its record grouped with a later
// end's) only when it is an unleased ok end of a batched, non-cursor loop
// that neither fails the step nor ends its lane, with an inline successor
// asked for, and only while the group stays within MaxGroup records and
// MaxGroupBytes of JSON — whatever a playbook puts in its results, a
// group document stays small (a large record is committed alone).
func TestDeferrable(t *testing.T) {
	plan := &engine.LoopPlan{Total: 100, Batch: 50}
	ok := func(i int, result any) engine.IterationRecord {
		return engine.IterationRecord{Index: i, Status: types.StatusOK, Result: result}
	}
	inline := func() bool { return true }
	base := IterationEnd{Record: ok(3, "r"), Inline: inline, Group: []engine.IterationRecord{ok(1, "r"), ok(2, "r")}}
	if ok, size := deferrable(base, plan, false, false); !ok || size != len(`{"index":3,"status":"ok","result":"r"}`) {
		t.Fatalf("a small unleased ok end of a batched loop: deferred %v, %d bytes", ok, size)
	}
	full := make([]engine.IterationRecord, MaxGroup-1)
	for i := range full {
		full[i] = ok(i, "r")
	}
	big := strings.Repeat("x", MaxGroupBytes/2)
	for name, c := range map[string]struct {
		e                  IterationEnd
		plan               *engine.LoopPlan
		failStep, laneDone bool
	}{
		"leased":                              {e: IterationEnd{Record: base.Record, Inline: inline, Holder: "h"}, plan: plan},
		"no inline successor":                 {e: IterationEnd{Record: base.Record}, plan: plan},
		"failed":                              {e: IterationEnd{Record: engine.IterationRecord{Index: 3, Status: types.StatusError}, Inline: inline}, plan: plan},
		"fails the step":                      {e: base, plan: plan, failStep: true},
		"ends its lane":                       {e: base, plan: plan, laneDone: true},
		"not batched":                         {e: base, plan: &engine.LoopPlan{Total: 100, Batch: 1}},
		"cursor loop":                         {e: base, plan: &engine.LoopPlan{Total: 100, Batch: 50, Cursor: &engine.CursorPlan{}}},
		"group full":                          {e: IterationEnd{Record: ok(200, "r"), Inline: inline, Group: full}, plan: plan},
		"group too large":                     {e: IterationEnd{Record: ok(3, big), Inline: inline, Group: []engine.IterationRecord{ok(1, big), ok(2, "r")}}, plan: plan},
		"group too large by the caller's sum": {e: IterationEnd{Record: base.Record, Inline: inline, Group: base.Group, GroupBytes: MaxGroupBytes}, plan: plan},
		"one record too large":                {e: IterationEnd{Record: ok(3, strings.Repeat("x", MaxGroupBytes+1)), Inline: inline}, plan: plan},
	} {
		if ok, _ := deferrable(c.e, c.plan, c.failStep, c.laneDone); ok {
			t.Errorf("%s: deferred", name)
		}
	}
}
