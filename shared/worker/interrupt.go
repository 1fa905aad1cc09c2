package worker

// A stop reaches running work (NoETL observability spec §8.5 "Cancellation
// Flow": the server "sends cancel signal to in-flight tasks"). A task
// attempt that runs longer than Worker.InterruptAfter watches its
// execution's document (store.ExecutionWatch: one snapshot listener per
// execution and instance, shared by all the instance's attempts of that
// execution). When the execution ends (a cancellation, its deadline, a
// halting failure) or the attempt's step run ends (a step timeout, an
// operator's `noetl step complete|fail`), the attempt's context is
// canceled with an *Interrupted cause, and everything the attempt does
// stops with that context:
//
//   - a runner kind: the request to the runner is aborted; the runner
//     serves it under the request's context, which net/http cancels when
//     the caller goes away, and the sandbox kills the task's process tree
//     (python, shell; DuckDB in its own process), pgx sends PostgreSQL a
//     cancel request for the running statement (pg_cancel_backend's
//     protocol message), DuckDB in the runner's process is interrupted
//     (duckdb_interrupt);
//   - a kind that runs in the control plane: http requests are aborted.
//
// The attempt then ends as canceled — task.attempt.failed with status
// canceled and error kind canceled, then task.canceled — without its
// policy (no retry), without a side-effect record, and the unit stops as
// it does at a task boundary (the step run's end is already in the log:
// step.canceled, or the operator's step.done / step.failed; an iteration
// ends with loop.iteration.canceled). A kind: playbook task is not
// watched: its child execution is stopped with its parent
// (control.Stop).
//
// The watch starts only after InterruptAfter so that short attempts cost
// nothing; its first snapshot is the document as it is then, so a stop
// that came earlier is seen at once.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// DefaultInterruptAfter is how long a task attempt runs before it watches
// its execution (Worker.InterruptAfter zero). A stop that happens later
// reaches the attempt within the store's notification delay; one that
// happens earlier reaches it at this point.
const DefaultInterruptAfter = 500 * time.Millisecond

// Interrupted is the cause of a running attempt's canceled context: its
// execution or its step run ended while it ran (interrupt.go).
type Interrupted struct {
	// Reason says what ended ("the execution ended (canceled)", "its
	// step run load#1 ended (ok)").
	Reason string
}

// Error implements error.
func (e *Interrupted) Error() string { return "interrupted: " + e.Reason }

// stopReason returns why the unit no longer runs in state st ("" while
// its execution runs and its step run is still the running one).
func (u *unit) stopReason(st *engine.State) string {
	if st.Terminal() {
		return fmt.Sprintf("the execution ended (%s)", st.Status)
	}
	ss := st.Steps[u.cmd.Step]
	switch {
	case ss == nil:
		return fmt.Sprintf("its step %s is gone from the state", u.cmd.Step)
	case ss.Run != u.cmd.StepRun:
		return fmt.Sprintf("its step run %s#%d ended (run %d began)", u.cmd.Step, u.cmd.StepRun, ss.Run)
	case ss.Status != types.StatusRunning && ss.Status != types.StatusScheduled:
		return fmt.Sprintf("its step run %s#%d ended (%s)", u.cmd.Step, u.cmd.StepRun, ss.Status)
	}
	return ""
}

// interruptAfter is the delay before an attempt watches its execution
// (< 0: never).
func (w *Worker) interruptAfter() time.Duration {
	if w.InterruptAfter == 0 {
		return DefaultInterruptAfter
	}
	return w.InterruptAfter
}

// interruptible returns the context of one task attempt and the function
// that ends it, which reports the *Interrupted cause when the attempt was
// interrupted (nil otherwise). The watch is armed after interruptAfter.
func (u *unit) interruptible(ctx context.Context, kind string) (context.Context, func() *Interrupted) {
	after := u.w.interruptAfter()
	if after < 0 || kind == "playbook" {
		return ctx, func() *Interrupted { return nil }
	}
	actx, cancel := context.WithCancelCause(ctx)
	var (
		mu    sync.Mutex
		ended bool
		unsub func()
	)
	timer := time.AfterFunc(after, func() {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			unsub = u.w.interrupts.subscribe(u.w, actx, u.cmd.ExecutionID, u.stopReason, cancel)
		}
	})
	return actx, func() *Interrupted {
		timer.Stop()
		mu.Lock()
		ended = true
		un := unsub
		mu.Unlock()
		if un != nil {
			un()
		}
		var ie *Interrupted
		interrupted := errors.As(context.Cause(actx), &ie)
		cancel(nil)
		if interrupted {
			return ie
		}
		return nil
	}
}

// interrupts holds the instance's execution watches, one per execution
// with running attempts (Worker.interrupts).
type interrupts struct {
	mu sync.Mutex
	m  map[string]*execWatch
}

// execWatch is one execution's watch and the attempts it serves.
type execWatch struct {
	subs map[*interruptSub]struct{}
	stop context.CancelFunc
}

// interruptSub is one attempt waiting to be interrupted.
type interruptSub struct {
	reason func(*engine.State) string
	cancel context.CancelCauseFunc
}

// watchRetry is how long a watch that failed (a transport error) waits
// before it watches again while attempts still wait on it.
const watchRetry = time.Second

// subscribe arms the interruption of an attempt of execution id: cancel
// is called (with an *Interrupted cause) once reason returns non-empty
// for a state of the execution. ctx gives the watch its values (the
// execution's operation meter) and bounds the subscription. It returns
// the function that disarms it.
func (h *interrupts) subscribe(w *Worker, ctx context.Context, id string, reason func(*engine.State) string, cancel context.CancelCauseFunc) func() {
	sub := &interruptSub{reason: reason, cancel: cancel}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]*execWatch{}
	}
	ew := h.m[id]
	if ew == nil {
		wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		ew = &execWatch{subs: map[*interruptSub]struct{}{}, stop: stop}
		h.m[id] = ew
		go h.watch(w, wctx, id, ew)
	}
	ew.subs[sub] = struct{}{}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(ew.subs, sub)
		if len(ew.subs) == 0 && h.m[id] == ew {
			delete(h.m, id)
			ew.stop()
		}
	}
}

// watch runs an execution's watch until its last attempt unsubscribes.
func (h *interrupts) watch(w *Worker, ctx context.Context, id string, ew *execWatch) {
	for ctx.Err() == nil {
		err := w.Store.ExecutionWatch(ctx, id, func(rec *store.Execution) bool {
			h.deliver(ew, rec.State)
			return false
		})
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, store.ErrNotFound) {
			h.deliver(ew, &engine.State{Status: engine.ExecCanceled}) // gone: nothing of it runs on
			return
		}
		w.Log.Warn("watching a running execution for a stop failed; retrying (a stop reaches its attempts at their next task boundary meanwhile)",
			"execution_id", id, "error", fmt.Sprint(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchRetry):
		}
	}
}

// deliver interrupts the attempts that no longer run in state st.
func (h *interrupts) deliver(ew *execWatch, st *engine.State) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range ew.subs {
		if r := sub.reason(st); r != "" {
			sub.cancel(&Interrupted{Reason: r})
			delete(ew.subs, sub)
		}
	}
}
