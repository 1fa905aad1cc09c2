// Package bustest is the conformance suite of bus.Publisher (in the manner
// of google/go-cloud's pubsub drivertest): the Pub/Sub driver (pubsubbus.PubSub,
// on the Pub/Sub emulator and on the in-process pstest server) and the
// in-memory fake every engine test uses (controltest.Publisher) run the
// same cases, through the interface and what arrives on the topics, so the
// fake cannot drift from the driver.
//
// The contract (bus.Publisher):
//   - PublishBatch publishes a batch on the events topic as the messages
//     bus.BatchMessages makes: one, or several for a batch over
//     bus.MaxMessageBytes (split by events, ids derived from the batch id,
//     the route mark only on the part with the boundary event), each with
//     the attributes execution_id and batch_id, route "1" for a batch route
//     must apply, the publisher's trace context and signature; the
//     execution's pending operation counts of the context's meter ride in
//     the first part.
//   - PublishCommands publishes one message per command on the commands
//     topic, with the attributes execution_id and step; a command without
//     a trace parent carries the publisher's.
//   - Nothing is deduplicated: a batch published twice arrives twice
//     (consumers dedup by id). No order is promised.
//   - Batches of one execution published concurrently (not for route) may
//     share a message (bus.Coalescer: one merged batch, each batch's events
//     in their order); every event arrives once, and each PublishBatch
//     returns once the message holding its events is acked.
//   - A message larger than Pub/Sub's limit (bus.MaxPubSubMessageBytes)
//     fails with code InvalidArgument; a done context with code Canceled
//     or DeadlineExceeded.
//   - Messages decode as the engine decodes them: numbers keep their kind
//     (jsonx), secrets are never added or removed.
package bustest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// Topic names one of the bus's two topics.
type Topic string

// The topics.
const (
	Events   Topic = bus.EventsTopic
	Commands Topic = bus.CommandsTopic
)

// Message is one message as it arrived on a topic.
type Message struct {
	Data       []byte
	Attributes map[string]string
}

// Harness is one bus under test, with fresh topics.
type Harness struct {
	// Publisher is the driver or fake under test. Its messages must be
	// signed with Signer (nil: unsigned).
	Publisher bus.Publisher
	Signer    *sign.Signer
	// Received returns the messages that arrived on topic so far, waiting
	// until at least n did (or ctx ends: then it returns what arrived). A
	// transport that may redeliver returns each message once.
	Received func(ctx context.Context, topic Topic, n int) ([]Message, error)
}

// opTimeout bounds each case.
const opTimeout = time.Minute

// quiet is how long a case waits to see that nothing more arrives.
const quiet = 300 * time.Millisecond

// Run runs the suite: newHarness is called once per case and must return
// a bus with topics no other case publishes on.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(ctx context.Context, t *testing.T, h Harness)
	}{
		{"BatchArrivesWithAttributes", testBatch},
		{"BatchWithoutRoute", testBatchNoRoute},
		{"BatchOverMessageLimitIsSplit", testSplit},
		{"BatchCarriesPendingOps", testOps},
		{"CommandsOnePerMessage", testCommands},
		{"NoCommandsNoMessage", testNoCommands},
		{"TraceContext", testTrace},
		{"DuplicatesArriveTwice", testDuplicates},
		{"OversizedMessageIsInvalidArgument", testOversized},
		{"CanceledContext", testCanceled},
		{"ConcurrentBatchesEachEventOnce", testConcurrent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
			defer cancel()
			c.fn(ctx, t, h)
		})
	}
}

// event returns an event of execution id with a payload of about size
// bytes and numbers of both kinds.
func event(id string, typ types.EventType, i, size int) types.Event {
	e := types.NewEvent(typ, id, "bustest", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), types.DeriveIDPart(i))
	e.Clock = int64(100 + i)
	e.Step, e.StepRun = "fetch", 1
	e.Payload = map[string]any{"n": int64(i), "f": 0.5, "list": []any{int64(1), []any{"x", nil}}, "blob": strings.Repeat("b", size)}
	return e
}

func batchOf(id string, n, size int, route bool) types.Batch {
	b := types.Batch{ID: "batch-" + id, ExecutionID: id, Source: "bustest", Route: route}
	for i := range n {
		typ := types.EvTaskAttemptDone
		if i == n-1 {
			typ = types.EvStepDone
		}
		b.Events = append(b.Events, event(id, typ, i, size))
	}
	return b
}

// uniqueID returns an execution id unique to the case.
func uniqueID(t *testing.T) string {
	return fmt.Sprintf("bustest-%s-%d", strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()), time.Now().UnixNano())
}

func received(ctx context.Context, t *testing.T, h Harness, topic Topic, n int) []Message {
	t.Helper()
	msgs, err := h.Received(ctx, topic, n)
	if err != nil {
		t.Fatalf("Received(%s): %v", topic, err)
	}
	return msgs
}

// settled waits for n messages on topic, then for a quiet period, and
// fails unless exactly n arrived.
func settled(ctx context.Context, t *testing.T, h Harness, topic Topic, n int) []Message {
	t.Helper()
	msgs := received(ctx, t, h, topic, n)
	qctx, cancel := context.WithTimeout(ctx, quiet)
	defer cancel()
	more := received(qctx, t, h, topic, n+1)
	if len(more) != n || len(msgs) != n {
		t.Fatalf("%d messages on %s, want %d", len(more), topic, n)
	}
	return more
}

// decodeBatch checks a message's signature and decodes its batch as
// the engine's consumers do.
func decodeBatch(t *testing.T, h Harness, m Message) types.Batch {
	t.Helper()
	verify(t, h, sign.Batch, m)
	var b types.Batch
	if err := jsonx.Unmarshal(m.Data, &b); err != nil {
		t.Fatalf("undecodable batch %q: %v", m.Data, err)
	}
	if m.Attributes[bus.AttrExecutionID] != b.ExecutionID || m.Attributes[bus.AttrBatchID] != b.ID {
		t.Fatalf("attributes %v of batch %s of %s", m.Attributes, b.ID, b.ExecutionID)
	}
	if (m.Attributes[bus.AttrRoute] == "1") != b.Route || (!b.Route && hasKey(m.Attributes, bus.AttrRoute)) {
		t.Fatalf("route attribute %q for a batch with route %v", m.Attributes[bus.AttrRoute], b.Route)
	}
	return b
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func verify(t *testing.T, h Harness, purpose sign.Purpose, m Message) {
	t.Helper()
	if h.Signer == nil {
		return
	}
	if err := h.Signer.Verify(purpose, m.Data, m.Attributes[sign.Attribute]); err != nil {
		t.Fatalf("message not signed by the publisher's key: %v", err)
	}
}

// wire is v as it comes back from JSON (numbers by the engine's rule).
func wire(t *testing.T, v any, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := jsonx.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

func testBatch(ctx context.Context, t *testing.T, h Harness) {
	id := uniqueID(t)
	b := batchOf(id, 3, 10, true)
	if err := h.Publisher.PublishBatch(ctx, b); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	msgs := settled(ctx, t, h, Events, 1)
	got := decodeBatch(t, h, msgs[0])
	var want types.Batch
	wire(t, b, &want)
	got.Ops, want.Ops = nil, nil // the meter's counts: BatchCarriesPendingOps
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("batch arrived as\n%+v\nwant\n%+v", got, want)
	}
}

func testBatchNoRoute(ctx context.Context, t *testing.T, h Harness) {
	b := batchOf(uniqueID(t), 1, 10, false)
	if err := h.Publisher.PublishBatch(ctx, b); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	if got := decodeBatch(t, h, settled(ctx, t, h, Events, 1)[0]); got.Route || got.ID != b.ID {
		t.Fatalf("batch %s route %v, want %s without route", got.ID, got.Route, b.ID)
	}
}

func testSplit(ctx context.Context, t *testing.T, h Harness) {
	id := uniqueID(t)
	b := batchOf(id, 8, 60<<10, true) // ~480 KiB: four parts
	if err := h.Publisher.PublishBatch(ctx, b); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	want, err := bus.EncodeBatch(meter.New(), nil, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := settled(ctx, t, h, Events, len(want))
	var events []string
	routes := 0
	ids := map[string]bool{}
	for _, m := range msgs {
		if len(m.Data) > bus.MaxMessageBytes {
			t.Errorf("a part of %d bytes, over bus.MaxMessageBytes", len(m.Data))
		}
		part := decodeBatch(t, h, m)
		ids[part.ID] = true
		if part.Route {
			routes++
			if _, ok := part.Boundary(); !ok {
				t.Errorf("part %s is marked for route without the boundary event", part.ID)
			}
		}
		for _, e := range part.Events {
			events = append(events, e.EventID)
		}
	}
	if len(ids) != len(want) || ids[b.ID] || routes != 1 {
		t.Fatalf("parts %v (%d marked for route): want %d parts with ids derived from %s, one for route", ids, routes, len(want), b.ID)
	}
	var all []string
	for _, e := range b.Events {
		all = append(all, e.EventID)
	}
	slices.Sort(events)
	slices.Sort(all)
	if !slices.Equal(events, all) {
		t.Fatalf("events across the parts %v, want each of %v once", events, all)
	}
}

func testOps(ctx context.Context, t *testing.T, h Harness) {
	id := uniqueID(t)
	m := meter.New()
	m.Add(id, meter.FirestoreWrite, 3)
	mctx := meter.With(ctx, m)
	if err := h.Publisher.PublishBatch(mctx, batchOf(id, 1, 10, false)); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	got := decodeBatch(t, h, settled(ctx, t, h, Events, 1)[0])
	if got.Ops[meter.FirestoreWrite] != 3 {
		t.Fatalf("ops %v: the execution's pending counts must ride in its batch", got.Ops)
	}
	if left := m.Drain(id); left[meter.FirestoreWrite] != 0 || left[meter.PubSubPublish] != 1 {
		t.Fatalf("meter after the publish %v: the counts left with the batch, the publish itself is counted", left)
	}
}

func testCommands(ctx context.Context, t *testing.T, h Harness) {
	id := uniqueID(t)
	cmds := []types.Command{
		{ID: "c1", Kind: types.CmdRunStep, ExecutionID: id, Step: "a", StepRun: 1, Args: map[string]any{"n": int64(1), "f": 2.5},
			NotBefore: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		{ID: "c2", Kind: types.CmdRunStep, ExecutionID: id, Step: "b", StepRun: 2, Iteration: types.IntPtr(3), Item: []any{int64(7), "x"}},
	}
	if err := h.Publisher.PublishCommands(ctx, cmds...); err != nil {
		t.Fatalf("PublishCommands: %v", err)
	}
	msgs := settled(ctx, t, h, Commands, 2)
	got := map[string]types.Command{}
	for _, m := range msgs {
		verify(t, h, sign.Command, m)
		var c types.Command
		if err := jsonx.Unmarshal(m.Data, &c); err != nil {
			t.Fatalf("undecodable command %q: %v", m.Data, err)
		}
		if m.Attributes[bus.AttrExecutionID] != c.ExecutionID || m.Attributes[bus.AttrStep] != c.Step {
			t.Fatalf("attributes %v of command %s", m.Attributes, c.ID)
		}
		got[c.ID] = c
	}
	for _, c := range cmds {
		var want types.Command
		wire(t, c, &want)
		if !reflect.DeepEqual(got[c.ID], want) {
			t.Errorf("command %s arrived as\n%+v\nwant\n%+v", c.ID, got[c.ID], want)
		}
	}
}

func testNoCommands(ctx context.Context, t *testing.T, h Harness) {
	if err := h.Publisher.PublishCommands(ctx); err != nil {
		t.Fatalf("PublishCommands(): %v", err)
	}
	settled(ctx, t, h, Commands, 0)
}

func testTrace(ctx context.Context, t *testing.T, h Harness) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tctx := telemetry.WithTraceParent(ctx, tp)
	id := uniqueID(t)
	if err := h.Publisher.PublishBatch(tctx, batchOf(id, 1, 10, false)); err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	if err := h.Publisher.PublishCommands(tctx, types.Command{ID: "c", ExecutionID: id, Step: "s"}); err != nil {
		t.Fatalf("PublishCommands: %v", err)
	}
	bm := settled(ctx, t, h, Events, 1)[0]
	cm := settled(ctx, t, h, Commands, 1)[0]
	for _, m := range []Message{bm, cm} {
		if m.Attributes["traceparent"] != tp {
			t.Errorf("attributes %v: want the publisher's traceparent", m.Attributes)
		}
	}
	var c types.Command
	if err := jsonx.Unmarshal(cm.Data, &c); err != nil || c.TraceParent != tp {
		t.Errorf("command trace parent %q (%v): want the publisher's", c.TraceParent, err)
	}
}

func testDuplicates(ctx context.Context, t *testing.T, h Harness) {
	b := batchOf(uniqueID(t), 1, 10, false)
	for range 2 {
		if err := h.Publisher.PublishBatch(ctx, b); err != nil {
			t.Fatalf("PublishBatch: %v", err)
		}
	}
	for _, m := range settled(ctx, t, h, Events, 2) {
		if got := decodeBatch(t, h, m); got.ID != b.ID {
			t.Fatalf("batch %s, want %s", got.ID, b.ID)
		}
	}
}

func testOversized(ctx context.Context, t *testing.T, h Harness) {
	b := batchOf(uniqueID(t), 1, bus.MaxPubSubMessageBytes+1024, false) // one event cannot be split
	err := h.Publisher.PublishBatch(ctx, b)
	if !errs.Is(err, errs.InvalidArgument) {
		t.Fatalf("PublishBatch of a %d-byte message: %v (code %s), want InvalidArgument", bus.MaxPubSubMessageBytes+1024, err, errs.CodeOf(err))
	}
}

func testCanceled(ctx context.Context, t *testing.T, h Harness) {
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	id := uniqueID(t)
	if err := h.Publisher.PublishBatch(cctx, batchOf(id, 1, 10, false)); !errs.Is(err, errs.Canceled) {
		t.Errorf("PublishBatch with a canceled context: %v (code %s), want Canceled", err, errs.CodeOf(err))
	}
	if err := h.Publisher.PublishCommands(cctx, types.Command{ExecutionID: id, Step: "s"}); !errs.Is(err, errs.Canceled) {
		t.Errorf("PublishCommands with a canceled context: %v (code %s), want Canceled", err, errs.CodeOf(err))
	}
}

func testConcurrent(ctx context.Context, t *testing.T, h Harness) {
	id := uniqueID(t)
	const n = 30
	want := map[string]bool{}
	errc := make(chan error, n)
	for i := range n {
		b := batchOf(id, 3, 10, false)
		b.ID = fmt.Sprintf("batch-%s-%d", id, i)
		for j := range b.Events {
			b.Events[j].EventID = fmt.Sprintf("%s-%d-%d", id, i, j)
			want[b.Events[j].EventID] = true
		}
		go func() { errc <- h.Publisher.PublishBatch(ctx, b) }()
	}
	for range n {
		if err := <-errc; err != nil {
			t.Fatalf("PublishBatch: %v", err)
		}
	}
	got := map[string]int{}
	events := 0
	var msgs []Message
	for events < 3*n && ctx.Err() == nil {
		msgs = received(ctx, t, h, Events, len(msgs)+1)
		got, events = map[string]int{}, 0
		for _, m := range msgs {
			b := decodeBatch(t, h, m)
			if b.ExecutionID != id || b.Route {
				t.Fatalf("message of batch %s: execution %s, route %v", b.ID, b.ExecutionID, b.Route)
			}
			for _, e := range b.Events {
				got[e.EventID]++
				events++
			}
		}
	}
	if len(msgs) > n {
		t.Fatalf("%d messages for %d batches", len(msgs), n)
	}
	for e := range want {
		if got[e] != 1 {
			t.Fatalf("event %s arrived %d times, want once", e, got[e])
		}
	}
	if events != 3*n {
		t.Fatalf("%d events arrived, want %d", events, 3*n)
	}
	t.Logf("%d batches arrived in %d messages", n, len(msgs))
}
