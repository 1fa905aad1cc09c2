// Package control is the control plane's I/O shell around the pure engine
// (shared/engine): it applies an engine transition to an execution under
// one Firestore transaction (store.ExecutionCheckpoint, which also writes
// the transition's outbox) and then carries the outbox out — the next
// units become Cloud Tasks directly (or go through the commands topic for
// bulk fan-out), the transition's events are published as one batch, and
// the outbox is deleted. execute calls it when a unit of work ends (no
// queue hop between a step and the next: README "Architecture" "What the loop
// must cost"), route when an event from outside a unit arrives (execution
// start, a boundary nobody applied yet).
//
// Crash safety: the outbox id is derived from what ends (a step run, or
// the request of an execution), so whoever handles the same end again — a
// redelivered Cloud Task, a redelivered message — finds the outbox and
// replays it. Every effect of a replay is idempotent (task names, batch
// ids, event ids).
package control

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/types"
)

// DefaultBulkFanOut is the largest number of units a transition turns into
// Cloud Tasks itself; more go through the commands topic, where dispatch
// creates them in parallel.
const DefaultBulkFanOut = 8

// Control applies transitions and flushes their outboxes. The zero value
// is not usable: set Store, Bus and Tasks.
type Control struct {
	Store store.Store
	Bus   bus.Publisher
	Tasks tasks.Creator
	// Results offloads large loop items and loop results (nil: kept
	// inline).
	Results results.Offloader
	// Credentials resolves the keychain for control-plane templates (arc
	// when/args, set_ctx, loop.in, admission); nil: the keychain is empty.
	Credentials credentials.Store
	Opts        engine.Options
	Log         *slog.Logger
	Now         func() time.Time
	// Source names the function in the batches it publishes ("execute",
	// "route").
	Source string
	// BulkFanOut overrides DefaultBulkFanOut.
	BulkFanOut int

	engines sync.Map // sha256(source) → *engine.Engine
	plans   planCache
}

func (c *Control) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Control) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}

// Engine returns the (cached) engine of a playbook source.
func (c *Control) Engine(src string) (*engine.Engine, error) {
	key := sha256.Sum256([]byte(src))
	if v, ok := c.engines.Load(key); ok {
		return v.(*engine.Engine), nil
	}
	pb, err := dsl.Load([]byte(src), "execution")
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "control: the execution's playbook no longer loads")
	}
	e := engine.New(pb, c.Opts)
	c.engines.Store(key, e)
	return e, nil
}

// EndOutboxID is the outbox id of the transition that ends a step run: a
// step run ends once (the engine guards it), so every unit of the run
// finds its outbox from (step, run) alone.
func EndOutboxID(executionID, step string, run int) string {
	return types.DeriveID(executionID, "end", step, types.DeriveIDPart(run))
}

// ApplyParams describes one transition to apply.
type ApplyParams struct {
	ExecutionID string
	// Event is the boundary event (step.done, step.failed, loop.done) or
	// playbook.execution.requested.
	Event types.Event
	// OutboxID names the transition's outbox (EndOutboxID for boundaries).
	OutboxID string
	// Events are published in the transition's batch, before the
	// transition's own events: the finishing unit's events (ending with
	// Event), or Event alone for a boundary the control plane made itself
	// (loop.done, a timeout). They are stored in the outbox with the rest,
	// so the commit is their durability point. Empty for events already in
	// the log (route).
	Events []types.Event
	// Base is the execution as the caller read it: the checkpoint is then
	// one conditional write (store.CheckpointParams.Base).
	Base *store.Execution
	// ReplayOf is the DLQ entry the applying unit replays
	// (types.Command.ReplayOf) and Discard the entry being discarded (the
	// DLQ discard of a step unit, with its reason as Note): a parked step
	// unit whose step run this transition ends has its entry resolved in
	// the same commit — replayed, discarded, or done (it ended through
	// another delivery, a timeout, a cancellation) — see resolveParks.
	ReplayOf string
	Discard  *store.DLQResolution
	// SafetyNet, when positive, lets the caller run the transition's next
	// unit in its own invocation (CompleteStep: step continuation): when
	// the transition releases exactly one unit that may run now, its Cloud
	// Task is created delayed by SafetyNet instead of due at once, and the
	// unit is handed back to the caller (see Continuation).
	SafetyNet time.Duration
	// ContinueLease, with SafetyNet, takes the lease of the unit handed
	// back (when it runs leased) in the transition's commit
	// (store.CompleteUnitParams.Next): see ContinueLease.
	ContinueLease *ContinueLease
	// Now, when set, is the transition's time in place of the Control's
	// clock: a deferred end (deferral.go) is committed later exactly as it
	// was applied in memory, its events stamped as its next unit saw them.
	Now time.Time
}

// Apply applies one transition and flushes its outbox. It returns
// applied=false when the event did not apply (a duplicate or a stale run),
// after replaying the outbox of an earlier application if one is left.
// Errors: store errors (retry); an execution that does not exist is
// NotFound.
func (c *Control) Apply(ctx context.Context, p ApplyParams) (bool, error) {
	if err := c.Settle(ctx); err != nil { // deferred ends first (deferral.go)
		return false, err
	}
	if err := faults.Inject(c.Source+".before_commit", p.ExecutionID); err != nil {
		return false, err
	}
	t := c.prepare(ctx, p)
	cp, err := c.Store.ExecutionCheckpoint(ctx, t.params)
	if err != nil {
		return false, err
	}
	return t.done(ctx, cp)
}

// transition is one transition being applied: the checkpoint to commit
// (params) and what follows its commit (done).
type transition struct {
	c      *Control
	p      ApplyParams
	params store.CheckpointParams
	eng    *engine.Engine // the transition's engine, for observe
	// next is the unit handed back for the caller to run (SafetyNet).
	next *Continuation
	// cont is the unit the commit hands back, as released (continue.go).
	cont *types.Command
}

// now is the transition's time (ApplyParams.Now, else the clock).
func (t *transition) now() time.Time {
	if !t.p.Now.IsZero() {
		return t.p.Now
	}
	return t.c.now()
}

// prepare builds the checkpoint of transition p (Apply's commit, or the
// one a unit's completion commits with its end: CompleteUnit).
func (c *Control) prepare(ctx context.Context, p ApplyParams) *transition {
	t := &transition{c: c, p: p}
	var red *redact.Redactor
	t.params = store.CheckpointParams{
		ExecutionID: p.ExecutionID, OutboxID: p.OutboxID, Base: p.Base,
		Apply: func(rec *store.Execution) (*engine.Output, error) {
			rec.File, rec.Resolve, t.cont = nil, nil, nil
			e, err := c.Engine(rec.Source)
			if err != nil {
				return nil, err
			}
			t.eng = e
			st := rec.State
			// Events made outside the execution's clock (a cancellation,
			// a timer) are stamped after its last event.
			event, evs := p.Event, append([]types.Event(nil), p.Events...)
			base := types.HLC(st.Clock, t.now())
			for i := range evs {
				if evs[i].Clock == 0 && evs[i].EventType != types.EvExecutionRequested {
					base++
					evs[i].Clock = base
					if evs[i].EventID == event.EventID {
						event.Clock = base
					}
				}
			}
			var kc map[string]any
			if len(e.PB.Keychain) > 0 && c.Credentials != nil {
				if kc, err = launch.Keychain(ctx, c.Credentials, e.PB, st); err != nil {
					return nil, fmt.Errorf("control: keychain: %w", err)
				}
				st.Keychain = kc
			}
			// The execution's secrets: keychain values and secret-named
			// workload values (mask.go).
			red = launch.ExecRedactor(kc, st.Workload)
			var out engine.Output
			var changed bool
			switch p.Event.EventType {
			case types.EvExecutionRequested:
				if st.Status != engine.ExecRequested {
					return nil, nil
				}
				out, err = e.Start(st, t.now())
				changed = err == nil
			case types.EvCancelRequested:
				p, _ := history.Decode[history.CancelRequested](event) // a malformed reason reads as none
				out, changed = e.Stop(st, event, engine.StopReason{Status: engine.ExecCanceled, Kind: types.ErrKindCanceled, Message: "canceled: " + p.Reason}, t.now())
			case types.EvExecutionTimedOut:
				p, _ := history.Decode[history.ExecutionTimedOut](event) // a malformed message reads as none
				out, changed = e.Stop(st, event, engine.StopReason{Status: engine.ExecFailed, Kind: types.ErrKindTimeout, Message: p.Message}, t.now())
			default:
				out, changed, err = e.Apply(st, event, t.now())
			}
			if err != nil || !changed {
				return nil, err
			}
			rec.Resolve = resolveParks(st, p, event.EventType)
			if len(evs) > 0 {
				out.Events = append(evs, out.Events...)
			}
			if red != nil {
				// Control-plane events (next.evaluated, step.scheduled) may
				// carry rendered values: secrets never leave in events.
				for i := range out.Events {
					if m, ok := red.Value(out.Events[i].Payload).(map[string]any); ok {
						out.Events[i].Payload = m
					}
				}
			}
			MaskTransition(red, st, &out)
			if err := c.prepareLoops(ctx, p.ExecutionID, &out); err != nil {
				return nil, err
			}
			// The document must fit Firestore's 1 MiB (limits.go).
			if err := c.FitState(ctx, e, st, rec.Source, &out); err != nil {
				return nil, err
			}
			t.markSafetyNet(&out) // continuation: the outbox holds the safety net (continue.go)
			return &out, nil
		},
	}
	return t
}

// done carries out what follows the commit cp of t: the outbox is
// flushed, or, when the transition did not apply, the unit's events are
// published and an earlier application's outbox replayed.
func (t *transition) done(ctx context.Context, cp store.Checkpoint) (bool, error) {
	c, p := t.c, t.p
	if cp.Applied {
		c.observe(ctx, t.eng, cp.State, cp.Output) // telemetry (observe.go)
		if err := faults.Inject(c.Source+".after_commit", p.ExecutionID); err != nil {
			return true, err
		}
	}
	if !cp.Applied {
		if len(p.Events) > 0 {
			// A late or duplicate unit: its events still belong in the log
			// (ids dedup against a copy that made it). Events made outside
			// the execution's clock (a repeated cancellation) are stamped
			// after its last event, as when they apply: with clock 0 they
			// would sort first and hide the copy that applied.
			evs := p.Events
			if cp.State != nil {
				evs = append([]types.Event(nil), p.Events...)
				base := types.HLC(cp.State.Clock, c.now())
				for i := range evs {
					if evs[i].Clock == 0 && evs[i].EventType != types.EvExecutionRequested {
						base++
						evs[i].Clock = base
					}
				}
			}
			b := types.Batch{ID: types.DeriveID(p.ExecutionID, "unapplied", p.OutboxID, p.Events[0].EventID), ExecutionID: p.ExecutionID, Source: c.Source, Events: evs}
			if err := c.Bus.PublishBatch(ctx, b); err != nil {
				return false, err
			}
		}
		return false, c.Replay(ctx, p.ExecutionID, p.OutboxID)
	}
	if t.cont != nil && cp.Output != nil && len(cp.Output.Commands) == 1 {
		t.flushContinuing(cp.Output, *t.cont)
		return true, nil
	}
	return true, c.Flush(ctx, p.ExecutionID, p.OutboxID, cp.Output)
}

// resolveParks drops from st the DLQ parks of step units whose step run is
// no longer active after a transition (store: the caller commits the
// returned resolutions with the state): the entry p.Discard discards is
// discarded, the one p.ReplayOf replays is replayed (its replay ended the
// run), any other is done — its unit ended without it (ended tells how).
func resolveParks(st *engine.State, p ApplyParams, ended types.EventType) []store.DLQResolution {
	var out []store.DLQResolution
	keys := make([]string, 0, len(st.Parked))
	for k := range st.Parked {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pk := st.Parked[k]
		ss := st.Steps[pk.Step]
		if !st.Terminal() && ss != nil && ss.Run == pk.Run && (ss.Status == types.StatusRunning || ss.Status == types.StatusScheduled) {
			continue
		}
		delete(st.Parked, k)
		switch {
		case p.Discard != nil && p.Discard.ID == pk.DLQID:
			out = append(out, store.DLQResolution{ID: pk.DLQID, Status: store.DLQDiscarded, Note: p.Discard.Note})
		case p.ReplayOf != "" && p.ReplayOf == pk.DLQID:
			out = append(out, store.DLQResolution{ID: pk.DLQID, Status: store.DLQReplayed})
		default:
			out = append(out, store.DLQResolution{ID: pk.DLQID, Status: store.DLQDone,
				Note: fmt.Sprintf("the unit's step run ended without it (%s; step %s run %d is %s, execution %s)", ended, pk.Step, pk.Run, stepStatus(ss), st.Status)})
		}
	}
	if len(st.Parked) == 0 {
		st.Parked = nil
	}
	return out
}

func stepStatus(ss *engine.StepState) types.Status {
	if ss == nil {
		return "gone"
	}
	return ss.Status
}

// Replay flushes a transition's outbox if it is still there (a previous
// flush did not finish).
func (c *Control) Replay(ctx context.Context, executionID, outboxID string) error {
	if err := c.Settle(ctx); err != nil { // deferred ends first (deferral.go)
		return err
	}
	out, err := c.Store.OutboxGet(ctx, executionID, outboxID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	c.log().Info("replaying the outbox of an interrupted transition", "execution_id", executionID, "outbox", outboxID)
	return c.Flush(ctx, executionID, outboxID, out)
}

// Flush carries out a committed transition: its units become Cloud Tasks
// (directly, or through the commands topic beyond BulkFanOut), then its
// events are published as one batch. The outbox document stays (it
// expires with the execution): replaying it is idempotent.
func (c *Control) Flush(ctx context.Context, executionID, outboxID string, out *engine.Output) error {
	if err := c.Dispatch(ctx, out.Commands...); err != nil {
		return err
	}
	if len(out.Events) > 0 {
		if err := c.Bus.PublishBatch(ctx, c.transitionBatch(executionID, outboxID, out.Events)); err != nil {
			return err
		}
	}
	return nil
}

// transitionBatch is the batch of a transition's events (its id derived
// from the outbox's: a replay publishes the same batch).
func (c *Control) transitionBatch(executionID, outboxID string, evs []types.Event) types.Batch {
	return types.Batch{ID: types.DeriveID(executionID, "transition", outboxID), ExecutionID: executionID, Source: c.Source, Events: evs}
}

// Dispatch turns units into Cloud Tasks: up to BulkFanOut directly, in
// parallel; more through the commands topic (dispatch creates them).
func (c *Control) Dispatch(ctx context.Context, cmds ...types.Command) error {
	bulk := c.BulkFanOut
	if bulk <= 0 {
		bulk = DefaultBulkFanOut
	}
	switch {
	case len(cmds) == 0:
		return nil
	case len(cmds) > bulk:
		return c.Bus.PublishCommands(ctx, cmds...)
	case len(cmds) == 1:
		_, err := c.Tasks.TaskCreate(ctx, cmds[0], c.now())
		return err
	}
	errc := make(chan error, len(cmds))
	now := c.now()
	for _, cmd := range cmds {
		go func(cmd types.Command) {
			_, err := c.Tasks.TaskCreate(ctx, cmd, now)
			errc <- err
		}(cmd)
	}
	var first error
	for range cmds {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Stop ends an execution at once — canceled (POST /executions/{id}/cancel)
// or failed past its deadline — and then deletes its pending Cloud Tasks,
// cancels the iterations of its stopped loops that no unit runs
// (cancelIterations: each started unit's chain ends in the log) and stops
// its child executions (NoETL observability spec §8.5): nothing new is dispatched, running
// units stop at their next task boundary. It returns applied=false when
// the execution had already ended; its transition's outbox is then
// replayed and the cleanup runs again (all of it is idempotent), so a
// stop repeated after a crash finishes the first one's work.
func (c *Control) Stop(ctx context.Context, executionID string, ev types.Event) (bool, error) {
	if err := c.Settle(ctx); err != nil { // deferred ends first (deferral.go)
		return false, err
	}
	applied, err := c.Apply(ctx, ApplyParams{ExecutionID: executionID, Event: ev, OutboxID: StopOutboxID(executionID), Events: []types.Event{ev}})
	if err != nil {
		return false, err
	}
	return applied, c.afterStop(ctx, executionID)
}

// StopOutboxID is the outbox id of the transition that stops an execution
// (a cancellation or its deadline: one applies).
func StopOutboxID(executionID string) string { return types.DeriveID(executionID, "stop") }

// afterStop is Stop's cleanup of a stopped execution (idempotent).
func (c *Control) afterStop(ctx context.Context, executionID string) error {
	if n, err := c.Tasks.TaskDeleteExecution(ctx, executionID); err != nil {
		c.log().Warn("deleting the pending tasks of a stopped execution failed; its units will be dropped when delivered", "execution_id", executionID, "error", err.Error())
	} else if n > 0 {
		c.log().Info("deleted the pending tasks of a stopped execution", "execution_id", executionID, "tasks", n)
	}
	if err := c.cancelIterations(ctx, executionID); err != nil {
		return err
	}
	children, err := c.Store.ExecutionList(ctx, store.ExecutionListParams{ParentID: executionID, Limit: 1000})
	if err != nil {
		return err
	}
	for _, ch := range children {
		if ch.Status != engine.ExecRunning && ch.Status != engine.ExecRequested {
			continue
		}
		cev := types.NewEvent(types.EvCancelRequested, ch.ExecutionID, c.Source, c.now(), "parent", executionID)
		cev.EntityType, cev.EntityID, cev.ParentID = "playbook", ch.Playbook, executionID
		cev.Payload = history.Encode(history.CancelRequested{Reason: "parent execution " + executionID + " stopped"})
		if _, err := c.Stop(ctx, ch.ExecutionID, cev); err != nil {
			return err
		}
	}
	return nil
}

// CancelEvent returns the event of a cancellation request.
func CancelEvent(executionID, reason, source string, now time.Time) types.Event {
	ev := types.NewEvent(types.EvCancelRequested, executionID, source, now)
	ev.EntityType, ev.EntityID = "playbook", executionID
	ev.Payload = history.Encode(history.CancelRequested{Reason: reason})
	return ev
}

// Cancel cancels an execution on behalf of a caller that is not
// redelivered when it fails (the api, POST /executions/{id}/cancel). The
// cancellation is first published to route (types.Batch.Route), then
// applied here at once (Stop): whatever this call does not finish — a
// crash between its commit and its outbox leaves the step.canceled and
// playbook.finished events unpublished and the cleanup undone — route
// finishes under Pub/Sub redelivery (README "The soak": a canceled execution's log
// ends). An execution that had already ended is not changed, but its stop
// is repeated when it was canceled (a retried cancellation completes the
// first one's work). It returns the status the execution had already
// ended with ("" when this call canceled it). Errors: NotFound for an
// unknown execution, store and bus errors (retry).
func (c *Control) Cancel(ctx context.Context, executionID, reason, source string) (ended types.Status, err error) {
	rec, err := c.Store.ExecutionGet(ctx, executionID)
	if err != nil {
		return "", err
	}
	if rec.State.Terminal() {
		if rec.State.Status == engine.ExecCanceled {
			if err := c.Replay(ctx, executionID, StopOutboxID(executionID)); err != nil {
				return rec.State.Status, err
			}
			if err := c.afterStop(ctx, executionID); err != nil {
				return rec.State.Status, err
			}
		}
		return rec.State.Status, nil
	}
	ev := CancelEvent(executionID, reason, source, c.now())
	// Stamped after the state as read, so that the copy route applies and
	// the copy applied here are one event (same id, same clock).
	ev.Clock = types.HLC(rec.State.Clock, c.now()) + 1
	b := types.Batch{ID: types.DeriveID(executionID, "cancel", ev.EventID), ExecutionID: executionID, Source: source, Route: true, Events: []types.Event{ev}}
	if err := c.Bus.PublishBatch(ctx, b); err != nil {
		return "", err
	}
	if _, err := c.Stop(ctx, executionID, ev); err != nil {
		return "", err
	}
	return "", nil
}
