package subscribe

import (
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
)

// Phase is a circuit breaker's phase (RFC §8.1).
type Phase string

// Phases.
const (
	// Closed: dispatch normally.
	Closed Phase = "closed"
	// Open: spool (or refuse) incoming messages.
	Open Phase = "open"
	// HalfOpen: one dispatch is let through to test recovery (passive
	// downstreams only).
	HalfOpen Phase = "half_open"
)

// Decision is what to do with the next message of a downstream.
type Decision int

// Decisions.
const (
	// Dispatch: start the execution.
	Dispatch Decision = iota
	// Hold: the circuit is open: spool or refuse.
	Hold
	// Probe: start the execution as the half-open test; report its
	// outcome with Success or Failure.
	Probe
)

// Breaker is one downstream's circuit breaker: a pure state machine
// (noetl-tools spool/circuit.rs) fed by dispatch outcomes (Success,
// Failure) and active probes.
//
//	Closed ──TripAfter consecutive failures──▶ Open
//	Open ──ProbeAfter elapsed (passive downstream)──▶ HalfOpen: one Probe
//	HalfOpen ──success──▶ Closed; ──failure──▶ Open (new window)
//	Open ──successful active probe──▶ Closed
//
// A downstream with an active probe (http, tcp, nats) leaves Open only on
// a successful probe: the probe gates recovery, so messages are not
// dispatched into a downstream the probe still sees down (RFC §8: "the
// probe gates the drain"). Breaker is not safe for concurrent use; the
// service serializes access per subscription.
type Breaker struct {
	TripAfter  int
	ProbeAfter time.Duration
	// Active is true for a downstream with an active probe.
	Active bool

	phase    Phase
	failures int
	openedAt time.Time
	trips    int
}

// NewBreaker returns a closed breaker for downstream d of circuit c.
func NewBreaker(c dsl.CircuitConfig, d dsl.Downstream) *Breaker {
	return &Breaker{TripAfter: max(c.TripAfter, 1), ProbeAfter: time.Duration(c.ProbeAfterMS) * time.Millisecond, Active: d.Probe != "passive", phase: Closed}
}

// Phase returns the current phase.
func (b *Breaker) Phase() Phase { return b.phase }

// Trips counts the transitions to Open.
func (b *Breaker) Trips() int { return b.trips }

// OpenFor is how long the circuit has been open (0 when closed).
func (b *Breaker) OpenFor(now time.Time) time.Duration {
	if b.phase == Closed {
		return 0
	}
	return now.Sub(b.openedAt)
}

// Decide says what to do with the next message at now. An open breaker of
// a passive downstream turns half-open once ProbeAfter has elapsed and
// hands out exactly one Probe; later calls Hold until it resolves.
func (b *Breaker) Decide(now time.Time) Decision {
	switch b.phase {
	case Closed:
		return Dispatch
	case HalfOpen:
		return Hold
	}
	if !b.Active && now.Sub(b.openedAt) >= b.ProbeAfter {
		b.phase = HalfOpen
		return Probe
	}
	return Hold
}

// Success records a successful dispatch or probe: the failure count is
// reset and the circuit closes. It reports whether this closed it.
func (b *Breaker) Success() bool {
	b.failures = 0
	if b.phase == Closed {
		return false
	}
	b.phase = Closed
	b.openedAt = time.Time{}
	return true
}

// Failure records a failed dispatch or probe at now: TripAfter consecutive
// failures open a closed circuit; a failed half-open test reopens it with
// a new window. It reports whether the circuit opened now.
func (b *Breaker) Failure(now time.Time) bool {
	b.failures++
	switch b.phase {
	case Closed:
		if b.failures >= b.TripAfter {
			b.open(now)
			return true
		}
	case HalfOpen:
		b.open(now)
	}
	return false
}

// Release gives back an unused half-open test: the breaker is open again
// with its window already elapsed, so the next Decide hands out a Probe.
func (b *Breaker) Release() {
	if b.phase == HalfOpen {
		b.phase = Open
	}
}

func (b *Breaker) open(now time.Time) {
	if b.phase != Open {
		b.trips++
	}
	b.phase = Open
	b.openedAt = now
}
