package firestorestore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
)

func (f *Firestore) outbox(execID, id string) *firestore.DocumentRef {
	return f.exec(execID).Collection("outbox").Doc(id)
}

// ExecutionCheckpoint implements store.Store as a compare-and-set (see cas): the
// transition computed on a read of the execution document is committed in
// one request with an update-time precondition on that document (1 write
// RPC with its outbox and loop plans); a precondition failure (the
// document changed since) re-reads and applies again, at most casAttempts
// times. With p.Base the first attempt uses the caller's read (no read
// here). No transaction: an instance dying mid-checkpoint leaves no lock
// on the execution document.
func (f *Firestore) ExecutionCheckpoint(ctx context.Context, p store.CheckpointParams) (store.Checkpoint, error) {
	return f.checkpoint(ctx, p, nil)
}

// checkpoint is ExecutionCheckpoint; before, when set, runs at each
// attempt and returns writes of other documents committed with the
// transition (under their own preconditions: CompleteUnit's lease).
func (f *Firestore) checkpoint(ctx context.Context, p store.CheckpointParams, before func() (func(*firestore.WriteBatch), error)) (store.Checkpoint, error) {
	m := meterOf(ctx, p.ExecutionID)
	wait := 2 * time.Millisecond
	for attempt := 1; ; attempt++ {
		var also func(*firestore.WriteBatch)
		if before != nil {
			var err error
			if also, err = before(); err != nil {
				return store.Checkpoint{}, err
			}
		}
		if p.Base == nil || p.Base.UpdateTime.IsZero() {
			m.Read(1)
			s, err := f.exec(p.ExecutionID).Get(ctx)
			if err != nil {
				if isCode(err, codes.NotFound) {
					return store.Checkpoint{}, store.ErrNotFound
				}
				return store.Checkpoint{}, errs.Wrap(errs.CodeOf(err), err, "store: checkpoint")
			}
			rec, err := fromSnap(f.Sealer, s)
			if err != nil {
				return store.Checkpoint{}, err
			}
			rec.UpdateTime = s.UpdateTime
			p.Base = rec
		}
		cp, done, err := f.checkpointOptimistic(ctx, p, also)
		if done || err != nil {
			return cp, err
		}
		if attempt >= casAttempts {
			return store.Checkpoint{}, errs.New(errs.FailedPrecondition, "store: checkpoint of %s: the execution document changed under %d attempts", p.ExecutionID, attempt)
		}
		p.Base = nil // re-read
		if err := sleepCtx(ctx, wait/2+rand.N(wait)); err != nil {
			return store.Checkpoint{}, errs.Wrap(errs.CodeOf(err), err, "store: checkpoint")
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

type docWrite struct {
	ref *firestore.DocumentRef
	doc any
}

// outputWrites are the documents a transition writes beside the state: its
// outbox and its new loop plans.
func (f *Firestore) outputWrites(executionID, outboxID string, out *engine.Output) ([]docWrite, error) {
	var ws []docWrite
	if !out.Empty() {
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("store: encode outbox: %w", err)
		}
		exp := time.Now().UTC().Add(f.retention())
		ws = append(ws, docWrite{f.outbox(executionID, outboxID), blobDoc{Data: string(b), ExpireAt: &exp}})
	}
	for _, plan := range out.Loops {
		b, err := json.Marshal(plan)
		if err != nil {
			return nil, fmt.Errorf("store: encode loop plan: %w", err)
		}
		exp := time.Now().UTC().Add(f.retention())
		ws = append(ws, docWrite{f.loop(executionID, plan.Key()), blobDoc{Data: string(b), ExpireAt: &exp}})
	}
	return ws, nil
}

// checkpointOptimistic commits a transition computed on p.Base with a
// precondition on the execution document's update time. done=false means
// the document changed since p.Base was read (the caller falls back to a
// transaction).
func (f *Firestore) checkpointOptimistic(ctx context.Context, p store.CheckpointParams, also func(*firestore.WriteBatch)) (store.Checkpoint, bool, error) {
	out, err := p.Apply(p.Base)
	if err != nil {
		return store.Checkpoint{}, true, err
	}
	if out == nil {
		// Not applicable on this read; a fresher read might differ only if
		// the document changed, and then the transaction decides.
		return store.Checkpoint{State: p.Base.State}, true, nil
	}
	d, err := toDoc(f.Sealer, f.retention(), p.Base)
	if err != nil {
		return store.Checkpoint{}, true, err
	}
	writes, err := f.outputWrites(p.ExecutionID, p.OutboxID, out)
	if err != nil {
		return store.Checkpoint{}, true, err
	}
	m := meterOf(ctx, p.ExecutionID)
	// One Commit request with the update-time precondition. WriteBatch is
	// the client's only one-request, no-read multi-document commit with
	// preconditions (deprecated upstream in favour of transactions, which
	// cost two more round trips on this, the step's critical path).
	b := f.c.Batch() //nolint:staticcheck // see above
	b.Update(f.exec(p.ExecutionID), []firestore.Update{
		{Path: "status", Value: d.Status}, {Path: "version", Value: d.Version},
		{Path: "updated_at", Value: d.UpdatedAt}, {Path: "state", Value: d.State},
		{Path: "expire_at", Value: d.ExpireAt},
	}, firestore.LastUpdateTime(p.Base.UpdateTime))
	for _, w := range writes {
		b.Set(w.ref, w.doc)
	}
	if p.Base.File != nil {
		f.dlqFile(b, *p.Base.File)
		m.Write(1)
	}
	for _, r := range p.Base.Resolve {
		f.dlqResolve(b, r)
		m.Write(1)
	}
	if also != nil {
		also(b)
	}
	m.Write(float64(1 + len(writes)))
	res, err := b.Commit(ctx)
	if err != nil {
		if isCode(err, codes.FailedPrecondition) || isCode(err, codes.Aborted) {
			return store.Checkpoint{}, false, nil
		}
		if isCode(err, codes.NotFound) {
			return store.Checkpoint{}, true, store.ErrNotFound
		}
		return store.Checkpoint{}, true, errs.Wrap(errs.CodeOf(err), err, "store: checkpoint")
	}
	cp := store.Checkpoint{Applied: true, Output: out, State: p.Base.State}
	if len(res) > 0 && res[0] != nil { // the execution document's update, the batch's first write
		cp.UpdateTime = res[0].UpdateTime
	}
	return cp, true, nil
}

// OutboxGet implements store.Store.
func (f *Firestore) OutboxGet(ctx context.Context, executionID, id string) (*engine.Output, error) {
	meterOf(ctx, executionID).Read(1)
	o, err := getBlob[engine.Output](ctx, f.outbox(executionID, id), "outbox")
	if err != nil {
		return nil, err
	}
	store.NormOutput(o)
	return o, nil
}
