package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/replay"
	"github.com/noetl/gcpengine/shared/replay/replaytest"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/types"
)

func TestMemoryConformance(t *testing.T) {
	m := &replaytest.Memory{}
	replaytest.Run(t, replaytest.Harness{Sub: m, Publish: func(_ *testing.T, d string, a map[string]string) { m.Publish([]byte(d), a) }})
}

// The Pub/Sub driver against the emulator (PUBSUB_EMULATOR_HOST, the
// local stack's): a fresh topic and a subscription with
// retain_acked_messages, as the stack and Terraform make the replay
// subscription.
func TestPubSubConformance(t *testing.T) {
	if os.Getenv("PUBSUB_EMULATOR_HOST") == "" {
		t.Skip("no Pub/Sub emulator (PUBSUB_EMULATOR_HOST; source .stack/env)")
	}
	ctx := context.Background()
	project := "replay-test"
	c, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := fmt.Sprint("replay-", time.Now().UnixNano())
	topic := "projects/" + project + "/topics/" + id
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: "projects/" + project + "/subscriptions/" + id,
		Topic: topic, AckDeadlineSeconds: 60, RetainAckedMessages: true, MessageRetentionDuration: durationpb.New(7 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	sub, err := replay.OpenPubSub(ctx, project, id)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sub.PullWait = time.Second
	pub := c.Publisher(topic)
	defer pub.Stop()
	replaytest.Run(t, replaytest.Harness{Sub: sub, Publish: func(t *testing.T, d string, a map[string]string) {
		if _, err := pub.Publish(ctx, &pubsub.Message{Data: []byte(d), Attributes: a}).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}})
}

// fixture is a store with one execution and a subscription holding its
// batches (and another execution's).
type fixture struct {
	st  *memstore.Memory
	sub *replaytest.Memory
	rb  *replay.Rebuilder
	id  string
}

const sig = "signed"

func publish(sub *replaytest.Memory, b types.Batch, signed bool) {
	data, _ := json.Marshal(b)
	a := map[string]string{"execution_id": b.ExecutionID, "batch_id": b.ID}
	if signed {
		a["sig"] = sig
	}
	sub.Publish(data, a)
}

func ev(id string, typ types.EventType, step string, clock int64) types.Event {
	return types.Event{EventID: fmt.Sprint(id, typ, step, clock), EventType: typ, ExecutionID: id, Step: step, StepRun: 1, Clock: clock}
}

func newFixture(t *testing.T, status types.Status) *fixture {
	t.Helper()
	ctx := context.Background()
	st := memstore.NewMemory()
	id := fmt.Sprint((time.Now().Add(-time.Hour).UnixMilli() - types.IDEpoch) << 22)
	state := &engine.State{ExecutionID: id, Status: status, CreatedAt: time.Now().Add(-time.Hour).UTC()}
	if err := st.ExecutionCreate(ctx, &store.Execution{State: state}); err != nil {
		t.Fatal(err)
	}
	sub := &replaytest.Memory{}
	publish(sub, types.Batch{ID: "b1", ExecutionID: id, Events: []types.Event{ev(id, types.EvExecutionRequested, "", 1)}}, true)
	publish(sub, types.Batch{ID: "other", ExecutionID: "999", Events: []types.Event{ev("999", types.EvExecutionRequested, "", 1)}}, true)
	publish(sub, types.Batch{ID: "b2", ExecutionID: id, Events: []types.Event{ev(id, types.EvStepStarted, "s", 2), ev(id, types.EvStepDone, "s", 3)}}, true)
	publish(sub, types.Batch{ID: "b2", ExecutionID: id, Events: []types.Event{ev(id, types.EvStepStarted, "s", 2), ev(id, types.EvStepDone, "s", 3)}}, true) // a duplicate publish
	publish(sub, types.Batch{ID: "forged", ExecutionID: id, Events: []types.Event{ev(id, types.EvStepStarted, "evil", 4)}}, false)
	publish(sub, types.Batch{ID: "b3", ExecutionID: id, Events: []types.Event{ev(id, types.EvPlaybookFinished, "", 5)}}, true)
	rb := &replay.Rebuilder{Sub: sub, Store: st, Decode: func(m replay.Message) (types.Batch, error) {
		if m.Attributes["sig"] != sig {
			return types.Batch{}, errors.New("unsigned")
		}
		var b types.Batch
		return b, json.Unmarshal(m.Data, &b)
	}}
	return &fixture{st: st, sub: sub, rb: rb, id: id}
}

// A rebuild writes every signed batch of the execution once (a duplicate
// publish and another execution's batches are not written, a forged one
// is refused); a second one writes nothing; a batch already there is left.
func TestRebuildIdempotent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, engine.ExecOK)
	if _, err := f.st.BatchPut(ctx, types.Batch{ID: "b1", ExecutionID: f.id, Events: []types.Event{ev(f.id, types.EvExecutionRequested, "", 1)}}); err != nil {
		t.Fatal(err)
	}
	rep, err := f.rb.Rebuild(ctx, f.id)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Batches != 3 || rep.Written != 2 || rep.Present != 1 || rep.Refused != 1 || rep.EventsBefore != 1 || rep.Events != 4 || !rep.Complete || rep.Scanned != 6 {
		t.Fatalf("report %+v", rep)
	}
	evs, _ := f.st.EventList(ctx, f.id)
	for _, e := range evs {
		if e.Step == "evil" {
			t.Fatal("the unsigned batch was written")
		}
	}
	rep, err = f.rb.Rebuild(ctx, f.id)
	if err != nil || rep.Written != 0 || rep.Present != 3 || rep.Events != 4 {
		t.Fatalf("second rebuild: %+v %v", rep, err)
	}
	if other, _ := f.st.EventList(ctx, "999"); len(other) != 0 {
		t.Fatal("another execution's batch was written")
	}
}

// What a rebuild cannot rebuild is reported: a start past the
// subscription's reach, and the gaps of the log.
func TestRebuildReportsWhatItCannot(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, engine.ExecOK)
	f.rb.Reach = 30 * time.Minute // the execution was created an hour ago
	rep, err := f.rb.Rebuild(ctx, f.id)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Complete || len(rep.Missing) != 1 || !strings.Contains(rep.Missing[0], "past the replay subscription's retention") {
		t.Fatalf("report %+v", rep)
	}
	// An ended execution without its end, a step run without its end,
	// no start.
	rec := &store.Execution{State: &engine.State{Status: engine.ExecFailed}}
	got := replay.Gaps([]types.Event{ev("1", types.EvStepStarted, "a", 1), ev("1", types.EvStepStarted, "b", 2), ev("1", types.EvStepFailed, "b", 3)}, rec)
	want := []string{"no playbook.execution.requested", "no playbook.finished", "step run a#1 started"}
	if len(got) != len(want) {
		t.Fatalf("gaps %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("gap %d = %q, want %q", i, got[i], want[i])
		}
	}
	// A running execution's log is not expected to have its end yet.
	if g := replay.Gaps([]types.Event{ev("1", types.EvExecutionRequested, "", 1), ev("1", types.EvStepStarted, "a", 2)}, &store.Execution{State: &engine.State{Status: engine.ExecRunning}}); len(g) != 0 {
		t.Errorf("gaps of a running execution: %q", g)
	}
}

// One rebuild at a time: a held lease is ErrBusy, nothing is read; an id
// that is neither on record nor an execution id is NotFound.
func TestRebuildBusyAndUnknown(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, engine.ExecOK)
	if err := f.st.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: replay.LeaseExecution, Unit: replay.LeaseUnit, Holder: "other", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rb.Rebuild(ctx, f.id); !errors.Is(err, replay.ErrBusy) {
		t.Fatalf("rebuild while another holds the lease: %v", err)
	}
	if err := f.st.LeaseRelease(ctx, replay.LeaseExecution, replay.LeaseUnit, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rb.Rebuild(ctx, "../x"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("rebuild of a bad id: %v", err)
	}
	if _, err := f.rb.Rebuild(ctx, f.id); err != nil {
		t.Fatalf("rebuild after the lease was released: %v", err)
	}
}
