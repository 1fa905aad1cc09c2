package worker

import (
	"context"
	"errors"
	"fmt"
)

// Store work a unit starts and waits for later, off its critical path:
//
//   - a side-effecting attempt's record (the side-effect barrier's
//     AttemptPut) is written while its unit's end commits, when that
//     attempt ends the unit (runBarriered, run): it is issued the moment
//     the tool returns, as before, and the end no longer waits for it. An
//     end that commits makes the record moot (the unit is over: every
//     later delivery is dropped as ended); an end that does not commit
//     waits for it before the delivery fails, so that its redelivery
//     adopts the outcome as before;
//   - a continued unit's watchdog is armed while its tool runs (lease):
//     its lease was taken in the commit that released it, and until the
//     invocation answers, that invocation's Cloud Task is its safety net
//     (continue.go), so nothing waits on the arm before the tool.
//
// A unit never returns with work in flight: settle waits for all of it.

// inflight is one piece of such work.
type inflight struct {
	what string // for errors and logs: "attempt record", "watchdog"
	done chan struct{}
	err  error
}

// goStore starts fn for the unit (ctx's cancellation does not stop it:
// it ends on its own, bounded by the store client's deadlines).
func (u *unit) goStore(ctx context.Context, what string, fn func(context.Context) error) *inflight {
	f := &inflight{what: what, done: make(chan struct{})}
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(f.done)
		f.err = fn(ctx)
	}()
	u.inflight = append(u.inflight, f)
	return f
}

// wait waits for f and returns its error.
func (f *inflight) wait() error {
	<-f.done
	if f.err != nil {
		return fmt.Errorf("worker: %s: %w", f.what, f.err)
	}
	return nil
}

// settle waits for the unit's work in flight. ended reports that the
// unit's end committed: then their errors are only logged (what they
// wrote is moot), else they are returned.
func (u *unit) settle(ended bool) error {
	fs := u.inflight
	u.inflight = nil
	var errs []error
	if rec := u.record; rec != nil {
		u.record = nil
		if !ended {
			if err := rec(); err != nil {
				errs = append(errs, fmt.Errorf("worker: attempt record: %w", err))
			}
		}
	}
	for _, f := range fs {
		if err := f.wait(); err != nil {
			if ended {
				u.log.Warn("store work of an ended unit failed; nothing depends on it any more", "work", f.what, "error", err.Error())
				continue
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
