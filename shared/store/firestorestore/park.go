package firestorestore

import (
	"context"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/internal/codec"
	"github.com/noetl/gcpengine/shared/types"
)

// IterationPark implements store.Store: a compare-and-set of the iteration
// record committed with the DLQ entry in one request.
func (f *Firestore) IterationPark(ctx context.Context, p store.IterationParkParams) (*engine.IterationRecord, error) {
	e := p.Entry
	e.Normalize()
	e.Status = store.DLQPending
	park := store.ParkHolder(e.MessageID)
	parked := iterDoc{Index: p.Index, Status: string(types.StatusRunning), Holder: park}.withTTL(f.retention())
	file := func(b *firestore.WriteBatch) { f.dlqFile(b, e) }
	ref := f.iteration(p.ExecutionID, p.LoopKey, p.Index)
	if p.Grouped {
		// An end committed in a group document has ended (as IterationBegin).
		r, err := f.groupedRecord(ctx, p.ExecutionID, p.LoopKey, p.Index)
		if err != nil {
			return nil, err
		}
		if r != nil {
			meterOf(ctx, p.ExecutionID).Read(1)
			if _, err := ref.Get(ctx); isCode(err, codes.NotFound) {
				return r, nil
			}
		}
	}
	var done *engine.IterationRecord
	err := f.cas(ctx, meterOf(ctx, p.ExecutionID), ref, "store: park iteration", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		done = nil
		if s == nil {
			return casWrite{create: parked, also: file}, nil
		}
		var d iterDoc
		if err := s.DataTo(&d); err != nil {
			return casWrite{}, err
		}
		if d.Status != string(types.StatusRunning) {
			var err error
			done, err = codec.Iteration([]byte(d.Data))
			return casWrite{}, err
		}
		if d.Holder == park {
			return casWrite{}, nil
		}
		if _, ok := store.ParkedBy(d.Holder); ok {
			return casWrite{}, store.ErrParked
		}
		if d.Holder != "" && d.Holder != p.Holder && d.Expires.After(p.Now) {
			return casWrite{}, store.ErrLeaseHeld
		}
		return casWrite{update: iterUpdate(parked), also: file}, nil
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}
