package history_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

func ip(i int) *int         { return &i }
func fp(f float64) *float64 { return &f }
func decodeAs(t *testing.T, typ types.EventType, p history.Payload) history.Attributes {
	t.Helper()
	b, err := json.Marshal(history.Encode(p))
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	if err := jsonx.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	a := history.For(typ)
	if err := history.DecodeInto(a, typ, wire); err != nil {
		t.Fatalf("%s: %v (wire %s)", typ, err, b)
	}
	return a
}

// TestEveryShapeRoundTrips: every payload shape a writer builds, the
// recorded ones and those no run records yet (an execution deadline, a
// cursor loop, a queued token, the routing error and route_edge shapes of
// next.evaluated, a subscription's trace), survives Encode → JSON →
// Decode unchanged; every engine event type has a case.
func TestEveryShapeRoundTrips(t *testing.T) {
	cases := []struct {
		typ types.EventType
		p   history.Payload
	}{
		{types.EvExecutionRequested, history.ExecutionRequested{Playbook: "p", ParentID: "x"}},
		{types.EvExecutionRequested, history.ExecutionRequested{Playbook: "p", Trace: map[string]string{"traceparent": "00-ab-cd-01"}}},
		{types.EvPlaybookStarted, history.PlaybookStarted{Playbook: "p"}},
		{types.EvWorkflowStarted, history.WorkflowStarted{}},
		{types.EvAdmitEvaluated, history.AdmitEvaluated{Allowed: true, Rule: -1}},
		{types.EvStepScheduled, history.StepScheduled{From: "a", Args: map[string]any{"n": int64(1)}}},
		{types.EvStepScheduled, history.StepScheduled{From: "a", Queued: true}},
		{types.EvNextEvaluated, history.NextEvaluated{Event: types.EvStepDone, Mode: "exclusive", Matched: []string{"b"}, Fired: []string{"b"},
			WhenErrors: []history.WhenError{{Arc: "c", Error: "boom"}}}},
		{types.EvNextEvaluated, history.NextEvaluated{Event: types.EvStepFailed, Policy: "route_edge:h", Matched: []string{"h"}, Fired: []string{"h"}}},
		{types.EvNextEvaluated, history.NextEvaluated{Error: "step a arc to b: when: bad", Matched: []string{}, Fired: []string{}}},
		{types.EvWorkflowFinished, history.WorkflowFinished{Status: types.StatusFailed, DurationMS: 5, Failures: []string{"x"}, Compensated: []string{"a"}}},
		{types.EvPlaybookFinished, history.PlaybookFinished{Status: types.StatusOK, Result: map[string]any{"a": int64(1)}, DurationMS: 7}},
		{types.EvStepStarted, history.StepStarted{Loop: true}},
		{types.EvTaskStarted, history.TaskStarted{ChildExecutionID: "c", Path: "p", Version: 2}},
		{types.EvTaskAttemptStarted, history.TaskAttemptStarted{Kind: "http"}},
		{types.EvTaskAttemptDone, history.TaskAttempt{Kind: "http", HTTPStatus: ip(200), Adopted: true, Logs: "x"}},
		{types.EvTaskAttemptFailed, history.TaskAttempt{Kind: "http", Error: &history.AttemptError{Kind: "http", Message: "m", Retryable: true, Status: 503}}},
		{types.EvPolicyTaskEvaluated, history.PolicyTaskEvaluated{Rule: 0, Do: types.ActRetry, OutcomeStatus: types.StatusError, DelayS: fp(0.5), NextAttempt: ip(2)}},
		{types.EvPolicyTaskEvaluated, history.PolicyTaskEvaluated{Rule: -1, Do: types.ActFail, OutcomeStatus: types.StatusError, Exhausted: true}},
		{types.EvTaskDone, history.TaskDone{}},
		{types.EvTaskFailed, history.TaskFailed{Error: map[string]any{"kind": "x", "message": "m"}}},
		{types.EvTaskCanceled, history.TaskCanceled{Reason: "the execution ended (canceled)"}},
		{types.EvTaskAttemptDone, history.TaskAttempt{Kind: "duckdb", Inputs: &history.TaskInputs{Config: map[string]any{"query": "SELECT 1"}, Args: map[string]any{"n": int64(1)}}}},
		{types.EvResultLost, history.ResultLost{URI: "noetl://t/p/results/1/s/1/0/1", Key: "k", Generation: 7, Lost: "replaced", Message: "m"}},
		{types.EvResultLost, history.ResultLost{URI: "u", Key: "k", Lost: "gone", Message: "m"}},
		{types.EvResultRepaired, history.ResultRepaired{URI: "u", Key: "k", Lost: 7, Generation: 9, SHA256: "ab", Task: "t", Principal: "p", RequestID: "r"}},
		{types.EvResultRepairFailed, history.ResultRepaired{URI: "u", Key: "k", Lost: 7, Task: "t", Principal: "p", RequestID: "r", Message: "m"}},
		{types.EvStepForced, history.StepForced{Action: "complete", Principal: "ops@example.com", Reason: "r"}},
		{types.EvStepForced, history.StepForced{Action: "fail", Principal: "ops@example.com"}},
		{types.EvStepDone, history.StepDone{Result: "r", Ctx: map[string]any{"a": int64(1)}, Step: map[string]any{"b": "c"}}},
		{types.EvStepFailed, history.StepFailed{Error: map[string]any{"kind": "x"}, Iteration: ip(3)}},
		{types.EvLoopStarted, history.LoopStarted{Total: ip(3), Mode: "parallel", MaxInFlight: 2}},
		{types.EvLoopStarted, history.LoopStarted{Mode: "cursor", MaxInFlight: 4, FrameMaxRows: ip(100)}},
		{types.EvLoopIterationStarted, history.IterationStarted{Index: 1, Total: 3}},
		{types.EvLoopIterationDone, history.IterationDone{Result: int64(1), Step: map[string]any{"s": true}, Index: 2}},
		{types.EvLoopIterationFailed, history.IterationFailed{Error: map[string]any{"kind": "x"}, Index: 0}},
		{types.EvLoopDone, history.LoopDone{Result: []any{}, Total: 0}},
		{types.EvLoopDone, history.LoopDone{Result: "ref", Total: 2, Profile: &history.LoopProfile{FirstUS: 1, LastUS: 2, Ended: []int{1, 1}}, Ctx: map[string]any{}}},
		{types.EvResultStored, history.ResultStored{Reference: map[string]any{"uri": "noetl://x"}}},
		{types.EvCancelRequested, history.CancelRequested{Reason: "r"}},
		{types.EvStepCanceled, history.StepCanceled{Reason: "canceled", Message: "m"}},
		{types.EvLoopIterationCanceled, history.IterationCanceled{Index: 1, Reason: "r"}},
		{types.EvExecutionTimedOut, history.ExecutionTimedOut{Message: "m", Kind: string(types.ErrKindTimeout)}},
		{types.EvUnitDeadLettered, history.UnitDeadLettered{DLQID: "d", Attempts: 3, Error: "e"}},
		{types.EvUnitReclaimed, history.UnitReclaimed{Reclaim: 1, Holder: "h"}},
		{types.EvUnitHandedOff, history.UnitHandedOff{Reason: "r", TaskIndex: 1, Jumps: 0, RanS: 1.5}},
		{types.EvCompensationStarted, history.CompensationStarted{Plan: []string{"a>b"}}},
	}
	covered := map[types.EventType]bool{}
	for _, c := range cases {
		covered[c.typ] = true
		got := decodeAs(t, c.typ, c.p)
		want := reflect.New(reflect.TypeOf(c.p)) // the attributes pointer For returns
		want.Elem().Set(reflect.ValueOf(c.p))
		if !reflect.DeepEqual(got, want.Interface()) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v", c.typ, got, want.Interface())
		}
	}
	for _, typ := range history.EventTypes() {
		if !covered[typ] {
			t.Errorf("no case for %s", typ)
		}
	}
}

// TestDecodeReportsDrift: a key the attributes do not know, a value of the
// wrong kind and attributes of another event type are errors (the value
// still holds the keys that decoded); an opaque event type has none.
func TestDecodeReportsDrift(t *testing.T) {
	for _, c := range []struct {
		name    string
		ev      types.Event
		wantErr string
	}{
		{"unknown key", types.Event{EventType: types.EvStepCanceled, Payload: map[string]any{"reason": "r", "message": "m", "why": "x"}}, "unknown key(s) why"},
		{"wrong kind", types.Event{EventType: types.EvStepCanceled, Payload: map[string]any{"reason": 3, "message": "m"}}, `"reason": want a string`},
		{"other type", types.Event{EventType: types.EvCancelRequested, Payload: map[string]any{"reason": "r"}}, "does not carry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := history.Decode[history.StepCanceled](c.ev)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			if p.Message != "m" && c.name != "other type" {
				t.Fatalf("message %q: the keys that decode are kept", p.Message)
			}
		})
	}
	if history.For("external.webhook") != nil {
		t.Fatal("an external event's payload is opaque")
	}
	if _, err := history.Decode[history.TaskAttempt](types.Event{EventType: types.EvTaskAttemptDone, Payload: map[string]any{"kind": "http", "http_status": 200.5}}); err == nil {
		t.Fatal("a fractional http_status decoded")
	}
}
