package worker

import (
	"errors"
	"fmt"
)

// Store work a unit leaves pending off its critical path, settled when the
// unit ends:
//
//   - the record of a side-effecting attempt (the side-effect barrier's
//     AttemptPut, runBarriered) waits for the attempt's move. When the
//     attempt ends its unit, the end's commit carries its outcome and the
//     record is never written: the unit is over, every later delivery is
//     dropped as ended. An end that does not commit writes it before the
//     delivery fails, so that the retry adopts the outcome; any other move
//     (a retry, the next task, a hand-off, a filing) writes it first (run);
//   - a continued unit's watchdog is armed while its tool runs (lease): its
//     lease was taken in the commit that released it, and until the
//     invocation answers, that invocation's Cloud Task is its safety net
//     (continue.go).
//
// A unit never returns with either pending: settle carries them out.

// armBeside runs arm (the watchdog's) beside the unit's run; settle waits
// for it.
func (u *unit) armBeside(arm func() error) {
	done := make(chan error, 1)
	u.arming = done
	go func() { done <- arm() }()
}

// settle carries out the unit's pending store work. ended reports that the
// unit's end committed: the record is then moot (not written) and a failed
// arm only logged; otherwise the record is written and the errors are
// returned.
func (u *unit) settle(ended bool) error {
	var errs []error
	if rec := u.record; rec != nil {
		u.record = nil
		if !ended {
			if err := rec(); err != nil {
				errs = append(errs, fmt.Errorf("worker: attempt record: %w", err))
			}
		}
	}
	if ch := u.arming; ch != nil {
		u.arming = nil
		if err := <-ch; err != nil {
			if ended {
				u.log.Warn("arming the watchdog of an ended unit failed; nothing depends on it any more", "error", err.Error())
			} else {
				errs = append(errs, fmt.Errorf("worker: watchdog: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}
