package firestorestore

import (
	"context"
	"sort"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
)

// DLQPut implements store.Store. A repeated entry for the same message keeps
// its first_seen and status and the larger attempt count (a
// compare-and-set).
func (f *Firestore) DLQPut(ctx context.Context, e store.DLQEntry) error {
	f.dlqDefaults(&e)
	ref := f.c.Collection("dlq").Doc(e.MessageID)
	return f.cas(ctx, meterOf(ctx, e.ExecutionID), ref, "store: put dlq entry", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		if s == nil {
			return casWrite{create: e}, nil
		}
		var old store.DLQEntry
		if err := s.DataTo(&old); err != nil {
			return casWrite{}, err
		}
		attempts := max(old.Attempts, e.Attempts)
		return casWrite{update: []firestore.Update{
			{Path: "attempts", Value: attempts}, {Path: "last_error", Value: e.LastError}, {Path: "last_seen", Value: e.LastSeen},
			{Path: "payload", Value: e.Payload}, {Path: "context_excerpt", Value: e.ContextExcerpt}, {Path: "unit", Value: e.Unit},
			{Path: "attributes", Value: e.Attributes}, {Path: "unit_encoding", Value: e.UnitEncoding}, {Path: "tool_kind", Value: e.ToolKind}, {Path: "source", Value: e.Source},
			{Path: "kind", Value: e.Kind}, {Path: "topic", Value: e.Topic}, {Path: "expire_at", Value: e.ExpireAt},
		}}, nil
	})
}

// DLQGet implements store.Store.
func (f *Firestore) DLQGet(ctx context.Context, id string) (*store.DLQEntry, error) {
	s, err := f.c.Collection("dlq").Doc(store.DLQID(id)).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, store.ErrNotFound
		}
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: get dlq entry")
	}
	var e store.DLQEntry
	if err := s.DataTo(&e); err != nil {
		return nil, err
	}
	return &e, nil
}

// DLQList implements store.Store (ordered by last_seen, newest first).
func (f *Firestore) DLQList(ctx context.Context, status store.DLQStatus, limit int) ([]store.DLQEntry, error) {
	if limit <= 0 {
		limit = 100
	}
	q := f.c.Collection("dlq").Query
	if status != "" {
		q = q.Where("status", "==", status)
	}
	return listDocs(ctx, q.OrderBy("last_seen", firestore.Desc).Limit(limit), "list dlq", dlqEntry)
}

// dlqEntry is the view of a DLQ document: the entry as stored.
func dlqEntry(_ *firestore.DocumentSnapshot, e *store.DLQEntry) (store.DLQEntry, error) {
	return *e, nil
}

// dlqQueryScan bounds the entries a filtered DLQ query reads: equality
// filters on execution_id, tool_kind and status need no composite index
// (Firestore merges the single-field ones) when the query has no order,
// so the entries are ordered here.
const dlqQueryScan = 5000

// DLQQuery implements store.Store: without an execution or tool kind it is
// DLQList; with one, the matching entries (at most dlqQueryScan of them)
// ordered by last_seen here, newest first.
func (f *Firestore) DLQQuery(ctx context.Context, flt store.DLQFilter) ([]store.DLQEntry, error) {
	if flt.ExecutionID == "" && flt.ToolKind == "" {
		return f.DLQList(ctx, flt.Status, flt.Limit)
	}
	limit := flt.Limit
	if limit <= 0 {
		limit = 100
	}
	q := f.c.Collection("dlq").Query
	if flt.Status != "" {
		q = q.Where("status", "==", flt.Status)
	}
	if flt.ExecutionID != "" {
		q = q.Where("execution_id", "==", flt.ExecutionID)
	}
	if flt.ToolKind != "" {
		q = q.Where("tool_kind", "==", flt.ToolKind)
	}
	out, err := listDocs(ctx, q.Limit(dlqQueryScan), "query dlq", dlqEntry)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastSeen.Equal(out[j].LastSeen) {
			return out[i].LastSeen.After(out[j].LastSeen)
		}
		return out[i].MessageID < out[j].MessageID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// DLQSetStatus implements store.Store (a compare-and-set from status from).
func (f *Firestore) DLQSetStatus(ctx context.Context, id string, from, to store.DLQStatus, note string) (*store.DLQEntry, error) {
	ref := f.c.Collection("dlq").Doc(store.DLQID(id))
	var out *store.DLQEntry
	err := f.cas(ctx, meterOf(ctx, ""), ref, "store: set dlq status", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		if s == nil {
			return casWrite{}, store.ErrNotFound
		}
		var e store.DLQEntry
		if err := s.DataTo(&e); err != nil {
			return casWrite{}, err
		}
		if e.Status != from {
			return casWrite{}, errs.New(errs.FailedPrecondition, "store: dlq entry %s is %s, not %s", id, e.Status, from)
		}
		e.Status, e.Note = to, note
		out = &e
		return casWrite{update: []firestore.Update{{Path: "status", Value: to}, {Path: "note", Value: note}}}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// dlqResolve adds the write of a DLQ resolution to b: the entry's status
// and note merged into it (created bare if it expired meanwhile).
func (f *Firestore) dlqResolve(b *firestore.WriteBatch, r store.DLQResolution) {
	m := map[string]any{"message_id": store.DLQID(r.ID), "status": r.Status}
	if r.Note != "" {
		m["note"] = r.Note
	}
	b.Set(f.c.Collection("dlq").Doc(store.DLQID(r.ID)), m, firestore.MergeAll)
}

// dlqDefaults normalizes e and fills what a filed entry defaults to:
// status pending and the retention's expiry.
func (f *Firestore) dlqDefaults(e *store.DLQEntry) {
	e.Normalize()
	if e.Status == "" {
		e.Status = store.DLQPending
	}
	if e.ExpireAt == nil {
		exp := f.dlqExpiry()
		e.ExpireAt = &exp
	}
}

// dlqFile adds the write of a filed DLQ entry to b (status pending).
func (f *Firestore) dlqFile(b *firestore.WriteBatch, e store.DLQEntry) {
	f.dlqDefaults(&e)
	b.Set(f.c.Collection("dlq").Doc(e.MessageID), e)
}
