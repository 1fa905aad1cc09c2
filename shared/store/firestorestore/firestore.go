// Package firestorestore is the Cloud Firestore driver of the store
// contract (shared/store): the control plane's production backend, on
// Firestore or its emulator (FIRESTORE_EMULATOR_HOST). Documents:
// executions/{id} with its subcollections (outbox, loops and their
// iterations, lanes and loop_done markers, units and their attempts,
// batches), dlq/{message_id}, playbooks/{path}/versions/{version} and
// subscriptions/{name}. Every read-modify-write of one document is a
// compare-and-set on its update time (cas.go), never a locking
// transaction. It passes the conformance suite (storetest) against the
// emulator.
package firestorestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/internal/codec"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Firestore is the Store backed by Cloud Firestore (or its emulator when
// FIRESTORE_EMULATOR_HOST is set).
type Firestore struct {
	c *firestore.Client
	// Sealer seals the secret-named values of an execution's workload
	// (redact.IsSecretKey: api_token, db.password, ...) in its document:
	// no secret value in any document (README "Security"). Nil writes them
	// as they are; a document with sealed values then fails to read
	// (store.ErrSealed). The engine and the API see the opened values (they are
	// the execution's input).
	Sealer store.Sealer
	// DLQRetention is how long DLQ entries are kept (the expire_at TTL
	// field; NoETL observability spec §8.12 dlq.retention_days); zero
	// means DefaultDLQRetention.
	DLQRetention time.Duration
	// Retention is how long ended executions and their projections are
	// kept (the expire_at TTL field: an execution's record, its batches,
	// outbox, loop and attempt documents; executions.retention_days,
	// NOETL_RETENTION_DAYS, which Terraform also reads); zero means
	// DefaultRetention. The results tier's GC keeps an execution's results
	// exactly as long (shared/operations/gc).
	Retention time.Duration
}

// OpenFirestore connects to the project's default database.
func OpenFirestore(ctx context.Context, project string) (*Firestore, error) {
	c, err := firestore.NewClient(ctx, project)
	if err != nil {
		return nil, fmt.Errorf("store: firestore client: %w", err)
	}
	return &Firestore{c: c}, nil
}

// Client exposes the underlying client (for tests and tooling).
func (f *Firestore) Client() *firestore.Client { return f.c }

// Close implements store.Store.
func (f *Firestore) Close() error { return f.c.Close() }

func (f *Firestore) exec(id string) *firestore.DocumentRef {
	return f.c.Collection("executions").Doc(id)
}

func isCode(err error, c codes.Code) bool { return status.Code(err) == c }

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

// DefaultRetention is the retention of a Firestore driver whose Retention
// is zero (30 days, the default of NOETL_RETENTION_DAYS).
const DefaultRetention = 30 * 24 * time.Hour

// retention is how long the driver keeps ended executions' documents.
func (f *Firestore) retention() time.Duration {
	if f.Retention <= 0 {
		return DefaultRetention
	}
	return f.Retention
}

// DefaultDLQRetention is the DLQ retention of a Firestore driver whose
// DLQRetention is zero (30 days).
const DefaultDLQRetention = 30 * 24 * time.Hour

// dlqExpiry is when a DLQ entry filed now expires.
func (f *Firestore) dlqExpiry() time.Time {
	r := f.DLQRetention
	if r <= 0 {
		r = DefaultDLQRetention
	}
	return time.Now().UTC().Add(r)
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
	created, _ := time.Parse(time.RFC3339Nano, rec.State.CreatedAt)
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
	it := q.Documents(ctx)
	defer it.Stop()
	out := []store.ExecutionSummary{}
	for {
		s, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, errs.Wrap(errs.CodeOf(err), err, "store: list executions")
		}
		var d execDoc
		if err := s.DataTo(&d); err != nil {
			return nil, err
		}
		out = append(out, store.ExecutionSummary{ExecutionID: s.Ref.ID, ParentID: d.ParentID, Playbook: d.Playbook, Creator: d.Creator, RerunOf: d.RerunOf,
			Status: types.Status(d.Status), CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt})
	}
	return out, nil
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

type blobDoc struct {
	Data     string     `firestore:"data"`
	ExpireAt *time.Time `firestore:"expire_at,omitempty"`
}

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
	m := meterOf(ctx, p.ExecutionID)
	wait := 2 * time.Millisecond
	for attempt := 1; ; attempt++ {
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
		cp, done, err := f.checkpointOptimistic(ctx, p)
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
func (f *Firestore) checkpointOptimistic(ctx context.Context, p store.CheckpointParams) (store.Checkpoint, bool, error) {
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
	m.Write(float64(1 + len(writes)))
	_, err = b.Commit(ctx)
	if err != nil {
		if isCode(err, codes.FailedPrecondition) || isCode(err, codes.Aborted) {
			return store.Checkpoint{}, false, nil
		}
		if isCode(err, codes.NotFound) {
			return store.Checkpoint{}, true, store.ErrNotFound
		}
		return store.Checkpoint{}, true, errs.Wrap(errs.CodeOf(err), err, "store: checkpoint")
	}
	return store.Checkpoint{Applied: true, Output: out, State: p.Base.State}, true, nil
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

// getBlob reads the blobDoc at ref and decodes its JSON into a new T.
// Errors: ErrNotFound; Firestore's (wrapped with its code, naming what);
// a document that does not decode.
func getBlob[T any](ctx context.Context, ref *firestore.DocumentRef, what string) (*T, error) {
	s, err := ref.Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, store.ErrNotFound
		}
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: get "+what)
	}
	var d blobDoc
	if err := s.DataTo(&d); err != nil {
		return nil, err
	}
	v := new(T)
	if err := jsonx.Unmarshal([]byte(d.Data), v); err != nil {
		return nil, fmt.Errorf("store: decode %s: %w", what, err)
	}
	return v, nil
}

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

// dlqResolve adds the write of a DLQ resolution to b: the entry's status
// and note merged into it (created bare if it expired meanwhile).
func (f *Firestore) dlqResolve(b *firestore.WriteBatch, r store.DLQResolution) {
	m := map[string]any{"message_id": store.DLQID(r.ID), "status": r.Status}
	if r.Note != "" {
		m["note"] = r.Note
	}
	b.Set(f.c.Collection("dlq").Doc(store.DLQID(r.ID)), m, firestore.MergeAll)
}

// dlqFile adds the write of a filed DLQ entry to b (status pending).
func (f *Firestore) dlqFile(b *firestore.WriteBatch, e store.DLQEntry) {
	e.Normalize()
	if e.Status == "" {
		e.Status = store.DLQPending
	}
	if e.ExpireAt == nil {
		exp := f.dlqExpiry()
		e.ExpireAt = &exp
	}
	b.Set(f.c.Collection("dlq").Doc(e.MessageID), e)
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

// IterationCount implements store.Store (an aggregation: billed one read per
// 1,000 index entries).
func (f *Firestore) IterationCount(ctx context.Context, executionID, loopKey string) (int, error) {
	n, err := count(ctx, f.endedIterations(executionID, loopKey))
	meterOf(ctx, executionID).Read(float64(1 + n/1000))
	if err != nil {
		return 0, errs.Wrap(errs.CodeOf(err), err, "store: count iterations")
	}
	return n, nil
}

func count(ctx context.Context, q firestore.Query) (int, error) {
	res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return 0, err
	}
	switch v := res["n"].(type) {
	case int64:
		return int(v), nil
	case interface{ GetIntegerValue() int64 }:
		return int(v.GetIntegerValue()), nil
	}
	return 0, fmt.Errorf("unexpected count %T", res["n"])
}

// IterationList implements store.Store.
func (f *Firestore) IterationList(ctx context.Context, executionID, loopKey string) ([]engine.IterationRecord, error) {
	it := f.endedIterations(executionID, loopKey).Documents(ctx)
	defer it.Stop()
	out := []engine.IterationRecord{}
	for {
		s, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, errs.Wrap(errs.CodeOf(err), err, "store: list iterations")
		}
		var d iterDoc
		if err := s.DataTo(&d); err != nil {
			return nil, err
		}
		r, err := codec.Iteration([]byte(d.Data))
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	meterOf(ctx, executionID).Read(float64(max(1, len(out))))
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
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

type leaseDoc struct {
	Holder   string    `firestore:"holder"`
	Expires  time.Time `firestore:"expires"`
	ExpireAt time.Time `firestore:"expire_at"` // TTL policy: a day after expiry
}

func (f *Firestore) unit(execID, unit string) *firestore.DocumentRef {
	return f.exec(execID).Collection("units").Doc(unit)
}

func newLease(p store.LeaseAcquireParams) leaseDoc {
	exp := p.Now.Add(p.TTL)
	return leaseDoc{Holder: p.Holder, Expires: exp, ExpireAt: exp.Add(24 * time.Hour)}
}

// LeaseAcquire implements store.Store: a Create when the unit has no lease (one
// write), else a compare-and-set that takes over an expired lease.
func (f *Firestore) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) error {
	ref := f.unit(p.ExecutionID, p.Unit)
	m := meterOf(ctx, p.ExecutionID)
	m.Write(1)
	_, err := ref.Create(ctx, newLease(p))
	if err == nil {
		return nil
	}
	if !isCode(err, codes.AlreadyExists) {
		return errs.Wrap(errs.CodeOf(err), err, "store: acquire lease")
	}
	return f.cas(ctx, m, ref, "store: acquire lease", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		if s == nil {
			return casWrite{create: newLease(p)}, nil
		}
		var d leaseDoc
		if err := s.DataTo(&d); err != nil {
			return casWrite{}, err
		}
		if d.Holder != p.Holder && d.Expires.After(p.Now) {
			return casWrite{}, store.ErrLeaseHeld
		}
		return casWrite{update: leaseUpdate(newLease(p))}, nil
	})
}

// LeaseRenew implements store.Store (a compare-and-set while the caller holds
// the lease).
func (f *Firestore) LeaseRenew(ctx context.Context, p store.LeaseAcquireParams) error {
	ref := f.unit(p.ExecutionID, p.Unit)
	return f.cas(ctx, meterOf(ctx, p.ExecutionID), ref, "store: renew lease", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		if s == nil {
			return casWrite{}, store.ErrLeaseLost
		}
		var d leaseDoc
		if err := s.DataTo(&d); err != nil {
			return casWrite{}, err
		}
		if d.Holder != p.Holder {
			return casWrite{}, store.ErrLeaseLost
		}
		return casWrite{update: leaseUpdate(newLease(p))}, nil
	})
}

// LeaseRelease implements store.Store: a compare-and-set that deletes the lease
// when the caller still holds it.
func (f *Firestore) LeaseRelease(ctx context.Context, executionID, unit, holder string) error {
	ref := f.unit(executionID, unit)
	return f.cas(ctx, meterOf(ctx, executionID), ref, "store: release lease", func(s *firestore.DocumentSnapshot) (casWrite, error) {
		if s == nil {
			return casWrite{}, nil
		}
		var d leaseDoc
		if err := s.DataTo(&d); err != nil {
			return casWrite{}, err
		}
		if d.Holder != holder {
			return casWrite{}, nil
		}
		return casWrite{del: true}, nil
	})
}

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

// DLQPut implements store.Store. A repeated entry for the same message keeps
// its first_seen and status and the larger attempt count (a
// compare-and-set).
func (f *Firestore) DLQPut(ctx context.Context, e store.DLQEntry) error {
	e.Normalize()
	if e.Status == "" {
		e.Status = store.DLQPending
	}
	if e.ExpireAt == nil {
		exp := f.dlqExpiry()
		e.ExpireAt = &exp
	}
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

// LeaseGet implements store.Store.
func (f *Firestore) LeaseGet(ctx context.Context, executionID, unit string) (string, time.Time, error) {
	meterOf(ctx, executionID).Read(1)
	s, err := f.unit(executionID, unit).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return "", time.Time{}, store.ErrNotFound
		}
		return "", time.Time{}, errs.Wrap(errs.CodeOf(err), err, "store: get lease")
	}
	var d leaseDoc
	if err := s.DataTo(&d); err != nil {
		return "", time.Time{}, err
	}
	return d.Holder, d.Expires, nil
}

// IterationGet implements store.Store.
func (f *Firestore) IterationGet(ctx context.Context, executionID, loopKey string, index int) (types.Status, string, time.Time, error) {
	meterOf(ctx, executionID).Read(1)
	s, err := f.iteration(executionID, loopKey, index).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
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
	docs, err := q.OrderBy("last_seen", firestore.Desc).Limit(limit).Documents(ctx).GetAll()
	if err != nil {
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: list dlq")
	}
	out := make([]store.DLQEntry, 0, len(docs))
	for _, d := range docs {
		var e store.DLQEntry
		if err := d.DataTo(&e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
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
	docs, err := q.Limit(dlqQueryScan).Documents(ctx).GetAll()
	if err != nil {
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: query dlq")
	}
	out := make([]store.DLQEntry, 0, len(docs))
	for _, d := range docs {
		var e store.DLQEntry
		if err := d.DataTo(&e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].LastSeen != out[j].LastSeen {
			return out[i].LastSeen > out[j].LastSeen
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

type attemptDoc struct {
	Data     string    `firestore:"data"`
	ExpireAt time.Time `firestore:"expire_at"`
}

func (f *Firestore) attempt(executionID, unit, key string) *firestore.DocumentRef {
	return f.unit(executionID, unit).Collection("attempts").Doc(key)
}

// AttemptPut implements store.Store (a Create: the first record wins).
func (f *Firestore) AttemptPut(ctx context.Context, executionID, unit, key string, out types.Outcome) error {
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("store: encode attempt: %w", err)
	}
	meterOf(ctx, executionID).Write(1)
	_, err = f.attempt(executionID, unit, key).Create(ctx, attemptDoc{Data: string(b), ExpireAt: time.Now().UTC().Add(f.retention())})
	if err != nil && !isCode(err, codes.AlreadyExists) {
		return errs.Wrap(errs.CodeOf(err), err, "store: put attempt")
	}
	return nil
}

// AttemptGet implements store.Store.
func (f *Firestore) AttemptGet(ctx context.Context, executionID, unit, key string) (*types.Outcome, error) {
	meterOf(ctx, executionID).Read(1)
	s, err := f.attempt(executionID, unit, key).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, store.ErrNotFound
		}
		return nil, errs.Wrap(errs.CodeOf(err), err, "store: get attempt")
	}
	var d attemptDoc
	if err := s.DataTo(&d); err != nil {
		return nil, err
	}
	return codec.Outcome([]byte(d.Data))
}
