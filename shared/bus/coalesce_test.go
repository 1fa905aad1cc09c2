package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/types"
)

// recorder is a driver publish that records the batches it published (as
// acked) and can hold the first publish until released.
type recorder struct {
	mu      sync.Mutex
	acked   []types.Batch
	hold    chan struct{} // the first publish waits for it (nil: none)
	held    chan struct{} // closed when the first publish is waiting
	once    sync.Once
	fail    func(types.Batch) error
	publish int
}

func (r *recorder) Publish(ctx context.Context, b types.Batch) error {
	r.mu.Lock()
	r.publish++
	first := r.publish == 1
	r.mu.Unlock()
	if first && r.hold != nil {
		r.once.Do(func() { close(r.held) })
		<-r.hold
	}
	if r.fail != nil {
		if err := r.fail(b); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.acked = append(r.acked, b)
	r.mu.Unlock()
	return nil
}

// ackedEvents counts the acked events by id.
func (r *recorder) ackedEvents() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for _, b := range r.acked {
		for _, e := range b.Events {
			m[e.EventID]++
		}
	}
	return m
}

func itemBatch(exec string, i int) types.Batch {
	b := types.Batch{ID: fmt.Sprintf("b%d", i), ExecutionID: exec, Source: "execute", TraceParent: "tp", Ops: map[string]float64{"x": 1}}
	for j := range 3 {
		b.Events = append(b.Events, types.NewEvent(types.EvTaskAttemptDone, exec, "execute", time.Unix(0, 0), fmt.Sprint(i), fmt.Sprint(j)))
	}
	return b
}

// TestCoalescerGroupsConcurrentBatches: batches of one execution that
// arrive while its first publish is in flight go out as one message, every
// event once, the operation counts summed, and no caller returns before
// the message holding its events is acked.
func TestCoalescerGroupsConcurrentBatches(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), held: make(chan struct{})}
	c := &bus.Coalescer{Publish: r.Publish}
	ctx := t.Context()
	const n = 20
	errc := make(chan error, n+1)
	call := func(i int) {
		b := itemBatch("e1", i)
		err := c.PublishBatch(ctx, b)
		if err == nil {
			acked := r.ackedEvents()
			for _, e := range b.Events {
				if acked[e.EventID] == 0 {
					err = fmt.Errorf("batch %d returned before its event %s was acked", i, e.EventID)
				}
			}
		}
		errc <- err
	}
	go call(0)
	<-r.held // the first publish is in flight
	for i := 1; i <= n; i++ {
		go call(i)
	}
	// Let the n callers queue behind the held publish.
	waitFor(t, "the callers to queue", func() bool { return c.Waiting("e1") == n })
	close(r.hold)
	for range n + 1 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if len(r.acked) != 2 {
		t.Fatalf("%d messages for %d batches, want 2 (the first alone, the %d that waited together)", len(r.acked), n+1, n)
	}
	m := r.acked[1]
	if len(m.Events) != 3*n || m.Ops["x"] != n || m.ExecutionID != "e1" || m.Source != "execute" || m.TraceParent != "tp" || m.Route {
		t.Fatalf("merged batch: %d events, ops %v, execution %q, source %q, traceparent %q, route %v", len(m.Events), m.Ops, m.ExecutionID, m.Source, m.TraceParent, m.Route)
	}
	for id, k := range r.ackedEvents() {
		if k != 1 {
			t.Fatalf("event %s published %d times", id, k)
		}
	}
	if got := len(r.ackedEvents()); got != 3*(n+1) {
		t.Fatalf("%d events published, want %d", got, 3*(n+1))
	}
}

// TestCoalescerKeepsApart: a route batch, and batches of other
// executions, are never merged.
func TestCoalescerKeepsApart(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), held: make(chan struct{})}
	c := &bus.Coalescer{Publish: r.Publish}
	ctx := t.Context()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.PublishBatch(ctx, itemBatch("e1", 0)) }()
	<-r.held
	for i, exec := range []string{"e2", "e3", "e1"} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = c.PublishBatch(ctx, itemBatch(exec, i+1)) }()
	}
	route := itemBatch("e1", 9)
	route.Route = true
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.PublishBatch(ctx, route) }()
	waitFor(t, "a caller to queue", func() bool { return c.Waiting("e1") == 1 })
	close(r.hold)
	wg.Wait()
	if len(r.acked) != 5 {
		t.Fatalf("%d messages for 5 batches of 3 executions and a route batch, want 5", len(r.acked))
	}
	for _, b := range r.acked {
		if len(b.Events) != 3 {
			t.Fatalf("batch %s of %s has %d events: merged across executions or with a route batch", b.ID, b.ExecutionID, len(b.Events))
		}
	}
}

// TestCoalescerFailedMergeAnswersEach: a merged publish that fails is
// retried batch by batch, so only the batch that cannot be published
// fails its caller.
func TestCoalescerFailedMergeAnswersEach(t *testing.T) {
	bad := itemBatch("e1", 2)
	r := &recorder{hold: make(chan struct{}), held: make(chan struct{}), fail: func(b types.Batch) error {
		for _, e := range b.Events {
			if e.EventID == bad.Events[0].EventID {
				return errs.New(errs.InvalidArgument, "too large")
			}
		}
		return nil
	}}
	c := &bus.Coalescer{Publish: r.Publish}
	ctx := t.Context()
	errs3 := make([]error, 4)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errs3[0] = c.PublishBatch(ctx, itemBatch("e1", 0)) }()
	<-r.held
	for i := 1; i <= 3; i++ {
		b := itemBatch("e1", i)
		if i == 2 {
			b = bad
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs3[i] = c.PublishBatch(ctx, b) }()
	}
	waitFor(t, "the callers to queue", func() bool { return c.Waiting("e1") == 3 })
	close(r.hold)
	wg.Wait()
	for i, err := range errs3 {
		if (i == 2) != (err != nil) {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	if !errs.Is(errs3[2], errs.InvalidArgument) {
		t.Fatalf("the bad batch's error: %v, want InvalidArgument", errs3[2])
	}
}

// TestCoalescerCanceled: a done context publishes nothing; a waiter whose
// context ends returns its error without waiting.
func TestCoalescerCanceled(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), held: make(chan struct{})}
	c := &bus.Coalescer{Publish: r.Publish}
	cctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.PublishBatch(cctx, itemBatch("e1", 0)); !errs.Is(err, errs.Canceled) {
		t.Fatalf("done context: %v, want Canceled", err)
	}
	go func() { _ = c.PublishBatch(t.Context(), itemBatch("e1", 1)) }()
	<-r.held
	wctx, wcancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.PublishBatch(wctx, itemBatch("e1", 2)) }()
	waitFor(t, "a caller to queue", func() bool { return c.Waiting("e1") == 1 })
	wcancel()
	if err := <-done; !errs.Is(err, errs.Canceled) {
		t.Fatalf("waiter canceled: %v, want Canceled", err)
	}
	close(r.hold)
	waitFor(t, "the queue to drain", func() bool { return c.Waiting("e1") == 0 })
	for id := range r.ackedEvents() {
		if id == itemBatch("e1", 2).Events[0].EventID {
			t.Fatal("the canceled waiter's batch was published")
		}
	}
}

// TestCoalescerLingersForIterations: a burst of loop iteration batches
// waits CoalesceLinger before its first publish, so batches arriving in
// that time share its message; a step's batch never waits.
func TestCoalescerLingersForIterations(t *testing.T) {
	r := &recorder{}
	var c *bus.Coalescer
	slept := 0
	c = &bus.Coalescer{Publish: r.Publish, Sleep: func(d time.Duration) {
		if d != bus.CoalesceLinger {
			t.Errorf("slept %v, want %v", d, bus.CoalesceLinger)
		}
		slept++
		waitFor(t, "the burst to queue", func() bool { return c.Waiting("e1") == 5 })
	}}
	var wg sync.WaitGroup
	for i := range 5 {
		b := itemBatch("e1", i)
		for j := range b.Events {
			b.Events[j].Iteration = types.IntPtr(i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.PublishBatch(t.Context(), b); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(r.acked) != 1 || len(r.acked[0].Events) != 15 || slept != 1 {
		t.Fatalf("%d messages, %d waits for a burst of 5 iteration batches, want 1 message of 15 events after 1 wait", len(r.acked), slept)
	}
	if err := c.PublishBatch(t.Context(), itemBatch("e2", 9)); err != nil {
		t.Fatal(err)
	}
	if slept != 1 || len(r.acked) != 2 {
		t.Fatalf("a step's batch: %d waits, %d messages; want no wait", slept, len(r.acked))
	}
}
