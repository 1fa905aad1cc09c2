package firestorestore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store/internal/codec"
	"github.com/noetl/gcpengine/shared/types"
)

type batchDoc struct {
	Clock    int64              `firestore:"clock"`
	Source   string             `firestore:"source"`
	Data     string             `firestore:"data"` // JSON []types.Event
	Ops      map[string]float64 `firestore:"ops,omitempty"`
	Created  time.Time          `firestore:"created"`
	ExpireAt time.Time          `firestore:"expire_at"`
}

func encodeBatch(b types.Batch, retention time.Duration) (batchDoc, error) {
	data, err := json.Marshal(b.Events)
	if err != nil {
		return batchDoc{}, fmt.Errorf("store: encode batch: %w", err)
	}
	var clock int64
	if len(b.Events) > 0 {
		clock = b.Events[0].Clock
	}
	now := time.Now().UTC()
	return batchDoc{Clock: clock, Source: b.Source, Data: string(data), Ops: b.Ops, Created: now, ExpireAt: now.Add(retention)}, nil
}

// BatchPut implements store.Store (a Create: the first copy wins).
func (f *Firestore) BatchPut(ctx context.Context, b types.Batch) (bool, error) {
	d, err := encodeBatch(b, f.retention())
	if err != nil {
		return false, err
	}
	meterOf(ctx, b.ExecutionID).Write(1)
	if _, err := f.exec(b.ExecutionID).Collection("batches").Doc(b.ID).Create(ctx, d); err != nil {
		if isCode(err, codes.AlreadyExists) {
			return false, nil
		}
		return false, errs.Wrap(errs.CodeOf(err), err, "store: put batch")
	}
	return true, nil
}

func (f *Firestore) batches(ctx context.Context, executionID string, fn func(id string, d batchDoc) error, fields ...string) error {
	q := f.exec(executionID).Collection("batches").Query
	if len(fields) > 0 {
		q = q.Select(fields...)
	}
	it := q.Documents(ctx)
	defer it.Stop()
	for {
		s, err := it.Next()
		if err == iterator.Done {
			return nil
		}
		if err != nil {
			return errs.Wrap(errs.CodeOf(err), err, "store: list batches")
		}
		var d batchDoc
		if err := s.DataTo(&d); err != nil {
			return err
		}
		if err := fn(s.Ref.ID, d); err != nil {
			return err
		}
	}
}

// EventList implements store.Store.
func (f *Firestore) EventList(ctx context.Context, executionID string) ([]types.Event, error) {
	var ps []types.Projected
	err := f.batches(ctx, executionID, func(id string, d batchDoc) error {
		p, err := codec.Events(id, []byte(d.Data))
		ps = append(ps, p...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return types.EventsInOrder(ps), nil
}

// EventLog implements store.Store.
func (f *Firestore) EventLog(ctx context.Context, executionID string) ([]types.Event, map[string]float64, error) {
	var ps []types.Projected
	tot := map[string]float64{}
	err := f.batches(ctx, executionID, func(id string, d batchDoc) error {
		for k, v := range d.Ops {
			tot[k] += v
		}
		p, err := codec.Events(id, []byte(d.Data))
		ps = append(ps, p...)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return types.EventsInOrder(ps), tot, nil
}

// OpsTotal implements store.Store.
func (f *Firestore) OpsTotal(ctx context.Context, executionID string) (map[string]float64, error) {
	tot := map[string]float64{}
	// Only the ops field: a batch's events are most of its bytes.
	err := f.batches(ctx, executionID, func(_ string, d batchDoc) error {
		for k, v := range d.Ops {
			tot[k] += v
		}
		return nil
	}, "ops")
	return tot, err
}
