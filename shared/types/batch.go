package types

import (
	"sort"
	"time"
)

// Batch is one Pub/Sub message on the "events" topic: the events one
// function produced in one piece of work (a unit of work's run, or one
// transition of the engine), in causal order. A unit's events travel as one
// message (README "Architecture" "What the loop must cost"), so materialize writes
// one document per batch, not one per event. Batches of one execution that
// an instance publishes at the same moment (a loop's items) may travel
// merged into one batch (bus.Coalescer: each batch's events in their
// order, each event still its own), so materialize writes one document for
// them all.
//
// ID is derived from the producer's identity (DeriveID), so a redelivered
// or re-produced batch has the same id and is projected once (the first
// copy wins). Route is set on batches whose boundary event route must apply
// (execution start, cancellation, a boundary execute could not checkpoint);
// it becomes the message attribute route="1" that the route subscription
// filters on. Ops are the cloud operations the producer metered for the
// execution since its last batch (cost accounting: operation name → count,
// see shared/meter), carried here so that counting them costs no extra
// write.
type Batch struct {
	ID          string             `json:"batch_id"`
	ExecutionID string             `json:"execution_id"`
	Source      string             `json:"source"`
	Route       bool               `json:"route,omitempty"`
	Events      []Event            `json:"events"`
	Ops         map[string]float64 `json:"ops,omitempty"`
	// TraceParent is the W3C trace context of the producer.
	TraceParent string `json:"traceparent,omitempty"`
}

// Boundary returns the batch's boundary event (step.done, step.failed or
// loop.done), if any: the last one when a batch holds several.
func (b Batch) Boundary() (Event, bool) {
	for i := len(b.Events) - 1; i >= 0; i-- {
		if b.Events[i].EventType.IsBoundary() {
			return b.Events[i], true
		}
	}
	return Event{}, false
}

// StampClocks assigns consecutive clock values after base to evs (base+1,
// base+2, ...) and returns the last one (base when evs is empty).
//
// Clocks are hybrid logical clocks (HLC): a producer takes as base the
// larger of its causes' clocks and its wall clock in microseconds
// (HLC(base, now)), so every event's causes have smaller clocks (causal
// order, whatever the machines' clock skew) and events unrelated by
// causality order as they happened in time.
func StampClocks(evs []Event, base int64) int64 {
	for i := range evs {
		base++
		evs[i].Clock = base
	}
	return base
}

// HLC returns the base of the next clock values: the larger of the last
// clock and now in microseconds since the Unix epoch.
func HLC(last int64, now time.Time) int64 {
	return max(last, now.UnixMicro())
}

// MaxClock returns the largest Clock in evs (0 when empty).
func MaxClock(evs []Event) int64 {
	var m int64
	for _, e := range evs {
		if e.Clock > m {
			m = e.Clock
		}
	}
	return m
}

// Projected is one event as stored by the events projection: the event
// plus its batch id and position, which break ties between events with the
// same Clock (concurrent events of parallel units).
type Projected struct {
	Event
	BatchID string
	Index   int
}

// EventsInOrder returns an execution's projected events in one causal
// order and fills Seq (1-based) and PrevEventID along it: events sort by
// Clock, then batch id, then position in the batch. Because every event's
// causes have a smaller Clock, the order respects causality whatever order
// the batches were projected in; the chain is complete by construction.
// Duplicate event ids (a re-run unit whose batch id differs) keep their
// first occurrence in that order.
func EventsInOrder(ps []Projected) []Event {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Clock != b.Clock {
			return a.Clock < b.Clock
		}
		if a.BatchID != b.BatchID {
			return a.BatchID < b.BatchID
		}
		return a.Index < b.Index
	})
	out := make([]Event, 0, len(ps))
	seen := make(map[string]bool, len(ps))
	prev := ""
	for _, p := range ps {
		if seen[p.EventID] {
			continue
		}
		seen[p.EventID] = true
		e := p.Event
		e.Seq = int64(len(out) + 1)
		e.PrevEventID = prev
		prev = e.EventID
		out = append(out, e)
	}
	return out
}
