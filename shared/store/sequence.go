package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/types"
)

// chainTip is the last sequenced event of an execution.
type chainTip struct {
	seq int64
	id  string
}

// tips caches chain tips per execution id for EventAppend; a stale entry
// (another instance appended since) is detected by the seq claim and
// refreshed from Firestore.
var tips sync.Map

type seqDoc struct {
	Seq     int64  `firestore:"seq"`
	EventID string `firestore:"event_id"`
}

// EventAppend implements Store: it projects ev as the next event of its
// execution's chain: Seq = previous seq + 1 (from 1) and PrevEventID = the
// previous event's id (DSL.md "Events": seq monotonic per execution,
// prev_event_id chain). The claim of the seq number
// (executions/{id}/seq/{n}) and the event document are created in one
// atomic batch, so two appenders can never take the same number and a
// redelivered event (same event_id) is reported as dup without consuming
// one. Callers must deliver one execution's events one at a time, in
// order (the ordered materialize subscription does).
func (f *Firestore) EventAppend(ctx context.Context, ev types.Event) (seq int64, dup bool, err error) {
	events := f.exec(ev.ExecutionID).Collection("events")
	seqs := f.exec(ev.ExecutionID).Collection("seq")
	for try := 0; try < 5; try++ {
		tip, ok := loadTip(ev.ExecutionID)
		if !ok || try > 0 {
			if tip, err = f.readTip(ctx, ev.ExecutionID); err != nil {
				return 0, false, err
			}
		}
		ev.Seq = tip.seq + 1
		ev.PrevEventID = tip.id
		b, err := json.Marshal(ev)
		if err != nil {
			return 0, false, fmt.Errorf("store: encode event: %w", err)
		}
		batch := f.c.Batch()
		batch.Create(seqs.Doc(fmt.Sprintf("%012d", ev.Seq)), seqDoc{Seq: ev.Seq, EventID: ev.EventID})
		batch.Create(events.Doc(ev.EventID), eventDoc{Type: ev.EventType, Timestamp: ev.Timestamp, Step: ev.Step, Seq: ev.Seq, Data: string(b)})
		_, err = batch.Commit(ctx)
		if err == nil {
			tips.Store(ev.ExecutionID, chainTip{seq: ev.Seq, id: ev.EventID})
			return ev.Seq, false, nil
		}
		if !isCode(err, codes.AlreadyExists) {
			return 0, false, fmt.Errorf("store: append event: %w", err)
		}
		// Either the event is a duplicate or the cached tip is stale.
		s, gerr := events.Doc(ev.EventID).Get(ctx)
		if gerr == nil {
			var d eventDoc
			_ = s.DataTo(&d)
			return d.Seq, true, nil
		}
		if !isCode(gerr, codes.NotFound) {
			return 0, false, fmt.Errorf("store: append event: %w", gerr)
		}
	}
	return 0, false, errors.New("store: append event: seq contention did not settle")
}

func loadTip(execID string) (chainTip, bool) {
	v, ok := tips.Load(execID)
	if !ok {
		return chainTip{}, false
	}
	return v.(chainTip), true
}

// readTip reads the highest claimed seq of an execution.
func (f *Firestore) readTip(ctx context.Context, execID string) (chainTip, error) {
	it := f.exec(execID).Collection("seq").OrderBy("seq", firestore.Desc).Limit(1).Documents(ctx)
	defer it.Stop()
	s, err := it.Next()
	if err == iterator.Done {
		return chainTip{}, nil
	}
	if err != nil {
		return chainTip{}, fmt.Errorf("store: read chain tip: %w", err)
	}
	var d seqDoc
	if err := s.DataTo(&d); err != nil {
		return chainTip{}, err
	}
	return chainTip{seq: d.Seq, id: d.EventID}, nil
}
