// Package meter counts the billable cloud operations each function performs,
// per execution (README "Architecture": "every function counts the cloud
// operations it performs per execution, so the price of an execution is
// known, not guessed"). Drivers (store, bus, tasks, results) add to the
// process's Meter as they call the cloud; the bus drains an execution's
// pending counts into the next event batch it publishes for that execution
// (types.Batch.Ops), so counting costs no extra write; a flusher publishes
// the remainder of idle executions. Materialize stores the counts with the
// batch, and `noetl cost` sums them and prices them with Prices.
package meter

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Operation names (the keys of types.Batch.Ops). Byte counts are billable
// bytes (Pub/Sub bills at least 1,000 bytes per request).
const (
	FirestoreRead   = "firestore.read"
	FirestoreWrite  = "firestore.write"
	FirestoreDelete = "firestore.delete"

	PubSubPublish       = "pubsub.publish"
	PubSubPublishBytes  = "pubsub.publish_bytes"
	PubSubDelivery      = "pubsub.delivery"
	PubSubDeliveryBytes = "pubsub.delivery_bytes"

	TasksCreate   = "cloudtasks.create"
	TasksDispatch = "cloudtasks.dispatch"
	TasksDelete   = "cloudtasks.delete"

	GCSClassA = "gcs.class_a" // writes, lists
	GCSClassB = "gcs.class_b" // reads
)

// Invocations and Milliseconds name a function's invocation count and its
// handler time ("functions.execute.invocations", "functions.execute.ms").
func Invocations(function string) string { return "functions." + function + ".invocations" }

// Milliseconds names a function's summed handler duration in ms.
func Milliseconds(function string) string { return "functions." + function + ".ms" }

// PubSubMinBytes is Pub/Sub's billing minimum per publish or delivery.
const PubSubMinBytes = 1000

// Billable returns the billable bytes of a Pub/Sub message of size n.
func Billable(n int) float64 { return float64(max(n, PubSubMinBytes)) }

// Meter accumulates operation counts per execution id. The zero value is
// not usable; use New. Safe for concurrent use.
type Meter struct {
	mu      sync.Mutex
	pending map[string]*entry
}

type entry struct {
	ops   map[string]float64
	since time.Time
}

// New returns an empty meter.
func New() *Meter { return &Meter{pending: map[string]*entry{}} }

// Default is the process's meter (one function instance).
var Default = New()

// Add counts n of op for an execution ("" is ignored: operations that
// belong to no execution are not priced per execution).
func (m *Meter) Add(executionID, op string, n float64) {
	if m == nil || executionID == "" || n == 0 {
		return
	}
	m.mu.Lock()
	e := m.pending[executionID]
	if e == nil {
		e = &entry{ops: map[string]float64{}, since: time.Now()}
		m.pending[executionID] = e
	}
	e.ops[op] += n
	m.mu.Unlock()
}

// Drain removes and returns an execution's pending counts (nil if none).
func (m *Meter) Drain(executionID string) map[string]float64 {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pending[executionID]
	if e == nil {
		return nil
	}
	delete(m.pending, executionID)
	return e.ops
}

// Idle returns the executions whose counts have been pending for longer
// than age, oldest first (the flusher publishes them).
func (m *Meter) Idle(age time.Duration) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	var ids []string
	for id, e := range m.pending {
		if now.Sub(e.since) >= age {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return m.pending[ids[i]].since.Before(m.pending[ids[j]].since) })
	return ids
}

// Merge adds src's counts into dst (allocating dst when nil) and returns it.
func Merge(dst, src map[string]float64) map[string]float64 {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]float64, len(src))
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

type ctxKey struct{}

// With returns a context whose operations are counted by m instead of
// Default (tests use a private meter).
func With(ctx context.Context, m *Meter) context.Context { return context.WithValue(ctx, ctxKey{}, m) }

// From returns the context's meter (Default when none).
func From(ctx context.Context) *Meter {
	if m, ok := ctx.Value(ctxKey{}).(*Meter); ok && m != nil {
		return m
	}
	return Default
}

// Scope counts operations of one execution on one meter.
type Scope struct {
	m  *Meter
	id string
}

// For returns the scope of an execution on the context's meter.
func For(ctx context.Context, executionID string) Scope { return Scope{From(ctx), executionID} }

// Add counts n of op.
func (s Scope) Add(op string, n float64) { s.m.Add(s.id, op, n) }

// Read counts n Firestore document reads.
func (s Scope) Read(n float64) { s.m.Add(s.id, FirestoreRead, n) }

// Write counts n Firestore document writes.
func (s Scope) Write(n float64) { s.m.Add(s.id, FirestoreWrite, n) }

// Delete counts n Firestore document deletes.
func (s Scope) Delete(n float64) { s.m.Add(s.id, FirestoreDelete, n) }
