package firestorestore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/internal/codec"
)

// groupDoc is a group record document
// (executions/{id}/loops/{key}/iteration_groups/{first}-{last}): the ended records
// of a batch's iterations committed together (store.IterationCompletion
// Group), one write for them all.
type groupDoc struct {
	// Indexes are the iterations it records (an array-contains query
	// finds an index's group).
	Indexes []int `firestore:"indexes"`
	// Records maps each index (decimal) to its record's JSON
	// (engine.IterationRecord).
	Records  map[string]string `firestore:"records"`
	ExpireAt time.Time         `firestore:"expire_at"`
}

func (f *Firestore) groups(execID, loopKey string) *firestore.CollectionRef {
	return f.loop(execID, loopKey).Collection("iteration_groups")
}

// completeGroup commits End with its Group as one group document (a
// Create: one already there is left as it is, First false) with the
// lane's marker in the same commit.
func (f *Firestore) completeGroup(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	it := p.Iteration
	key := it.End.LoopKey
	recs := it.GroupRecords()
	d := groupDoc{Records: make(map[string]string, len(recs)), ExpireAt: time.Now().UTC().Add(f.retention())}
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return store.UnitCompletion{}, fmt.Errorf("store: encode iteration: %w", err)
		}
		d.Indexes = append(d.Indexes, r.Index)
		d.Records[strconv.Itoa(r.Index)] = string(b)
	}
	ref := f.groups(p.ExecutionID, key).Doc(store.GroupID(recs))
	m := meterOf(ctx, p.ExecutionID)
	var err error
	if it.LaneDone {
		wb := f.c.Batch() //nolint:staticcheck // one request, no read (see checkpointOptimistic)
		wb.Create(ref, d)
		wb.Set(f.laneRef(p.ExecutionID, key, it.Lane), map[string]any{"lane": it.Lane, "expire_at": d.ExpireAt})
		m.Write(2)
		_, err = wb.Commit(ctx)
	} else {
		m.Write(1)
		_, err = ref.Create(ctx, d)
	}
	switch {
	case err == nil:
		return store.UnitCompletion{First: true}, nil
	case !isCode(err, codes.AlreadyExists):
		return store.UnitCompletion{}, errs.Wrap(errs.CodeOf(err), err, "store: complete iteration group")
	case it.LaneDone:
		// The same group committed before (its commit wrote the marker;
		// writing it again is harmless).
		return store.UnitCompletion{}, f.LaneDone(ctx, p.ExecutionID, key, it.Lane)
	}
	return store.UnitCompletion{}, nil
}

// groupedRecord returns index's record in the loop's group documents
// (the first by id holding it), nil when none does: one query.
func (f *Firestore) groupedRecord(ctx context.Context, execID, loopKey string, index int) (*engine.IterationRecord, error) {
	meterOf(ctx, execID).Read(1)
	docs, err := f.groups(execID, loopKey).Where("indexes", "array-contains", index).OrderBy(firestore.DocumentID, firestore.Asc).Limit(1).Documents(ctx).GetAll()
	if err != nil {
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: find iteration group")
	}
	if len(docs) == 0 {
		return nil, nil
	}
	var d groupDoc
	if err := docs[0].DataTo(&d); err != nil {
		return nil, err
	}
	raw, ok := d.Records[strconv.Itoa(index)]
	if !ok {
		return nil, fmt.Errorf("store: group %s lists iteration %d without its record", docs[0].Ref.ID, index)
	}
	return codec.Iteration([]byte(raw))
}

// groupedRecords lists every record of the loop's group documents,
// groups in id order, and the number of documents read.
func (f *Firestore) groupedRecords(ctx context.Context, execID, loopKey string) ([]engine.IterationRecord, int, error) {
	type group struct {
		id   string
		recs []engine.IterationRecord
	}
	gs, err := listDocs(ctx, f.groups(execID, loopKey).Query, "list iteration groups", func(s *firestore.DocumentSnapshot, d *groupDoc) (group, error) {
		g := group{id: s.Ref.ID}
		for _, raw := range d.Records {
			r, err := codec.Iteration([]byte(raw))
			if err != nil {
				return group{}, err
			}
			g.recs = append(g.recs, *r)
		}
		sort.Slice(g.recs, func(i, j int) bool { return g.recs[i].Index < g.recs[j].Index })
		return g, nil
	})
	if err != nil {
		return nil, 0, err
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].id < gs[j].id })
	var out []engine.IterationRecord
	for _, g := range gs {
		out = append(out, g.recs...)
	}
	return out, len(gs), nil
}
