package firestorestore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/internal/codec"
	"github.com/noetl/gcpengine/shared/types"
)

func (f *Firestore) loop(execID, key string) *firestore.DocumentRef {
	return f.exec(execID).Collection("loops").Doc(key)
}

// LoopGet implements store.Store.
func (f *Firestore) LoopGet(ctx context.Context, executionID, key string) (*engine.LoopPlan, error) {
	meterOf(ctx, executionID).Read(1)
	p, err := getBlob[engine.LoopPlan](ctx, f.loop(executionID, key), "loop plan")
	if err != nil {
		return nil, err
	}
	store.NormPlan(p)
	return p, nil
}

type iterDoc struct {
	Index   int       `firestore:"index"`
	Status  string    `firestore:"status"` // running | ok | error
	Holder  string    `firestore:"holder,omitempty"`
	Expires time.Time `firestore:"expires,omitempty"`
	Data    string    `firestore:"data,omitempty"`
	// ExpireAt is the TTL field (Retention after the last write).
	ExpireAt time.Time `firestore:"expire_at"`
}

// withTTL returns d with its TTL field set retention from now.
func (d iterDoc) withTTL(retention time.Duration) iterDoc {
	d.ExpireAt = time.Now().UTC().Add(retention)
	return d
}

func (f *Firestore) iteration(execID, loopKey string, idx int) *firestore.DocumentRef {
	return f.loop(execID, loopKey).Collection("iterations").Doc(fmt.Sprintf("%08d", idx))
}

// IterationBegin implements store.Store: a Create for the first delivery, else
// a compare-and-set that takes over an expired lease.
func (f *Firestore) IterationBegin(ctx context.Context, p store.IterationBeginParams) (*engine.IterationRecord, error) {
	ref := f.iteration(p.ExecutionID, p.LoopKey, p.Index)
	m := meterOf(ctx, p.ExecutionID)
	if p.Grouped {
		// The group documents first: an index recorded there has ended
		// (unless its own document says otherwise, read below).
		r, err := f.groupedRecord(ctx, p.ExecutionID, p.LoopKey, p.Index)
		if err != nil {
			return nil, err
		}
		if r != nil {
			m.Read(1)
			if _, err := ref.Get(ctx); isCode(err, codes.NotFound) {
				return r, nil
			}
		}
	}
	m.Write(1)
	running := iterDoc{Index: p.Index, Status: string(types.StatusRunning), Holder: p.Holder, Expires: p.Now.Add(p.TTL)}.withTTL(f.retention())
	_, err := ref.Create(ctx, running)
	if err == nil {
		return nil, nil
	}
	if !isCode(err, codes.AlreadyExists) {
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: begin iteration")
	}
	var done *engine.IterationRecord
	err = f.cas(ctx, m, ref, "store: begin iteration", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		done = nil
		if s == nil {
			return casWrite{create: running}, nil
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
		id, parked := store.ParkedBy(d.Holder)
		switch {
		case parked && id != p.Unpark:
			return casWrite{}, store.ErrParked
		case parked:
			// The entry's replay takes the iteration: the entry is
			// replayed (same commit).
			r := store.DLQResolution{ID: id, Status: store.DLQReplayed}
			return casWrite{update: iterUpdate(running), also: func(b *firestore.WriteBatch) { f.dlqResolve(b, r) }}, nil
		case d.Holder != p.Holder && d.Expires.After(p.Now):
			return casWrite{}, store.ErrLeaseHeld
		}
		return casWrite{update: iterUpdate(running)}, nil
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}

// IterationEnd implements store.Store: a Create without a holder, else a
// compare-and-set that records the end while the holder still holds the
// iteration.
func (f *Firestore) IterationEnd(ctx context.Context, p store.IterationEndParams) (bool, error) {
	if err := store.CheckEnded(p.Record); err != nil {
		return false, err
	}
	ref := f.iteration(p.ExecutionID, p.LoopKey, p.Record.Index)
	b, err := json.Marshal(p.Record)
	if err != nil {
		return false, fmt.Errorf("store: encode iteration: %w", err)
	}
	doc := iterDoc{Index: p.Record.Index, Status: string(p.Record.Status), Data: string(b)}.withTTL(f.retention())
	m := meterOf(ctx, p.ExecutionID)
	if p.Holder == "" {
		m.Write(1)
		_, err := ref.Create(ctx, doc)
		if err == nil {
			return true, nil
		}
		if !isCode(err, codes.AlreadyExists) {
			return false, errs.Wrap(errs.CodeOf(err), err, "store: end iteration")
		}
		// The record exists: ended (a duplicate), leased by another
		// delivery, or parked in the DLQ (read below).
	}
	first := false
	err = f.cas(ctx, m, ref, "store: end iteration", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		first = false
		if s == nil {
			first = true
			return casWrite{create: doc}, nil
		}
		var d iterDoc
		if err := s.DataTo(&d); err != nil {
			return casWrite{}, err
		}
		if d.Status != string(types.StatusRunning) {
			return casWrite{}, nil
		}
		if id, parked := store.ParkedBy(d.Holder); parked {
			r := p.Resolution(id)
			first = true
			return casWrite{update: iterUpdate(doc), also: func(b *firestore.WriteBatch) { f.dlqResolve(b, r) }}, nil
		}
		if p.Holder == "" && d.Holder != "" && d.Expires.After(p.Now) {
			return casWrite{}, nil // leased by another delivery: its holder ends it
		}
		if p.Holder != "" && d.Holder != p.Holder {
			return casWrite{}, store.ErrLeaseLost
		}
		first = true
		return casWrite{update: iterUpdate(doc)}, nil
	})
	if err != nil {
		return false, err
	}
	return first, nil
}

// IterationRunning implements store.Store (a query on the status).
func (f *Firestore) IterationRunning(ctx context.Context, executionID, loopKey string) ([]store.IterationLease, error) {
	docs, err := f.loop(executionID, loopKey).Collection("iterations").Where("status", "in", []string{string(types.StatusRunning), string(types.StatusCanceled)}).Documents(ctx).GetAll()
	if err != nil {
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: list running iterations")
	}
	meterOf(ctx, executionID).Read(float64(max(1, len(docs))))
	out := make([]store.IterationLease, 0, len(docs))
	for _, s := range docs {
		var d iterDoc
		if err := s.DataTo(&d); err != nil {
			return nil, err
		}
		l := store.IterationLease{Index: d.Index, Status: types.Status(d.Status), Holder: d.Holder, Expires: d.Expires}
		if l.Status == types.StatusCanceled {
			r, err := codec.Iteration([]byte(d.Data))
			if err != nil {
				return nil, err
			}
			l.Clock = r.Clock
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// IterationRelease implements store.Store (a compare-and-set that clears the
// holder while the caller still holds the iteration).
func (f *Firestore) IterationRelease(ctx context.Context, executionID, loopKey string, index int, holder string) error {
	ref := f.iteration(executionID, loopKey, index)
	return f.cas(ctx, meterOf(ctx, executionID), ref, "store: release iteration", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		if s == nil {
			return casWrite{}, nil
		}
		var d iterDoc
		if err := s.DataTo(&d); err != nil {
			return casWrite{}, err
		}
		if d.Status != string(types.StatusRunning) || d.Holder != holder {
			return casWrite{}, nil
		}
		return casWrite{update: iterUpdate(iterDoc{Index: index, Status: string(types.StatusRunning)}.withTTL(f.retention()))}, nil
	})
}

// endedIterations is the query over a loop run's ended iterations.
func (f *Firestore) endedIterations(execID, loopKey string) firestore.Query {
	return f.loop(execID, loopKey).Collection("iterations").Where("status", "in", []string{string(types.StatusOK), string(types.StatusError)})
}

// IterationCount implements store.Store: an aggregation (billed one read
// per 1,000 index entries) when the loop has no group documents, else
// the records IterationList gives (an index in two documents counts
// once).
func (f *Firestore) IterationCount(ctx context.Context, executionID, loopKey string) (int, error) {
	g, err := count(ctx, f.groups(executionID, loopKey).Query)
	meterOf(ctx, executionID).Read(1)
	if err != nil {
		return 0, errs.Wrap(errs.CodeOf(err), err, "store: count iteration groups")
	}
	if g > 0 {
		recs, err := f.IterationList(ctx, executionID, loopKey)
		return len(recs), err
	}
	n, err := count(ctx, f.endedIterations(executionID, loopKey))
	meterOf(ctx, executionID).Read(float64(1 + n/1000))
	if err != nil {
		return 0, errs.Wrap(errs.CodeOf(err), err, "store: count iterations")
	}
	return n, nil
}

// IterationList implements store.Store.
func (f *Firestore) IterationList(ctx context.Context, executionID, loopKey string) ([]engine.IterationRecord, error) {
	out, err := listDocs(ctx, f.endedIterations(executionID, loopKey), "list iterations", func(_ *firestore.DocumentSnapshot, d *iterDoc) (engine.IterationRecord, error) {
		r, err := codec.Iteration([]byte(d.Data))
		if err != nil {
			return engine.IterationRecord{}, err
		}
		return *r, nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	grouped, groups, err := f.groupedRecords(ctx, executionID, loopKey)
	if err != nil {
		return nil, err
	}
	meterOf(ctx, executionID).Read(float64(max(1, len(out)+groups)))
	if groups == 0 {
		return out, nil
	}
	return store.UniqueRecords(append(out, grouped...)), nil
}

// IterationGet implements store.Store.
func (f *Firestore) IterationGet(ctx context.Context, executionID, loopKey string, index int) (types.Status, string, time.Time, error) {
	meterOf(ctx, executionID).Read(1)
	s, err := f.iteration(executionID, loopKey, index).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			r, gerr := f.groupedRecord(ctx, executionID, loopKey, index)
			switch {
			case gerr != nil:
				return "", "", time.Time{}, gerr
			case r != nil:
				return r.Status, "", time.Time{}, nil
			}
			return "", "", time.Time{}, store.ErrNotFound
		}
		return "", "", time.Time{}, errs.Wrap(errs.CodeOf(err), err, "store: get iteration")
	}
	var d iterDoc
	if err := s.DataTo(&d); err != nil {
		return "", "", time.Time{}, err
	}
	return types.Status(d.Status), d.Holder, d.Expires, nil
}

// LaneDone implements store.Store.
func (f *Firestore) LaneDone(ctx context.Context, executionID, loopKey string, lane int) error {
	meterOf(ctx, executionID).Write(1)
	_, err := f.loop(executionID, loopKey).Collection("lanes").Doc(fmt.Sprintf("%06d", lane)).Create(ctx, map[string]any{"lane": lane, "expire_at": time.Now().UTC().Add(f.retention())})
	if err != nil && !isCode(err, codes.AlreadyExists) {
		return errs.Wrap(errs.CodeOf(err), err, "store: lane done")
	}
	return nil
}

// LaneCount implements store.Store.
func (f *Firestore) LaneCount(ctx context.Context, executionID, loopKey string) (int, error) {
	n, err := count(ctx, f.loop(executionID, loopKey).Collection("lanes").Query)
	meterOf(ctx, executionID).Read(float64(1 + n/1000))
	if err != nil {
		return 0, errs.Wrap(errs.CodeOf(err), err, "store: count lanes")
	}
	return n, nil
}

type loopDoneDoc struct {
	Owner    string    `firestore:"owner"`
	At       time.Time `firestore:"at"`
	ExpireAt time.Time `firestore:"expire_at"`
}

// LoopDoneCreate implements store.Store (a Create; on AlreadyExists one read of
// the recorded owner).
func (f *Firestore) LoopDoneCreate(ctx context.Context, executionID, loopKey, owner string) (string, error) {
	m := meterOf(ctx, executionID)
	m.Write(1)
	ref := f.exec(executionID).Collection("loop_done").Doc(loopKey)
	now := time.Now().UTC()
	_, err := ref.Create(ctx, loopDoneDoc{Owner: owner, At: now, ExpireAt: now.Add(f.retention())})
	if err == nil {
		return owner, nil
	}
	if !isCode(err, codes.AlreadyExists) {
		return "", errs.Wrap(errs.CodeOf(err), err, "store: loop done")
	}
	m.Read(1)
	s, err := ref.Get(ctx)
	if err != nil {
		return "", errs.Wrap(errs.CodeOf(err), err, "store: loop done")
	}
	var d loopDoneDoc
	if err := s.DataTo(&d); err != nil {
		return "", err
	}
	return d.Owner, nil
}

// iterUpdate is the Update of every field of an iteration document
// (omitted fields are deleted, as a Set of the document would).
func iterUpdate(d iterDoc) []firestore.Update {
	u := []firestore.Update{{Path: "index", Value: d.Index}, {Path: "status", Value: d.Status}, {Path: "expire_at", Value: d.ExpireAt}}
	opt := func(path string, v any, zero bool) {
		if zero {
			v = firestore.Delete
		}
		u = append(u, firestore.Update{Path: path, Value: v})
	}
	opt("holder", d.Holder, d.Holder == "")
	opt("expires", d.Expires, d.Expires.IsZero())
	opt("data", d.Data, d.Data == "")
	return u
}
