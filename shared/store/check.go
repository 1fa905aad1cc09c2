package store

import (
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/types"
)

// checkNew validates an execution before ExecutionCreate: it must have a
// state with an execution id (InvalidArgument otherwise, never a panic).
func checkNew(rec *Execution) error {
	if rec == nil || rec.State == nil {
		return errs.New(errs.InvalidArgument, "store: create execution: no state")
	}
	if rec.State.ExecutionID == "" {
		return errs.New(errs.InvalidArgument, "store: create execution: empty execution id")
	}
	return nil
}

// checkEnded validates an iteration record before IterationEnd: an ended
// iteration is ok or error. Any other status is refused (InvalidArgument):
// the ended-iteration count and list select those two, so a record with
// another status would never be counted and its loop would never finish.
func checkEnded(r engine.IterationRecord) error {
	if r.Status != types.StatusOK && r.Status != types.StatusError && r.Status != types.StatusCanceled {
		return errs.New(errs.InvalidArgument, "store: end iteration %d: status %q, want %q, %q or %q", r.Index, r.Status, types.StatusOK, types.StatusError, types.StatusCanceled)
	}
	return nil
}

// completed reports whether an iteration record's status counts for its
// loop (ok or error; a canceled iteration was cut short when its step run
// ended, and never counts).
func completed(status string) bool {
	return status == string(types.StatusOK) || status == string(types.StatusError)
}
