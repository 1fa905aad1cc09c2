package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/types"
)

// UnitCompleter is the store call that ends one unit of work (a step
// run's unit or a loop iteration) — the model is go-workflows'
// CompleteWorkflowTask: one call records the unit's end and returns what
// the control plane needs next, instead of separate reads and writes.
// Store embeds it.
type UnitCompleter interface {
	// CompleteUnit ends a unit (CompleteUnitParams says which), in one
	// commit where a single commit can hold it:
	//
	//   - a step run's unit: its lease is checked (ErrLeaseLost when
	//     p.Holder no longer holds units/{p.Unit}: taken over, or gone) and
	//     released in the same commit as p.Checkpoint (the step run's
	//     boundary transition with its outbox: see ExecutionCheckpoint);
	//   - a loop iteration: its record is ended as IterationEnd does
	//     (ErrLeaseLost, InvalidArgument as there), and, when the iteration
	//     is the last of its lane (p.Iteration.LaneDone), the lane's marker
	//     is written in the same commit. When that makes every lane done
	//     (engine.LoopComplete with p.Iteration.Lanes), the loop's
	//     completion is claimed for p.Unit exactly once (LoopDoneCreate)
	//     and, by the claim's owner only, the loop's ended records are read
	//     (IterationList) and the transition p.Iteration.LoopEnd computes
	//     from them is checkpointed. These steps follow the iteration's
	//     commit in the same call (a count cannot be read in the commit
	//     that changes it); each is idempotent, so a redelivery that calls
	//     again finishes what a crashed call began.
	//
	// A record that had already ended (a duplicate run) is not changed but
	// its lane accounting is still carried out (First is false); a record
	// canceled, or held by another live delivery (p.Iteration.Holder ""),
	// gets none (Canceled, Held).
	CompleteUnit(ctx context.Context, p CompleteUnitParams) (UnitCompletion, error)
}

// CompleteUnitParams names one unit's end: a step run's unit (Iteration
// nil, Checkpoint set) or a loop iteration (Iteration set).
type CompleteUnitParams struct {
	ExecutionID string
	// Unit is the unit's key (types.Command.UnitKey): the lease document
	// of a step run's unit, and the owner of a loop-done claim.
	Unit string
	// Holder is the step unit's lease holder ("" when it ran without a
	// lease: nothing is checked or released).
	Holder string
	// LeaseVersion is the version of Holder's lease as the commit that took
	// it returned it (UnitCompletion.NextLeaseVersion), when the holder has
	// not renewed it since; "" when unknown. With it the driver checks the
	// lease by the commit's precondition instead of reading it first (one
	// read fewer on a continued unit's end); a version that is no longer
	// the lease's (renewed, taken over, released) only costs the read
	// after all, never a different answer.
	LeaseVersion string
	// Checkpoint is a step run's boundary transition (required without
	// Iteration; ExecutionID is taken from the params above).
	Checkpoint *CheckpointParams
	// Iteration is a loop iteration's end.
	Iteration *IterationCompletion
	// Next, for a step run's unit, takes the lease of the unit the
	// transition releases for the caller to run next (step continuation)
	// in the same commit as the end, instead of a LeaseAcquire of its own
	// after it. Ignored with Iteration.
	Next *NextLease
}

// NextLease is the lease CompleteUnitParams.Next takes: units/{Unit()}
// for Holder, expiring TTL after Now, as LeaseAcquire would take it on a
// unit without a lease. Unit is asked inside the commit, after
// Checkpoint.Apply computed the transition that commit writes (it may run
// more than once; the last call counts): it returns the key of the unit
// to lease, or "" for none. The lease is taken only when the transition
// is applied by this call and the unit has no lease yet (a lease already
// there is left alone and the end is committed without it):
// UnitCompletion.NextLeased says whether it was taken.
type NextLease struct {
	Unit   func() string
	Holder string
	TTL    time.Duration
	Now    time.Time
}

// Params are the LeaseAcquireParams of the lease on unit.
func (n *NextLease) Params(executionID, unit string) LeaseAcquireParams {
	return LeaseAcquireParams{ExecutionID: executionID, Unit: unit, Holder: n.Holder, TTL: n.TTL, Now: n.Now}
}

// IterationCompletion is the iteration part of CompleteUnitParams.
type IterationCompletion struct {
	// End is the record's end, as IterationEnd takes it (its ExecutionID
	// is ignored).
	End IterationEndParams
	// LaneDone reports that the iteration is the last of its lane
	// (engine.AfterIteration.LaneDone); Lane is that lane
	// (engine.LoopPlan.Lane) and Lanes the number of lanes the loop
	// completes at (engine.LoopPlan.Lanes).
	LaneDone bool
	Lane     int
	Lanes    int
	// LoopEnd returns the loop's ending transition from its ended records
	// in index order (loop.done); called only by the loop-done claim's
	// owner. nil: the loop's end is left to the caller (LoopOwner).
	LoopEnd func(recs []engine.IterationRecord) (*CheckpointParams, error)
	// Group holds ended records of End's batch whose ends were not
	// committed (batched fan-out: an unleased batch's ends are grouped,
	// shared/control batch.go). With a Group, End and the Group are
	// written together as one group record document, one write for them
	// all (executions/{id}/loops/{key}/iteration_groups/{first index}-{last
	// index}): End.Holder must be "", End.Record's status and every
	// Group record's ok or error, each of the End's loop, no index twice.
	// A group document already there (the same group committed before) is
	// left as it is: First is false. The lane's marker (LaneDone) is
	// written in the same commit.
	Group []engine.IterationRecord
}

// GroupID is the id of the group record document holding recs (End's
// record and IterationCompletion.Group): the first and last index, so
// that the same group committed twice is one document and two
// groupings of one batch (two deliveries) are two.
func GroupID(recs []engine.IterationRecord) string {
	lo, hi := recs[0].Index, recs[0].Index
	for _, r := range recs[1:] {
		lo, hi = min(lo, r.Index), max(hi, r.Index)
	}
	return fmt.Sprintf("%08d-%08d", lo, hi)
}

// GroupRecords is the whole group an IterationCompletion with a Group
// commits: the Group's records and End's, ordered by index.
func (it *IterationCompletion) GroupRecords() []engine.IterationRecord {
	recs := append(append([]engine.IterationRecord{}, it.Group...), it.End.Record)
	sort.Slice(recs, func(i, j int) bool { return recs[i].Index < recs[j].Index })
	return recs
}

// UniqueRecords keeps one record per index of recs, the first met, in
// index order: IterationList's rule across an iteration's own document
// and group documents (callers pass own documents' records first).
func UniqueRecords(recs []engine.IterationRecord) []engine.IterationRecord {
	seen := make(map[int]bool, len(recs))
	out := make([]engine.IterationRecord, 0, len(recs))
	for _, r := range recs {
		if !seen[r.Index] {
			seen[r.Index] = true
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// UnitCompletion is what CompleteUnit did.
type UnitCompletion struct {
	// First reports that this call recorded the iteration's end.
	First bool
	// Canceled reports an iteration record canceled before this call
	// (nothing follows it); Held one leased by another live delivery
	// (p.Iteration.End.Holder ""): its holder ends it.
	Canceled bool
	Held     bool
	// LoopOwner reports that every lane of the iteration's loop is done
	// and this unit owns the loop's completion (its LoopEnd ran).
	LoopOwner bool
	// Checkpoint is the transition committed (or found not to apply): the
	// step run's boundary, or the loop's end.
	Checkpoint Checkpoint
	// LoopRecords is the number of ended records LoopEnd was given.
	LoopRecords int
	// NextLeased reports that p.Next's lease was taken in the end's
	// commit: the caller holds it as p.Next.Holder.
	NextLeased bool
	// NextLeaseVersion is that lease's version (opaque: Firestore's update
	// time, the in-memory driver's counter), for the continued unit's own
	// end (CompleteUnitParams.LeaseVersion); "" when not taken or unknown.
	NextLeaseVersion string
}

// CheckUnit rejects a CompleteUnitParams that names neither kind of unit.
func CheckUnit(p CompleteUnitParams) error {
	switch {
	case p.ExecutionID == "" || p.Unit == "":
		return errs.New(errs.InvalidArgument, "store: complete unit: execution id and unit are required")
	case p.Iteration == nil && p.Checkpoint == nil:
		return errs.New(errs.InvalidArgument, "store: complete unit %s: neither an iteration nor a checkpoint", p.Unit)
	case p.Iteration != nil && p.Checkpoint != nil:
		return errs.New(errs.InvalidArgument, "store: complete unit %s: an iteration ends through its loop, not a checkpoint", p.Unit)
	case p.Iteration != nil && p.Iteration.LaneDone && p.Iteration.Lanes < 1:
		return errs.New(errs.InvalidArgument, "store: complete unit %s: a lane's end needs the loop's lane count", p.Unit)
	}
	if p.Iteration != nil {
		if err := CheckEnded(p.Iteration.End.Record); err != nil {
			return err
		}
		return checkGroup(p)
	}
	return nil
}

// checkGroup rejects a Group that IterationCompletion.Group does not
// allow.
func checkGroup(p CompleteUnitParams) error {
	it := p.Iteration
	if len(it.Group) == 0 {
		return nil
	}
	if it.End.Holder != "" {
		return errs.New(errs.InvalidArgument, "store: complete unit %s: a group of ends is committed without a lease", p.Unit)
	}
	seen := map[int]bool{}
	for _, r := range it.GroupRecords() {
		if r.Status != types.StatusOK && r.Status != types.StatusError {
			return errs.New(errs.InvalidArgument, "store: complete unit %s: iteration %d's record in a group has status %q, not ok or error", p.Unit, r.Index, r.Status)
		}
		if seen[r.Index] {
			return errs.New(errs.InvalidArgument, "store: complete unit %s: iteration %d twice in a group", p.Unit, r.Index)
		}
		seen[r.Index] = true
	}
	return nil
}

// FinishLoop is the part of CompleteUnit after an iteration's commit that
// ended its lane: count the lanes, claim the loop's completion, and, as
// its owner, checkpoint the loop's end (driver-independent: it runs on
// the contract's own calls).
func FinishLoop(ctx context.Context, s Store, p CompleteUnitParams, res *UnitCompletion) error {
	it := p.Iteration
	key := it.End.LoopKey
	n, err := s.LaneCount(ctx, p.ExecutionID, key)
	if err != nil || n < it.Lanes {
		return err
	}
	owner, err := s.LoopDoneCreate(ctx, p.ExecutionID, key, p.Unit)
	if err != nil || owner != p.Unit {
		return err
	}
	res.LoopOwner = true
	if it.LoopEnd == nil {
		return nil
	}
	recs, err := s.IterationList(ctx, p.ExecutionID, key)
	if err != nil {
		return err
	}
	res.LoopRecords = len(recs)
	cp, err := it.LoopEnd(recs)
	if err != nil || cp == nil {
		return err
	}
	cp.ExecutionID = p.ExecutionID
	res.Checkpoint, err = s.ExecutionCheckpoint(ctx, *cp)
	return err
}
