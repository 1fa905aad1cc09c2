package store

import (
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/types"
)

// CheckNew validates an execution before ExecutionCreate: it must have a
// state with an execution id (InvalidArgument otherwise, never a panic).
// Every driver calls it first.
func CheckNew(rec *Execution) error {
	if rec == nil || rec.State == nil {
		return errs.New(errs.InvalidArgument, "store: create execution: no state")
	}
	if rec.State.ExecutionID == "" {
		return errs.New(errs.InvalidArgument, "store: create execution: empty execution id")
	}
	return nil
}

// CheckEnded validates an iteration record before IterationEnd (every
// driver calls it first): an ended
// iteration is ok or error. Any other status is refused (InvalidArgument):
// the ended-iteration count and list select those two, so a record with
// another status would never be counted and its loop would never finish.
func CheckEnded(r engine.IterationRecord) error {
	if r.Status != types.StatusOK && r.Status != types.StatusError && r.Status != types.StatusCanceled {
		return errs.New(errs.InvalidArgument, "store: end iteration %d: status %q, want %q, %q or %q", r.Index, r.Status, types.StatusOK, types.StatusError, types.StatusCanceled)
	}
	return nil
}

// Completed reports whether an iteration record's status counts for its
// loop (ok or error; a canceled iteration was cut short when its step run
// ended, and never counts): what IterationList and IterationCount select.
func Completed(status types.Status) bool {
	return status == types.StatusOK || status == types.StatusError
}
