package firestorestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// CompleteUnit implements Store. A step unit's end is one Commit request:
// the state under its update-time precondition, the outbox, and the
// lease's delete under the precondition of its read (one read of the
// lease; none without a lease, nor when p.LeaseVersion, the update time
// the commit that took it returned, is still the lease's: that time is
// the precondition, and a commit it fails is made again after a read)
// and, with p.Next, the continued unit's lease as a Create (a lease
// already there fails that commit, which is then made again without it;
// its version, UnitCompletion.NextLeaseVersion, is the commit's time). An iteration's end is one Commit too: the
// record (a Create, or a compare-and-set of a leased record) and, for its
// lane's last iteration, the lane's marker. Like the rest of the driver it
// uses preconditions, not a locking transaction (cas.go: a
// function dying inside a transaction leaves its locks behind).
func (f *Firestore) CompleteUnit(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	if err := store.CheckUnit(p); err != nil {
		return store.UnitCompletion{}, err
	}
	if p.Iteration == nil {
		return f.completeStep(ctx, p)
	}
	res, err := f.completeIteration(ctx, p)
	if err != nil || res.Canceled || res.Held || !p.Iteration.LaneDone {
		return res, err
	}
	return res, store.FinishLoop(ctx, f, p, &res)
}

func (f *Firestore) completeStep(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	cp := *p.Checkpoint
	cp.ExecutionID = p.ExecutionID
	if p.Holder == "" && p.Next == nil {
		res, err := f.ExecutionCheckpoint(ctx, cp)
		return store.UnitCompletion{Checkpoint: res}, err
	}
	m := meterOf(ctx, p.ExecutionID)
	ref := f.unit(p.ExecutionID, p.Unit)
	var leaseAt time.Time
	// next is the continued unit whose lease the last commit created
	// (p.Next); skipNext drops it after a commit it failed.
	next, skipNext := "", false
	// known is the lease's update time the caller gave (LeaseVersion):
	// the first commit's precondition on it stands for the read; any later
	// attempt reads the lease.
	known, _ := time.Parse(time.RFC3339Nano, p.LeaseVersion)
	unread := false // the last attempt did not read the lease
	before := func() (func(*firestore.WriteBatch), error) {
		next = ""
		var release func(*firestore.WriteBatch)
		unread = false
		if p.Holder != "" && !known.IsZero() {
			at := known
			known, leaseAt, unread = time.Time{}, at, true
			release = func(b *firestore.WriteBatch) {
				m.Delete(1)
				b.Delete(ref, firestore.LastUpdateTime(at))
			}
		} else if p.Holder != "" {
			m.Read(1)
			s, err := ref.Get(ctx)
			if isCode(err, codes.NotFound) {
				return nil, store.ErrLeaseLost
			}
			if err != nil {
				return nil, errs.Wrap(errs.CodeOf(err), err, "store: complete unit: read lease")
			}
			var d leaseDoc
			if err := s.DataTo(&d); err != nil {
				return nil, err
			}
			if d.Holder != p.Holder {
				return nil, store.ErrLeaseLost
			}
			leaseAt = s.UpdateTime
			release = func(b *firestore.WriteBatch) {
				m.Delete(1)
				b.Delete(ref, firestore.LastUpdateTime(s.UpdateTime))
			}
		}
		return func(b *firestore.WriteBatch) {
			if release != nil {
				release(b)
			}
			if p.Next == nil || skipNext {
				return
			}
			// Called after Apply: the unit this commit releases.
			if next = p.Next.Unit(); next != "" {
				m.Write(1)
				b.Create(f.unit(p.ExecutionID, next), newLease(p.Next.Params(p.ExecutionID, next)))
			}
		}, nil
	}
	tried := !known.IsZero()
	res, err := f.checkpoint(ctx, cp, before)
	if tried && errors.Is(err, store.ErrNotFound) {
		// The lease's precondition on a lease gone may answer NotFound:
		// again, reading it.
		res, err = f.checkpoint(ctx, cp, before)
	}
	if err != nil && next != "" && (isCode(err, codes.AlreadyExists) || errs.CodeOf(err) == errs.AlreadyExists) {
		// The continued unit has a lease already (its Create failed the
		// commit, so nothing was written): commit the end without it.
		skipNext = true
		res, err = f.checkpoint(ctx, cp, before)
	}
	if err != nil {
		return store.UnitCompletion{}, err
	}
	if !res.Applied && p.Holder != "" && unread {
		// Nothing was committed, so nothing checked the lease: read it.
		m.Read(1)
		s, err := ref.Get(ctx)
		if isCode(err, codes.NotFound) {
			return store.UnitCompletion{}, store.ErrLeaseLost
		}
		if err != nil {
			return store.UnitCompletion{}, errs.Wrap(errs.CodeOf(err), err, "store: complete unit: read lease")
		}
		var d leaseDoc
		if err := s.DataTo(&d); err != nil {
			return store.UnitCompletion{}, err
		}
		if d.Holder != p.Holder {
			return store.UnitCompletion{}, store.ErrLeaseLost
		}
		leaseAt = s.UpdateTime
	}
	if !res.Applied && p.Holder != "" {
		// Nothing was committed (a duplicate end): the lease still goes.
		m.Delete(1)
		if _, err := ref.Delete(ctx, firestore.LastUpdateTime(leaseAt)); err != nil && !isCode(err, codes.FailedPrecondition) && !isCode(err, codes.NotFound) {
			return store.UnitCompletion{}, errs.Wrap(errs.CodeOf(err), err, "store: complete unit: release lease")
		}
	}
	out := store.UnitCompletion{Checkpoint: res, NextLeased: res.Applied && next != ""}
	if out.NextLeased && !res.UpdateTime.IsZero() {
		// Every document of a commit gets the commit's time as its update
		// time: the new lease's is the execution document's.
		out.NextLeaseVersion = res.UpdateTime.UTC().Format(time.RFC3339Nano)
	}
	return out, nil
}

// laneRef is a loop run's lane marker document.
func (f *Firestore) laneRef(executionID, loopKey string, lane int) *firestore.DocumentRef {
	return f.loop(executionID, loopKey).Collection("lanes").Doc(fmt.Sprintf("%06d", lane))
}

// completeIteration ends the record (IterationEnd's rules) with the lane
// marker of a lane's last iteration in the same commit.
func (f *Firestore) completeIteration(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	it := p.Iteration
	if len(it.Group) > 0 {
		return f.completeGroup(ctx, p)
	}
	end := it.End
	ref := f.iteration(p.ExecutionID, end.LoopKey, end.Record.Index)
	b, err := json.Marshal(end.Record)
	if err != nil {
		return store.UnitCompletion{}, fmt.Errorf("store: encode iteration: %w", err)
	}
	doc := iterDoc{Index: end.Record.Index, Status: string(end.Record.Status), Data: string(b)}.withTTL(f.retention())
	m := meterOf(ctx, p.ExecutionID)
	var lane func(*firestore.WriteBatch)
	if it.LaneDone && end.Record.Status != types.StatusCanceled {
		lref := f.laneRef(p.ExecutionID, end.LoopKey, it.Lane)
		ldoc := map[string]any{"lane": it.Lane, "expire_at": time.Now().UTC().Add(f.retention())}
		lane = func(b *firestore.WriteBatch) { b.Set(lref, ldoc) }
	}
	if end.Holder == "" {
		// The first end of an iteration run without a lease: one Create
		// (with the lane's marker: one request).
		var err error
		if lane == nil {
			m.Write(1)
			_, err = ref.Create(ctx, doc)
		} else {
			wb := f.c.Batch() //nolint:staticcheck // one request, no read (see checkpointOptimistic)
			wb.Create(ref, doc)
			lane(wb)
			m.Write(2)
			_, err = wb.Commit(ctx)
		}
		if err == nil {
			return store.UnitCompletion{First: true, Canceled: end.Record.Status == types.StatusCanceled}, nil
		}
		if !isCode(err, codes.AlreadyExists) {
			return store.UnitCompletion{}, errs.Wrap(errs.CodeOf(err), err, "store: complete iteration")
		}
	}
	var res store.UnitCompletion
	err = f.cas(ctx, m, ref, "store: complete iteration", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		res = store.UnitCompletion{}
		if s == nil {
			res.First = true
			return casWrite{create: doc, also: lane}, nil
		}
		var d iterDoc
		if err := s.DataTo(&d); err != nil {
			return casWrite{}, err
		}
		switch {
		case d.Status == string(types.StatusCanceled):
			res.Canceled = true
			return casWrite{}, nil
		case d.Status != string(types.StatusRunning):
			return casWrite{}, nil // ended by an earlier run: its lane is written below
		}
		also := lane
		if id, parked := store.ParkedBy(d.Holder); parked {
			r := end.Resolution(id)
			also = func(b *firestore.WriteBatch) {
				f.dlqResolve(b, r)
				if lane != nil {
					lane(b)
				}
			}
		} else if end.Holder == "" && d.Holder != "" && d.Expires.After(end.Now) {
			res.Held = true
			return casWrite{}, nil // leased by another delivery: its holder ends it
		} else if end.Holder != "" && d.Holder != end.Holder {
			return casWrite{}, store.ErrLeaseLost
		}
		res.First = true
		return casWrite{update: iterUpdate(doc), also: also}, nil
	})
	if err != nil {
		return store.UnitCompletion{}, err
	}
	if end.Record.Status == types.StatusCanceled && res.First {
		res.Canceled = true
	}
	if !res.First && !res.Canceled && !res.Held && lane != nil {
		// A duplicate end: the earlier run's commit wrote the lane's
		// marker with its record; writing it again is harmless and covers
		// a record ended by another path.
		if err := f.LaneDone(ctx, p.ExecutionID, end.LoopKey, it.Lane); err != nil {
			return store.UnitCompletion{}, err
		}
	}
	return res, nil
}
