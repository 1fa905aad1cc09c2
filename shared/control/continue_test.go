package control

import (
	"context"
	"testing"

	"github.com/noetl/gcpengine/shared/types"
)

// PublishTogether sends the held transitions of one execution as one
// batch, in their order, and never merges two executions' batches.
func TestPublishTogether(t *testing.T) {
	var sent []types.Batch
	pub := func(_ context.Context, b types.Batch) error { sent = append(sent, b); return nil }
	k := func(exec, id string) *Continuation {
		return &Continuation{publishBatch: pub, events: types.Batch{ID: id, ExecutionID: exec, Events: []types.Event{{EventID: id, ExecutionID: exec}}}}
	}
	if err := PublishTogether(context.Background(), []*Continuation{k("a", "1"), k("a", "2"), {publishBatch: pub}, k("a", "3")}); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || len(sent[0].Events) != 3 || sent[0].Events[0].EventID != "1" || sent[0].Events[2].EventID != "3" {
		t.Fatalf("one execution: sent %+v, want one batch of events 1, 2, 3", sent)
	}
	sent = nil
	if err := PublishTogether(context.Background(), []*Continuation{k("a", "1"), k("b", "2"), k("b", "3")}); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 2 || sent[0].ExecutionID != "a" || len(sent[0].Events) != 1 || sent[1].ExecutionID != "b" || len(sent[1].Events) != 2 {
		t.Fatalf("two executions: sent %+v, want a's batch, then b's two events merged", sent)
	}
}
