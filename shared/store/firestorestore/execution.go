package firestorestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

type execDoc struct {
	Status    string    `firestore:"status"`
	Playbook  string    `firestore:"playbook"`
	ParentID  string    `firestore:"parent_id"`
	Creator   string    `firestore:"creator"`
	RerunOf   string    `firestore:"rerun_of,omitempty"`
	Version   int64     `firestore:"version"`
	CreatedAt time.Time `firestore:"created_at"`
	UpdatedAt time.Time `firestore:"updated_at"`
	State     string    `firestore:"state"`
	Source    string    `firestore:"source"`
	// Files is Execution.Files as JSON ("" when there are none).
	Files string `firestore:"files,omitempty"`
	// ExpireAt is set when the execution ends (the collection's TTL policy
	// deletes it after the retention period).
	ExpireAt *time.Time `firestore:"expire_at,omitempty"`
}

func toDoc(sealer store.Sealer, retention time.Duration, rec *store.Execution) (execDoc, error) {
	st := *rec.State
	wl, err := store.SealWorkload(sealer, st.Workload)
	if err != nil {
		return execDoc{}, err
	}
	st.Workload = wl
	b, err := json.Marshal(&st)
	if err != nil {
		return execDoc{}, fmt.Errorf("store: encode state: %w", err)
	}
	created := rec.State.CreatedAt.UTC()
	now := time.Now().UTC()
	d := execDoc{Status: string(rec.State.Status), Playbook: rec.State.Playbook, ParentID: rec.State.ParentID, Creator: rec.State.Creator,
		RerunOf: rec.State.RerunOf, Version: rec.State.Version, CreatedAt: created, UpdatedAt: now, State: string(b), Source: rec.Source}
	if len(rec.Files) > 0 {
		fb, err := json.Marshal(rec.Files)
		if err != nil {
			return execDoc{}, fmt.Errorf("store: encode files: %w", err)
		}
		d.Files = string(fb)
	}
	if rec.State.Terminal() {
		exp := now.Add(retention)
		d.ExpireAt = &exp
	}
	return d, nil
}

func fromSnap(sealer store.Sealer, s *firestore.DocumentSnapshot) (*store.Execution, error) {
	var d execDoc
	if err := s.DataTo(&d); err != nil {
		return nil, fmt.Errorf("store: decode execution: %w", err)
	}
	st := &engine.State{}
	if err := jsonx.Unmarshal([]byte(d.State), st); err != nil {
		return nil, fmt.Errorf("store: decode state: %w", err)
	}
	wl, err := store.OpenWorkload(sealer, st.Workload)
	if err != nil {
		return nil, err
	}
	st.Workload = wl
	store.NormState(st)
	rec := &store.Execution{State: st, Source: d.Source}
	if d.Files != "" {
		if err := json.Unmarshal([]byte(d.Files), &rec.Files); err != nil {
			return nil, fmt.Errorf("store: decode files: %w", err)
		}
	}
	return rec, nil
}

// ExecutionCreate implements store.Store.
func (f *Firestore) ExecutionCreate(ctx context.Context, rec *store.Execution) error {
	if err := store.CheckNew(rec); err != nil {
		return err
	}
	d, err := toDoc(f.Sealer, f.retention(), rec)
	if err != nil {
		return err
	}
	m := meterOf(ctx, rec.State.ExecutionID)
	m.Write(1)
	if _, err := f.exec(rec.State.ExecutionID).Create(ctx, d); err != nil {
		if isCode(err, codes.AlreadyExists) {
			return store.ErrExists
		}
		return errs.Wrap(errs.CodeOf(err), err, "store: create execution")
	}
	return nil
}

// ExecutionGet implements store.Store.
func (f *Firestore) ExecutionGet(ctx context.Context, id string) (*store.Execution, error) {
	meterOf(ctx, id).Read(1)
	s, err := f.exec(id).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, store.ErrNotFound
		}
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: get execution")
	}
	rec, err := fromSnap(f.Sealer, s)
	if err != nil {
		return nil, err
	}
	rec.UpdateTime = s.UpdateTime
	return rec, nil
}

// ExecutionWatch implements store.Store with a snapshot listener on the
// execution document (one read per snapshot, metered).
func (f *Firestore) ExecutionWatch(ctx context.Context, id string, fn func(*store.Execution) bool) error {
	it := f.exec(id).Snapshots(ctx)
	defer it.Stop()
	m := meterOf(ctx, id)
	for {
		s, err := it.Next()
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return errs.Wrap(errs.CodeOf(err), err, "store: watch execution")
		}
		m.Read(1)
		if !s.Exists() {
			return store.ErrNotFound
		}
		rec, err := fromSnap(f.Sealer, s)
		if err != nil {
			return err
		}
		rec.UpdateTime = s.UpdateTime
		if fn(rec) {
			return nil
		}
	}
}

// ExecutionList implements store.Store (newest first; status and playbook
// filters are equality filters on the duplicated scalar fields).
func (f *Firestore) ExecutionList(ctx context.Context, p store.ExecutionListParams) ([]store.ExecutionSummary, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	q := f.executionQuery(p)
	// Ties order by descending document id, as Firestore's implicit last
	// order does; written out so that a page can start after a cursor.
	q = q.OrderBy("created_at", firestore.Desc).OrderBy(firestore.DocumentID, firestore.Desc)
	if !p.BeforeCreated.IsZero() {
		q = q.StartAfter(p.BeforeCreated, p.BeforeID)
	}
	q = q.Limit(limit).Select("status", "playbook", "parent_id", "creator", "rerun_of", "created_at", "updated_at")
	return listDocs(ctx, q, "list executions", func(s *firestore.DocumentSnapshot, d *execDoc) (store.ExecutionSummary, error) {
		return store.ExecutionSummary{ExecutionID: s.Ref.ID, ParentID: d.ParentID, Playbook: d.Playbook, Creator: d.Creator, RerunOf: d.RerunOf,
			Status: types.Status(d.Status), CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}, nil
	})
}

// ExecutionCount implements store.Store: one count aggregation per status (in
// parallel), each billed one read per 1,000 index entries.
func (f *Firestore) ExecutionCount(ctx context.Context, p store.ExecutionListParams) (map[types.Status]int, error) {
	statuses := []types.Status{engine.ExecRequested, engine.ExecRunning, engine.ExecOK, engine.ExecFailed, engine.ExecCanceled}
	if p.Status != "" {
		statuses = []types.Status{p.Status}
	}
	counts := make([]int, len(statuses))
	errs1 := make([]error, len(statuses))
	var wg sync.WaitGroup
	for i, s := range statuses {
		q := p
		q.Status = s
		wg.Go(func() { counts[i], errs1[i] = count(ctx, f.executionQuery(q)) })
	}
	wg.Wait()
	if err := errors.Join(errs1...); err != nil {
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: count executions")
	}
	out := map[types.Status]int{}
	for i, s := range statuses {
		if counts[i] > 0 {
			out[s] = counts[i]
		}
	}
	return out, nil
}

// executionQuery is the executions collection filtered by p (not ordered,
// no cursor, no limit).
func (f *Firestore) executionQuery(p store.ExecutionListParams) firestore.Query {
	q := f.c.Collection("executions").Query
	if !p.CreatedFrom.IsZero() {
		q = q.Where("created_at", ">=", p.CreatedFrom)
	}
	if !p.CreatedTo.IsZero() {
		q = q.Where("created_at", "<", p.CreatedTo)
	}
	if p.Status != "" {
		q = q.Where("status", "==", string(p.Status))
	}
	if p.Playbook != "" {
		q = q.Where("playbook", "==", p.Playbook)
	}
	if p.ParentID != "" {
		q = q.Where("parent_id", "==", p.ParentID)
	}
	if p.Creator != "" {
		q = q.Where("creator", "==", p.Creator)
	}
	return q
}
