package control

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// Deferred step ends. Inside a chain (step continuation, continue.go) the
// end of a unit that ran without a lease — a read-only unit: running it
// twice is harmless (engine.SideEffecting) — whose transition releases
// exactly one next unit, read-only too, that the chain runs at once, need
// not commit on its own. Its transition is applied to the state in
// memory, the next unit runs from that state, and the deferred ends are
// committed together with a later end, in one commit: one write of the
// execution document and one outbox for up to Deferral.Max ends, deferred
// over at most MaxDeferAge, instead of one of each per end — as Temporal
// records the local activities a workflow task ran with that task's
// completion. A deferred end is committed later exactly as it was applied
// (ApplyParams.Now: its events carry the clocks its next unit saw).
//
// The deferred ends are committed (settle) before the invocation takes
// any other durable step for the execution (Enqueue, FileUnit, Apply,
// Stop, Replay, an iteration's end: a unit that hands off, retries or
// parks finds its own step run committed), when a later end cannot be
// deferred (its next unit side-effecting, a fan-out, the execution's
// end), when the chain gives up its next unit, and before the invocation
// answers its delivery. A crash loses only deferred ends: the
// invocation's Cloud Task, not acknowledged, comes again and runs their
// read-only units again from the last commit, as after a crash of any
// unit run without a lease. The group's outbox is stored under its first
// end's outbox id, so the recovery of a committed group is the recovery
// of that end: the first unit's redelivery finds it ended and replays
// the group's outbox (its events and the next unit's safety net).
//
// A commit that finds the execution changed since the group's base
// (another branch's commit, a cancellation) applies the first end alone
// to the fresh state, as a commit of that end alone would, and the unit
// it released runs again as a Cloud Task: the later ends' read-only runs
// are dropped, and the chain stops.

// Deferral holds an invocation's deferred step ends (WithDeferral). Max
// bounds the ends one commit carries (0: none is deferred). Safe for
// concurrent use.
type Deferral struct {
	Max int
	// op serializes the commits of deferred ends (Settle, giveUp): a
	// give-up finds either the ends or the net of their commit.
	op sync.Mutex
	// OnDrop, when set, is called when a commit drops deferred ends
	// (Dropped), inside that commit, before anything it releases is
	// dispatched: the caller forgets that their units ended.
	OnDrop func()

	mu sync.Mutex
	// execID and committed are the execution of the ends and its state as
	// last committed (with its update time), before the first of them.
	execID    string
	committed *store.Execution
	ends      []deferredEnd
	// first is when the first of ends was deferred (MaxDeferAge).
	first time.Time
	// dropped: a commit dropped deferred ends (Dropped).
	dropped bool
	// closed: a Settle committed ends while their last unit still ran
	// (its state in memory is now older than the document): nothing more
	// is deferred; net is that unit's safety net, created if the caller
	// gives it up.
	closed bool
	net    *Continuation
}

// MaxDeferAge bounds how long an end stays deferred: an end is not
// deferred when the first of the ends waiting was deferred longer ago
// (so the execution's state and log trail its units by about that much
// at most, and a crash runs about that much work again).
const MaxDeferAge = time.Second

// deferredEnd is one deferred end: its transition, its unit, and the key
// of the unit it released, run next in the invocation.
type deferredEnd struct {
	p    ApplyParams
	unit string
	next string
}

type deferralKey struct{}

// WithDeferral returns ctx carrying d: CompleteStep may defer step ends
// made under it, and every other durable operation of the Control under
// it commits them first (Settle).
func WithDeferral(ctx context.Context, d *Deferral) context.Context {
	return context.WithValue(ctx, deferralKey{}, d)
}

// outside returns ctx without its Deferral: the commit of deferred ends
// carries itself out (a Replay inside it must not settle again).
func outside(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferralKey{}, (*Deferral)(nil))
}

func deferralOf(ctx context.Context) *Deferral {
	d, _ := ctx.Value(deferralKey{}).(*Deferral)
	return d
}

// Pending is the number of ends d holds uncommitted.
func (d *Deferral) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ends)
}

// Dropped reports that a commit met a changed execution and dropped
// deferred ends, the last end included (see the top of this file): their
// units run again, so the caller must not take their next deliveries for
// duplicates of runs that ended.
func (d *Deferral) Dropped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropped
}

func (d *Deferral) drop() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.dropped = true
	d.mu.Unlock()
	if d.OnDrop != nil {
		d.OnDrop()
	}
}

// Dropped reports that the Deferral under ctx (WithDeferral) dropped
// deferred ends (Deferral.Dropped); false without one.
func Dropped(ctx context.Context) bool {
	d := deferralOf(ctx)
	return d != nil && d.Dropped()
}

// holdsOther reports that d holds ends of an execution other than id.
func (d *Deferral) holdsOther(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ends) > 0 && d.execID != id
}

// take empties d, returning its ends and their base.
func (d *Deferral) take() ([]deferredEnd, *store.Execution) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ends, base := d.ends, d.committed
	d.ends, d.committed, d.execID, d.first = nil, nil, "", time.Time{}
	return ends, base
}

// cloneExecution copies rec's state (a JSON round trip, as a store read
// makes it); Source and Files are shared (never mutated).
func cloneExecution(rec *store.Execution) (*store.Execution, error) {
	b, err := json.Marshal(rec.State)
	if err != nil {
		return nil, fmt.Errorf("control: copy state: %w", err)
	}
	st := &engine.State{}
	if err := jsonx.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("control: copy state: %w", err)
	}
	store.NormState(st)
	return &store.Execution{State: st, Source: rec.Source, Files: rec.Files, UpdateTime: rec.UpdateTime}, nil
}

// deferEnd defers the end p of unit when it may be (see the top of this
// file), returning the continuation to run next from the state in memory;
// ok false leaves the end to commit.
func (c *Control) deferEnd(ctx context.Context, d *Deferral, p ApplyParams, unit, holder string) (k *Continuation, ok bool) {
	if d == nil || d.Max <= 0 || holder != "" || p.SafetyNet <= 0 || p.ContinueLease == nil || p.ContinueLease.Leased == nil ||
		p.Base == nil || p.Base.State == nil || p.ReplayOf != "" || p.Discard != nil {
		return nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || len(d.ends) >= d.Max || (len(d.ends) > 0 && (d.execID != p.ExecutionID || c.now().Sub(d.first) > MaxDeferAge)) ||
		(len(d.ends) == 0 && p.Base.UpdateTime.IsZero()) {
		return nil, false
	}
	rec, err := cloneExecution(p.Base)
	if err != nil {
		return nil, false
	}
	if p.Now.IsZero() {
		p.Now = c.now() // the commit applies it as of now (ApplyParams.Now)
	}
	t := c.prepare(ctx, p)
	out, err := t.params.Apply(rec)
	if err != nil || out == nil || t.cont == nil || len(out.Commands) != 1 || len(out.Loops) > 0 ||
		rec.File != nil || len(rec.Resolve) > 0 || rec.State.Terminal() || p.ContinueLease.Leased(*t.cont) {
		return nil, false // the commit decides (and reports what failed)
	}
	if len(d.ends) == 0 {
		if d.committed, err = cloneExecution(p.Base); err != nil {
			return nil, false
		}
		d.execID, d.first = p.ExecutionID, c.now()
	}
	d.ends = append(d.ends, deferredEnd{p: p, unit: unit, next: t.cont.UnitKey()})
	rec.File, rec.Resolve = nil, nil
	return &Continuation{Cmd: *t.cont, Base: rec, Deferred: true,
		net: func(ctx context.Context) error { return c.giveUp(ctx, d) }}, true
}

// group is the transition that commits the deferred ends with last,
// applied in order to base (see the top of this file). Without last, the
// ends commit alone, and the unit the last of them released is released
// due at once (release: the caller gives it up) or, as a continuing
// commit releases it, as its safety net in the outbox while it runs.
func (c *Control) group(ctx context.Context, d *Deferral, ends []deferredEnd, base *store.Execution, last *ApplyParams, release bool) *transition {
	ts := make([]*transition, 0, len(ends)+1)
	nexts := make([]string, 0, len(ends))
	var evs []types.Event
	for i, e := range ends {
		p := e.p
		if last == nil && i == len(ends)-1 {
			if release {
				// The chain gives its next unit up: released due now, no net.
				p.SafetyNet, p.ContinueLease = 0, nil
			}
		} else {
			nexts = append(nexts, e.next)
		}
		ts = append(ts, c.prepare(ctx, p))
		evs = append(evs, p.Events...)
	}
	gp := ends[len(ends)-1].p
	if last != nil {
		ts = append(ts, c.prepare(ctx, *last))
		evs = append(evs, last.Events...)
		gp = *last
	} else if release {
		gp.SafetyNet, gp.ContinueLease = 0, nil
	}
	// alone is the first end by itself, its released unit due now: what a
	// commit that meets a changed execution applies.
	fp := ends[0].p
	fp.SafetyNet, fp.ContinueLease = 0, nil
	alone := c.prepare(ctx, fp)
	gp.OutboxID, gp.Events, gp.Base = ends[0].p.OutboxID, evs, base
	g := &transition{c: c, p: gp}
	at := base.UpdateTime
	g.params = store.CheckpointParams{ExecutionID: gp.ExecutionID, OutboxID: gp.OutboxID, Base: base,
		Apply: func(rec *store.Execution) (*engine.Output, error) {
			g.cont, g.eng = nil, nil
			if !rec.UpdateTime.Equal(at) && len(ts) > 1 {
				// The execution changed since the ends were applied in
				// memory (another branch, a cancellation): only the first
				// end, whose unit ran from the state committed, is
				// applied again, and the unit it releases runs again as a
				// task; the later ends' read-only runs are dropped (their
				// events were stamped after the earlier ends' in memory,
				// and the runs again make them anew).
				out, err := alone.params.Apply(rec)
				g.eng = alone.eng
				d.drop()
				return out, err
			}
			var merged engine.Output
			var resolve []store.DLQResolution
			applied := false
			for i, t := range ts {
				out, err := t.params.Apply(rec)
				if err != nil {
					return nil, err
				}
				if out == nil {
					break
				}
				applied = true
				resolve = append(resolve, rec.Resolve...)
				g.eng = t.eng
				if i < len(nexts) {
					var ran bool
					out.Commands, ran = dropUnit(out.Commands, nexts[i])
					mergeOutput(&merged, out)
					if !ran {
						break // the state released another unit: the ends after it are not its
					}
					continue
				}
				mergeOutput(&merged, out)
				g.cont = t.cont
			}
			if !applied {
				return nil, nil
			}
			rec.File, rec.Resolve = nil, resolve
			return &merged, nil
		}}
	return g
}

// dropUnit removes the command of unit key from cmds (the unit a
// deferred end released, which ran inline), reporting whether it was
// there.
func dropUnit(cmds []types.Command, key string) ([]types.Command, bool) {
	out := cmds[:0:0]
	found := false
	for _, c := range cmds {
		if c.UnitKey() == key {
			found = true
			continue
		}
		out = append(out, c)
	}
	return out, found
}

// mergeOutput appends out to m.
func mergeOutput(m *engine.Output, out *engine.Output) {
	m.Events = append(m.Events, out.Events...)
	m.Commands = append(m.Commands, out.Commands...)
	m.Loops = append(m.Loops, out.Loops...)
}

// Settle commits the step ends deferred under ctx (WithDeferral), if any,
// as a continuing commit does while the unit the last of them released
// still runs: their events are published, and that unit's safety net is
// in the outbox and is created only if the caller gives the unit up
// (Continuation.CreateNet). Nothing is deferred under ctx after it has
// committed ends. Every
// other durable operation of the Control calls it first; the caller calls
// it before it answers its delivery. Errors: the store's, bus's and tasks'
// (the caller fails its delivery: its redelivery runs the ends' units
// again).
func (c *Control) Settle(ctx context.Context) error {
	d := deferralOf(ctx)
	if d == nil {
		return nil
	}
	d.op.Lock()
	defer d.op.Unlock()
	ends, base := d.take()
	if len(ends) == 0 {
		return nil
	}
	ctx = outside(ctx)
	g := c.group(ctx, d, ends, base, nil, false)
	cp, err := c.Store.ExecutionCheckpoint(ctx, g.params)
	if err != nil {
		return err
	}
	if _, err := g.done(ctx, cp); err != nil {
		return err
	}
	d.mu.Lock()
	d.closed, d.net = true, g.next
	d.mu.Unlock()
	if g.next != nil {
		return PublishTogether(ctx, []*Continuation{g.next})
	}
	return nil
}

// giveUp is a deferred continuation's CreateNet: the ends still deferred
// commit with its unit released due at once; ends a Settle committed have
// its net created.
func (c *Control) giveUp(ctx context.Context, d *Deferral) error {
	d.op.Lock()
	defer d.op.Unlock()
	ctx = outside(ctx)
	ends, base := d.take()
	if len(ends) == 0 {
		d.mu.Lock()
		net := d.net
		d.net = nil
		d.mu.Unlock()
		if net == nil {
			return nil
		}
		return net.CreateNet(ctx)
	}
	g := c.group(ctx, d, ends, base, nil, true)
	cp, err := c.Store.ExecutionCheckpoint(ctx, g.params)
	if err != nil {
		return err
	}
	_, err = g.done(ctx, cp)
	return err
}
