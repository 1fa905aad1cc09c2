// Package router is the route function's logic: it folds boundary events
// of the event log into the execution state through the pure engine
// (shared/engine), persists the new state in one Firestore transaction and
// then publishes what the engine asked for. Loop iterations are handled
// without touching the execution document: each completion writes its own
// iteration document, dispatches the next iteration (done+max_in_flight)
// and, when the count reaches the total, emits loop.done exactly once
// (ARCHITECTURE.md "Invariants": no hot documents).
//
// Idempotency: the last applied event id and its output (the outbox) are
// stored with the state, so a redelivered event republishes the same
// events and commands (same ids: Cloud Tasks dedups the names, the events
// projection dedups by event id) instead of applying twice; older
// duplicates do not apply because the engine guards each boundary event
// by step run and status.
package router

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// Publisher is what route needs from the bus.
type Publisher interface {
	PublishEvents(ctx context.Context, evs ...types.Event) error
	PublishCommands(ctx context.Context, cmds ...types.Command) error
}

// Router handles events for the route function.
type Router struct {
	Store store.Store
	Bus   Publisher
	Log   *slog.Logger
	Opts  engine.Options
	Now   func() time.Time
	// Credentials resolves the keychain for control-plane templates (nil:
	// keychain is empty there).
	Credentials credentials.Store

	pbs sync.Map
}

func (r *Router) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Router) engineFor(src string) (*engine.Engine, error) {
	key := sha256.Sum256([]byte(src))
	if v, ok := r.pbs.Load(key); ok {
		return v.(*engine.Engine), nil
	}
	pb, err := dsl.Load([]byte(src), "execution")
	if err != nil {
		return nil, err
	}
	e := engine.New(pb, r.Opts)
	r.pbs.Store(key, e)
	return e, nil
}

// Handles reports whether route acts on an event type (others are acked
// without reading state).
func Handles(eventType string) bool {
	switch eventType {
	case types.EvExecutionRequested, types.EvStepDone, types.EvStepFailed, types.EvLoopDone,
		types.EvLoopIterationDone, types.EvLoopIterationFailed:
		return true
	}
	return false
}

// Handle processes one event. A nil return means the event may be acked.
func (r *Router) Handle(ctx context.Context, ev types.Event) error {
	if !Handles(ev.EventType) {
		return nil
	}
	switch ev.EventType {
	case types.EvLoopIterationDone, types.EvLoopIterationFailed:
		return r.iteration(ctx, ev)
	}
	var out engine.Output
	var publish bool
	err := r.Store.ExecutionUpdate(ctx, ev.ExecutionID, func(rec *store.Execution) (bool, error) {
		st := rec.State
		publish = false
		if st.LastEventID == ev.EventID && st.Outbox != nil {
			out, publish = *st.Outbox, true
			return false, nil
		}
		e, err := r.engineFor(rec.Source)
		if err != nil {
			return false, fmt.Errorf("route: playbook: %w", err)
		}
		var red *redact.Redactor
		if len(e.PB.Keychain) > 0 && r.Credentials != nil {
			kc, err := launch.Keychain(ctx, r.Credentials, e.PB, st.Workload, st.ExecutionID)
			if err != nil {
				return false, fmt.Errorf("route: keychain: %w", err)
			}
			st.Keychain, red = kc, launch.Redactor(kc)
		}
		var changed bool
		if ev.EventType == types.EvExecutionRequested {
			if st.Status != engine.ExecRequested {
				return false, nil
			}
			out, err = e.Start(st, r.now())
			changed = err == nil
		} else {
			out, changed, err = e.Apply(st, ev, r.now())
		}
		if err != nil || !changed {
			return false, err
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
		st.LastEventID = ev.EventID
		o := out
		st.Outbox = &o
		publish = true
		return true, nil
	})
	if errors.Is(err, store.ErrNotFound) {
		r.Log.Warn("event for unknown execution dropped", "execution_id", ev.ExecutionID, "event_type", ev.EventType)
		return nil
	}
	if err != nil {
		return err
	}
	if !publish {
		return nil
	}
	return r.publish(ctx, ev.ExecutionID, out)
}

func (r *Router) publish(ctx context.Context, execID string, out engine.Output) error {
	for _, p := range out.Loops {
		if err := r.Store.LoopPut(ctx, execID, p); err != nil {
			return err
		}
	}
	if len(out.Events) > 0 {
		if err := r.Bus.PublishEvents(ctx, out.Events...); err != nil {
			return err
		}
	}
	if len(out.Commands) > 0 {
		if err := r.Bus.PublishCommands(ctx, out.Commands...); err != nil {
			return err
		}
	}
	return nil
}

// iteration records one loop iteration's end and advances the loop.
func (r *Router) iteration(ctx context.Context, ev types.Event) error {
	if ev.Iteration == nil {
		return fmt.Errorf("route: %s without iteration", ev.EventType)
	}
	idx := *ev.Iteration
	key := engine.LoopKey(ev.Step, ev.StepRun)
	plan, err := r.Store.LoopGet(ctx, ev.ExecutionID, key)
	if errors.Is(err, store.ErrNotFound) {
		r.Log.Warn("iteration of unknown loop dropped", "execution_id", ev.ExecutionID, "loop", key)
		return nil
	}
	if err != nil {
		return err
	}
	it := store.Iteration{Index: idx, Status: types.StatusOK}
	if ev.Payload != nil {
		it.Result = ev.Payload["result"]
	}
	failed := ev.EventType == types.EvLoopIterationFailed
	if failed {
		it.Status = types.StatusError
		it.Result = nil
		if ev.Payload != nil {
			it.Error = ev.Payload["error"]
		}
	}
	if err := r.Store.IterationPut(ctx, ev.ExecutionID, key, it); err != nil {
		return err
	}
	// A loop whose step already ended (failed fast, timed out) or whose
	// execution finished dispatches nothing more.
	rec, err := r.Store.ExecutionGet(ctx, ev.ExecutionID)
	if err != nil {
		return err
	}
	if ss := rec.State.Steps[ev.Step]; rec.State.Terminal() || ss == nil || ss.Run != ev.StepRun || ss.Status != types.StatusRunning {
		return nil
	}
	now := r.now()
	if failed && plan.FailureMode != "best_effort" {
		return r.Bus.PublishEvents(ctx, engine.LoopFailedEvent(ev.ExecutionID, *plan, idx, it.Error, now))
	}
	if next, ok := engine.NextIteration(*plan, idx); ok {
		if err := r.Bus.PublishCommands(ctx, engine.IterationCommand(ev.ExecutionID, *plan, next)); err != nil {
			return err
		}
	}
	n, err := r.Store.IterationCount(ctx, ev.ExecutionID, key)
	if err != nil {
		return err
	}
	if n < len(plan.Items) {
		return nil
	}
	its, err := r.Store.IterationList(ctx, ev.ExecutionID, key)
	if err != nil {
		return err
	}
	results := make([]any, 0, len(its))
	for _, x := range its {
		if x.Status == types.StatusOK {
			results = append(results, x.Result)
		} else {
			results = append(results, map[string]any{"status": "error", "error": x.Error})
		}
	}
	if err := r.Store.LoopDoneCreate(ctx, ev.ExecutionID, key); err != nil && !errors.Is(err, store.ErrExists) {
		return err
	}
	// Published even when the marker existed: a crash between the marker
	// and the publish must not lose loop.done; the engine ignores repeats.
	return r.Bus.PublishEvents(ctx, engine.LoopDoneEvent(ev.ExecutionID, *plan, results, now))
}
