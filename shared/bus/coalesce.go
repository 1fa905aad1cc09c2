package bus

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/types"
)

// Coalescing (group commit of event batches). A loop's items end by the
// hundreds per second in one instance, each with one small batch of events
// (loop.iteration.started, the task's events, loop.iteration.done); one
// message per batch costs a Pub/Sub publish, a push delivery, a
// materialize invocation and a Firestore write per item. The Coalescer
// publishes the batches that callers hand it for the same execution while
// an earlier publish of that execution is in flight as ONE message (one
// merged batch, so one materialize document): the first batch of a burst
// goes out at once (no added latency when nothing else is waiting), the
// batches that arrive during its publish wait for it and then go out
// together, and so on; only a burst of a loop iteration's batches starts
// after a short wait (CoalesceLinger), so that the burst's first message
// is shared too. Every caller still returns only after the message
// holding its events is acked by the server, so the durability boundary
// (PublishBatch returns after the ack) is unchanged; a per-item event stays
// a per-item event (only its message and its document are shared).
//
// What is never merged: a batch route must apply (Route: its boundary is
// one transition), batches of different executions, sources, trace
// parents or meters. A merged publish that fails is retried as the single
// batches, so each caller gets its own batch's answer (an oversized event
// fails only its own caller).

// CoalesceMaxEvents bounds the events of one merged batch (EncodeBatch
// still splits a message over MaxMessageBytes).
const CoalesceMaxEvents = 256

// CoalesceLinger is how long the first batch of a burst waits for others
// when it holds a loop iteration's events: a loop's items end by the
// hundreds per second, and without it a burst's first publish goes alone
// and only those arriving during it share the next. Other batches (a
// step's, a transition's) never wait.
const CoalesceLinger = 2 * time.Millisecond

// coalescePublishTimeout bounds a merged publish: it runs on behalf of
// several callers, so no one caller's context cancels it.
const coalescePublishTimeout = time.Minute

// Coalescer groups concurrent event batches of one execution into one
// message (see above). Publish is the driver's publish of one batch. The
// zero value with Publish set is ready; safe for concurrent use.
type Coalescer struct {
	Publish func(ctx context.Context, b types.Batch) error
	// Sleep waits CoalesceLinger (nil: time.Sleep; tests pace it).
	Sleep func(time.Duration)

	mu     sync.Mutex
	groups map[coalesceKey]*coalesceGroup
}

type coalesceKey struct {
	m           *meter.Meter
	executionID string
	source      string
	traceParent string
}

type coalesceGroup struct {
	queue []*coalesceWaiter
}

type coalesceWaiter struct {
	ctx  context.Context
	b    types.Batch
	done chan error
}

// PublishBatch publishes b, in one message with the other batches of its
// execution that wait at the same time (route batches alone), and returns
// once that message is acked (or the error of b's publish; ctx's error
// when ctx ends first: b may still be published, which a retry's
// duplicate events survive, as they dedup by event id).
func (c *Coalescer) PublishBatch(ctx context.Context, b types.Batch) error {
	if err := ctx.Err(); err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "bus: publish")
	}
	if b.Route || len(b.Events) == 0 {
		return c.Publish(ctx, b)
	}
	w := &coalesceWaiter{ctx: ctx, b: b, done: make(chan error, 1)}
	k := coalesceKey{meter.From(ctx), b.ExecutionID, b.Source, b.TraceParent}
	c.mu.Lock()
	if c.groups == nil {
		c.groups = map[coalesceKey]*coalesceGroup{}
	}
	g, busy := c.groups[k]
	if !busy {
		g = &coalesceGroup{}
		c.groups[k] = g
	}
	g.queue = append(g.queue, w)
	c.mu.Unlock()
	if !busy {
		// This caller leads the burst: it publishes its own batch now
		// and, while others queued meanwhile, theirs, in a goroutine so
		// that it returns as soon as its own message is acked.
		go c.drain(k, g)
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return errs.Wrap(errs.CodeOf(ctx.Err()), ctx.Err(), "bus: publish")
	}
}

// drain publishes a group's queue, a merged batch at a time, until it is
// empty (then the group is gone and the next batch starts a new one).
func (c *Coalescer) drain(k coalesceKey, g *coalesceGroup) {
	c.mu.Lock()
	linger := len(g.queue) > 0 && iterationBatch(g.queue[0].b)
	c.mu.Unlock()
	if linger {
		if c.Sleep != nil {
			c.Sleep(CoalesceLinger)
		} else {
			time.Sleep(CoalesceLinger)
		}
	}
	for {
		c.mu.Lock()
		var take []*coalesceWaiter
		events := 0
		for len(g.queue) > 0 {
			w := g.queue[0]
			if len(take) > 0 && events+len(w.b.Events) > CoalesceMaxEvents {
				break
			}
			g.queue = g.queue[1:]
			if w.ctx.Err() != nil {
				w.done <- errs.Wrap(errs.CodeOf(w.ctx.Err()), w.ctx.Err(), "bus: publish")
				continue // its caller has gone: nothing to publish for it
			}
			take = append(take, w)
			events += len(w.b.Events)
		}
		if len(take) == 0 {
			delete(c.groups, k)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.publishGroup(take)
	}
}

// publishGroup publishes ws as one merged batch (ws[0]'s context gives
// the meter and the trace attributes) and answers each; a failed merged
// publish is retried batch by batch.
func (c *Coalescer) publishGroup(ws []*coalesceWaiter) {
	if len(ws) == 1 {
		ws[0].done <- c.Publish(ws[0].ctx, ws[0].b)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ws[0].ctx), coalescePublishTimeout)
	defer cancel()
	bs := make([]types.Batch, len(ws))
	for i, w := range ws {
		bs[i] = w.b
	}
	if err := c.Publish(ctx, MergeBatches(bs)); err == nil {
		for _, w := range ws {
			w.done <- nil
		}
		return
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.done <- c.Publish(w.ctx, w.b)
		}()
	}
	wg.Wait()
}

// MergeBatches returns one batch holding the events of bs (batches of one
// execution, source and trace parent, none for route), in bs's order, each
// batch's events in their order, with their operation counts summed. Its
// id derives from bs's ids (sorted), so the same batches merge to the same
// id (a redelivered message is projected once). One batch is returned as
// it is.
func MergeBatches(bs []types.Batch) types.Batch {
	if len(bs) == 1 {
		return bs[0]
	}
	ids := make([]string, 0, len(bs)+1)
	ids = append(ids, "merged")
	n := 0
	for _, b := range bs {
		ids = append(ids, b.ID)
		n += len(b.Events)
	}
	sort.Strings(ids[1:])
	m := types.Batch{ID: types.DeriveID(ids...), ExecutionID: bs[0].ExecutionID, Source: bs[0].Source, TraceParent: bs[0].TraceParent,
		Events: make([]types.Event, 0, n)}
	for _, b := range bs {
		m.Events = append(m.Events, b.Events...)
		m.Ops = meter.Merge(m.Ops, b.Ops)
	}
	return m
}

// iterationBatch reports a batch of a loop iteration's events.
func iterationBatch(b types.Batch) bool {
	return len(b.Events) > 0 && b.Events[0].Iteration != nil
}
