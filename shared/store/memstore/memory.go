// Package memstore is the in-process driver of the store contract
// (shared/store): Memory, for unit tests and in-process runs.
package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/internal/codec"
	"github.com/noetl/gcpengine/shared/types"
)

// Memory is the in-process Store: every document is kept as the JSON the
// Firestore driver would store, so values round-trip the same way (whole
// numbers as int64). It meters operations like Firestore would bill them.
// It is for unit tests and fast in-process end-to-end runs; it passes the
// same conformance suite (storetest) as Firestore.
type Memory struct {
	mu            sync.Mutex
	leaseVersions int64 // the last lease version given (newLease)
	execs         map[string]*memExec
	dlq           map[string]store.DLQEntry
	playbooks     map[string]*memPlaybook
	subs          map[string]store.Subscription // subscription.go
	closed        bool
	sizeHook      func(path string, size int)
	checkpoint    func() // test hook run inside ExecutionCheckpoint, before the write
}

// memExec is an execution document with its subcollections. Like
// Firestore's, the subcollections exist independently of the document:
// a batch, lease or iteration may be written before the execution is
// created (or after it expired); state is nil until ExecutionCreate.
type memExec struct {
	rev int64 // bumped by every write of the execution document
	// changed is closed (and replaced) by every write of the execution
	// document (ExecutionWatch waits on it).
	changed chan struct{}
	created time.Time
	updated time.Time
	state   []byte // nil: the execution document does not exist
	source  string
	files   map[string]store.ExecutionFile
	outbox  map[string][]byte
	loops   map[string][]byte
	iters   map[string]map[int]*memIter
	// groups: loop key → group id (store.GroupID) → index → record JSON
	// (executions/{id}/loops/{key}/iteration_groups/{group} in Firestore).
	groups   map[string]map[string]map[int][]byte
	lanes    map[string]map[int]bool
	loopDone map[string]string
	units    map[string]leaseDoc
	attempts map[string]string
	batches  map[string]batchDoc
}

type memIter struct {
	status  string
	holder  string
	expires time.Time
	data    []byte
}

// leaseDoc is a unit's lease (units/{unit} in Firestore).
type leaseDoc struct {
	Holder  string
	Expires time.Time
	Version int64 // a new one at every write (store.CompleteUnitParams.LeaseVersion)
}

// newLease is the lease p takes, with a new version (m.mu held).
func (m *Memory) newLease(p store.LeaseAcquireParams) leaseDoc {
	m.leaseVersions++
	return leaseDoc{Holder: p.Holder, Expires: p.Now.Add(p.TTL), Version: m.leaseVersions}
}

// batchDoc is a projected event batch: its events as JSON (as Firestore
// keeps them) and its metered operations.
type batchDoc struct {
	Data string
	Ops  map[string]float64
}

type memPlaybook struct {
	path, name string
	updated    time.Time
	versions   []store.PlaybookVersion
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{execs: map[string]*memExec{}, dlq: map[string]store.DLQEntry{}, playbooks: map[string]*memPlaybook{}}
}

// OnDocumentSize registers fn to observe the size in bytes of every
// document the store writes, with its path (tests check document-size
// limits with it).
func (m *Memory) OnDocumentSize(fn func(path string, size int)) {
	m.mu.Lock()
	m.sizeHook = fn
	m.mu.Unlock()
}

func (m *Memory) size(path string, b []byte) {
	if m.sizeHook != nil {
		m.sizeHook(path, len(b))
	}
}

// get returns an existing execution document; ErrNotFound when absent.
func (m *Memory) get(id string) (*memExec, error) {
	e := m.execs[id]
	if e == nil || e.state == nil {
		return nil, store.ErrNotFound
	}
	return e, nil
}

// doc returns the execution's entry, creating it (without the execution
// document) for writes to its subcollections.
func (m *Memory) doc(id string) *memExec {
	e := m.execs[id]
	if e == nil {
		e = &memExec{outbox: map[string][]byte{}, loops: map[string][]byte{}, iters: map[string]map[int]*memIter{},
			groups: map[string]map[string]map[int][]byte{}, lanes: map[string]map[int]bool{}, loopDone: map[string]string{}, units: map[string]leaseDoc{}, batches: map[string]batchDoc{}}
		m.execs[id] = e
	}
	return e
}

// decode is the execution document as stored.
func (e *memExec) decode() (*store.Execution, error) {
	rec, err := decodeState(e.state, e.source)
	if err != nil {
		return nil, err
	}
	rec.Files = e.files
	return rec, nil
}

func decodeState(b []byte, source string) (*store.Execution, error) {
	st := &engine.State{}
	if err := jsonx.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("store: decode state: %w", err)
	}
	store.NormState(st)
	return &store.Execution{State: st, Source: source}, nil
}

// ExecutionCreate implements store.Store.
func (m *Memory) ExecutionCreate(ctx context.Context, rec *store.Execution) error {
	if err := store.CheckNew(rec); err != nil {
		return err
	}
	b, err := json.Marshal(rec.State)
	if err != nil {
		return fmt.Errorf("store: encode state: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := rec.State.ExecutionID
	meterOf(ctx, id).Write(1)
	if e := m.execs[id]; e != nil && e.state != nil {
		return store.ErrExists
	}
	m.size("executions/"+id, b)
	e := m.doc(id)
	// created is the state's creation time, the ExecutionList order (as
	// Firestore's created_at field).
	e.created = rec.State.CreatedAt.UTC()
	e.updated, e.state, e.source = time.Now().UTC(), b, rec.Source
	if len(rec.Files) > 0 {
		e.files = maps.Clone(rec.Files)
	}
	e.notify()
	return nil
}

// notify wakes the watches of the execution document (m.mu held).
func (e *memExec) notify() {
	if e.changed != nil {
		close(e.changed)
		e.changed = nil
	}
}

// ExecutionWatch implements store.Store: fn sees the document at the start and
// after every write of it (a burst of writes between two calls is seen
// once, at its last state, as a snapshot listener would).
func (m *Memory) ExecutionWatch(ctx context.Context, id string, fn func(*store.Execution) bool) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.mu.Lock()
		meterOf(ctx, id).Read(1)
		e, err := m.get(id)
		if err != nil {
			m.mu.Unlock()
			return err
		}
		if e.changed == nil {
			e.changed = make(chan struct{})
		}
		changed := e.changed
		rec, err := decodeState(e.state, e.source)
		if err == nil {
			rec.UpdateTime = revTime(e.rev)
		}
		m.mu.Unlock()
		if err != nil {
			return err
		}
		if fn(rec) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// ExecutionGet implements store.Store.
func (m *Memory) ExecutionGet(ctx context.Context, id string) (*store.Execution, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, id).Read(1)
	e, err := m.get(id)
	if err != nil {
		return nil, err
	}
	rec, err := e.decode()
	if err != nil {
		return nil, err
	}
	rec.UpdateTime = revTime(e.rev)
	return rec, nil
}

// revTime encodes a document revision as the UpdateTime token.
func revTime(rev int64) time.Time { return time.Unix(0, rev+1) }

// ExecutionCount implements store.Store.
func (m *Memory) ExecutionCount(ctx context.Context, p store.ExecutionListParams) (map[types.Status]int, error) {
	p.BeforeCreated, p.Limit = time.Time{}, 1<<31-1
	all, err := m.ExecutionList(ctx, p)
	if err != nil {
		return nil, err
	}
	out := map[types.Status]int{}
	for _, e := range all {
		out[e.Status]++
	}
	return out, nil
}

// ExecutionList implements store.Store.
func (m *Memory) ExecutionList(ctx context.Context, p store.ExecutionListParams) ([]store.ExecutionSummary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	out := []store.ExecutionSummary{}
	for id, e := range m.execs {
		if e.state == nil {
			continue
		}
		rec, err := e.decode()
		if err != nil {
			return nil, err
		}
		st := rec.State
		sum := store.ExecutionSummary{ExecutionID: id, ParentID: st.ParentID, Playbook: st.Playbook, Creator: st.Creator, RerunOf: st.RerunOf, Status: st.Status, CreatedAt: e.created, UpdatedAt: e.updated}
		if !p.Matches(sum) {
			continue
		}
		if !p.BeforeCreated.IsZero() && !(e.created.Before(p.BeforeCreated) || (e.created.Equal(p.BeforeCreated) && id < p.BeforeID)) {
			continue
		}
		out = append(out, sum)
	}
	// Newest first; ties by descending id, as Firestore orders them (its
	// implicit last order is the document name, in the same direction).
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ExecutionID > out[j].ExecutionID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ExecutionCheckpoint implements store.Store: the whole call holds the store's
// lock, which serialises it like a Firestore transaction would.
func (m *Memory) ExecutionCheckpoint(ctx context.Context, p store.CheckpointParams) (store.Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkpointLocked(ctx, p)
}

// checkpointLocked is ExecutionCheckpoint under the store's lock.
func (m *Memory) checkpointLocked(ctx context.Context, p store.CheckpointParams) (store.Checkpoint, error) {
	mt := meterOf(ctx, p.ExecutionID)
	e, err := m.get(p.ExecutionID)
	if err != nil {
		return store.Checkpoint{}, err
	}
	var rec *store.Execution
	if p.Base != nil && !p.Base.UpdateTime.IsZero() && p.Base.UpdateTime.Equal(revTime(e.rev)) {
		rec = p.Base // the optimistic path: no read
	} else {
		mt.Read(1)
		if rec, err = e.decode(); err != nil {
			return store.Checkpoint{}, err
		}
	}
	out, err := p.Apply(rec)
	if err != nil || out == nil {
		return store.Checkpoint{State: rec.State}, err
	}
	if m.checkpoint != nil {
		m.checkpoint()
	}
	b, err := json.Marshal(rec.State)
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("store: encode state: %w", err)
	}
	var ob []byte
	if !out.Empty() {
		if ob, err = json.Marshal(out); err != nil {
			return store.Checkpoint{}, fmt.Errorf("store: encode outbox: %w", err)
		}
	}
	plans := map[string][]byte{}
	for _, plan := range out.Loops {
		pb, err := json.Marshal(plan)
		if err != nil {
			return store.Checkpoint{}, fmt.Errorf("store: encode loop plan: %w", err)
		}
		plans[plan.Key()] = pb
	}
	mt.Write(1)
	m.size("executions/"+p.ExecutionID, b)
	e.state, e.updated = b, time.Now().UTC()
	e.rev++
	e.notify()
	if rec.File != nil {
		mt.Write(1)
		m.dlqFileLocked(*rec.File)
	}
	for _, r := range rec.Resolve {
		mt.Write(1)
		m.dlqResolveLocked(r)
	}
	if ob != nil {
		mt.Write(1)
		m.size("executions/"+p.ExecutionID+"/outbox/"+p.OutboxID, ob)
		e.outbox[p.OutboxID] = ob
	}
	for k, pb := range plans {
		mt.Write(1)
		m.size("executions/"+p.ExecutionID+"/loops/"+k, pb)
		e.loops[k] = pb
	}
	return store.Checkpoint{Applied: true, Output: out, State: rec.State, UpdateTime: revTime(e.rev)}, nil
}

// OutboxGet implements store.Store.
func (m *Memory) OutboxGet(ctx context.Context, executionID, id string) (*engine.Output, error) {
	return getSub(ctx, m, executionID, func(e *memExec) map[string][]byte { return e.outbox }, id, store.NormOutput)
}

// LoopGet implements store.Store.
func (m *Memory) LoopGet(ctx context.Context, executionID, key string) (*engine.LoopPlan, error) {
	return getSub(ctx, m, executionID, func(e *memExec) map[string][]byte { return e.loops }, key, store.NormPlan)
}

// getSub reads document key of the execution's subcollection (coll picks
// it), decodes it into a new T and normalises it with norm: one read;
// ErrNotFound when the execution or the document is absent.
func getSub[T any](ctx context.Context, m *Memory, executionID string, coll func(*memExec) map[string][]byte, key string, norm func(*T)) (*T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, executionID).Read(1)
	e, err := m.get(executionID)
	if err != nil {
		return nil, err
	}
	b, ok := coll(e)[key]
	if !ok {
		return nil, store.ErrNotFound
	}
	v := new(T)
	if err := jsonx.Unmarshal(b, v); err != nil {
		return nil, err
	}
	norm(v)
	return v, nil
}

func (e *memExec) iter(loopKey string) map[int]*memIter {
	its := e.iters[loopKey]
	if its == nil {
		its = map[int]*memIter{}
		e.iters[loopKey] = its
	}
	return its
}

func decodeMemIter(it *memIter) (*engine.IterationRecord, error) {
	return codec.Iteration(it.data)
}

// grouped returns index's record JSON in the loop's group documents,
// the first group by id holding it (nil when none does).
func (e *memExec) grouped(loopKey string, index int) []byte {
	var ids []string
	for id, g := range e.groups[loopKey] {
		if g[index] != nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	return e.groups[loopKey][ids[0]][index]
}

// IterationBegin implements store.Store.
func (m *Memory) IterationBegin(ctx context.Context, p store.IterationBeginParams) (*engine.IterationRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	e := m.doc(p.ExecutionID)
	its := e.iter(p.LoopKey)
	if p.Grouped {
		// The group documents first (one query).
		mt.Read(1)
		if its[p.Index] == nil {
			if b := e.grouped(p.LoopKey, p.Index); b != nil {
				return codec.Iteration(b)
			}
		}
	}
	mt.Write(1)
	cur := its[p.Index]
	if cur != nil {
		mt.Read(1)
		if cur.status != string(types.StatusRunning) {
			return decodeMemIter(cur)
		}
		id, parked := store.ParkedBy(cur.holder)
		switch {
		case parked && id != p.Unpark:
			return nil, store.ErrParked
		case parked:
			// The entry's replay takes the iteration: the entry is
			// replayed (same commit).
			mt.Write(1)
			m.dlqResolveLocked(store.DLQResolution{ID: id, Status: store.DLQReplayed})
		case cur.holder != p.Holder && cur.expires.After(p.Now):
			return nil, store.ErrLeaseHeld
		}
		mt.Write(1)
	}
	its[p.Index] = &memIter{status: string(types.StatusRunning), holder: p.Holder, expires: p.Now.Add(p.TTL)}
	return nil, nil
}

// IterationEnd implements store.Store.
func (m *Memory) IterationEnd(ctx context.Context, p store.IterationEndParams) (bool, error) {
	if err := store.CheckEnded(p.Record); err != nil {
		return false, err
	}
	b, err := json.Marshal(p.Record)
	if err != nil {
		return false, fmt.Errorf("store: encode iteration: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	its := m.doc(p.ExecutionID).iter(p.LoopKey)
	cur := its[p.Record.Index]
	if p.Holder != "" {
		mt.Read(1)
	}
	mt.Write(1)
	var res *store.DLQResolution
	if cur != nil {
		if cur.status != string(types.StatusRunning) {
			return false, nil // the first record wins (a Create in Firestore)
		}
		if id, parked := store.ParkedBy(cur.holder); parked {
			r := p.Resolution(id)
			res = &r
		} else if p.Holder == "" && cur.holder != "" && cur.expires.After(p.Now) {
			return false, nil // leased by another delivery: its holder ends it
		} else if p.Holder != "" && cur.holder != p.Holder {
			return false, store.ErrLeaseLost
		}
	}
	m.size(fmt.Sprintf("executions/%s/loops/%s/iterations/%d", p.ExecutionID, p.LoopKey, p.Record.Index), b)
	its[p.Record.Index] = &memIter{status: string(p.Record.Status), data: b}
	if res != nil {
		mt.Write(1)
		m.dlqResolveLocked(*res)
	}
	return true, nil
}

// IterationPark implements store.Store.
func (m *Memory) IterationPark(ctx context.Context, p store.IterationParkParams) (*engine.IterationRecord, error) {
	e := p.Entry
	e.Normalize()
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	d := m.doc(p.ExecutionID)
	its := d.iter(p.LoopKey)
	mt.Read(1)
	if p.Grouped && its[p.Index] == nil {
		// An end committed in a group document has ended (as IterationBegin).
		if b := d.grouped(p.LoopKey, p.Index); b != nil {
			return codec.Iteration(b)
		}
	}
	park := store.ParkHolder(e.MessageID)
	if cur := its[p.Index]; cur != nil {
		if cur.status != string(types.StatusRunning) {
			return decodeMemIter(cur)
		}
		if cur.holder == park {
			return nil, nil
		}
		if _, parked := store.ParkedBy(cur.holder); parked {
			return nil, store.ErrParked
		}
		if cur.holder != "" && cur.holder != p.Holder && cur.expires.After(p.Now) {
			return nil, store.ErrLeaseHeld
		}
	}
	mt.Write(2)
	its[p.Index] = &memIter{status: string(types.StatusRunning), holder: park}
	e.Status = store.DLQPending
	m.dlqFileLocked(e)
	return nil, nil
}

// IterationRunning implements store.Store.
func (m *Memory) IterationRunning(ctx context.Context, executionID, loopKey string) ([]store.IterationLease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.IterationLease{}
	if e := m.execs[executionID]; e != nil {
		for i, it := range e.iters[loopKey] {
			switch it.status {
			case string(types.StatusRunning):
				out = append(out, store.IterationLease{Index: i, Status: types.StatusRunning, Holder: it.holder, Expires: it.expires})
			case string(types.StatusCanceled):
				r, err := decodeMemIter(it)
				if err != nil {
					return nil, err
				}
				out = append(out, store.IterationLease{Index: i, Status: types.StatusCanceled, Clock: r.Clock})
			}
		}
	}
	meterOf(ctx, executionID).Read(float64(max(1, len(out))))
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// IterationRelease implements store.Store.
func (m *Memory) IterationRelease(ctx context.Context, executionID, loopKey string, index int, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, executionID)
	mt.Read(1)
	if cur := m.doc(executionID).iter(loopKey)[index]; cur != nil && cur.status == string(types.StatusRunning) && cur.holder == holder {
		mt.Write(1)
		cur.holder, cur.expires = "", time.Time{}
	}
	return nil
}

// IterationList implements store.Store.
func (m *Memory) IterationList(ctx context.Context, executionID, loopKey string) ([]engine.IterationRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, docs, err := m.endedLocked(executionID, loopKey)
	if err != nil {
		return nil, err
	}
	meterOf(ctx, executionID).Read(float64(max(1, docs)))
	return out, nil
}

// endedLocked is IterationList's records and the number of documents
// they come from (own documents and group documents).
func (m *Memory) endedLocked(executionID, loopKey string) ([]engine.IterationRecord, int, error) {
	e := m.execs[executionID]
	if e == nil {
		return []engine.IterationRecord{}, 0, nil
	}
	var recs []engine.IterationRecord
	docs := 0
	for _, it := range e.iters[loopKey] {
		if !store.Completed(types.Status(it.status)) {
			continue
		}
		r, err := decodeMemIter(it)
		if err != nil {
			return nil, 0, err
		}
		recs = append(recs, *r)
		docs++
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Index < recs[j].Index })
	ids := make([]string, 0, len(e.groups[loopKey]))
	for id := range e.groups[loopKey] {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		docs++
		for _, b := range e.groups[loopKey][id] {
			r, err := codec.Iteration(b)
			if err != nil {
				return nil, 0, err
			}
			recs = append(recs, *r)
		}
	}
	return store.UniqueRecords(recs), docs, nil
}

// IterationCount implements store.Store.
func (m *Memory) IterationCount(ctx context.Context, executionID, loopKey string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	recs, _, err := m.endedLocked(executionID, loopKey)
	if err != nil {
		return 0, err
	}
	n := len(recs)
	meterOf(ctx, executionID).Read(float64(1 + n/1000))
	return n, nil
}

// LaneDone implements store.Store.
func (m *Memory) LaneDone(ctx context.Context, executionID, loopKey string, lane int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, executionID).Write(1)
	e := m.doc(executionID)
	if e.lanes[loopKey] == nil {
		e.lanes[loopKey] = map[int]bool{}
	}
	e.lanes[loopKey][lane] = true
	return nil
}

// LaneCount implements store.Store.
func (m *Memory) LaneCount(ctx context.Context, executionID, loopKey string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	if e := m.execs[executionID]; e != nil {
		n = len(e.lanes[loopKey])
	}
	meterOf(ctx, executionID).Read(float64(1 + n/1000))
	return n, nil
}

// LoopDoneCreate implements store.Store.
func (m *Memory) LoopDoneCreate(ctx context.Context, executionID, loopKey, owner string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, executionID)
	mt.Write(1)
	e := m.doc(executionID)
	if w, ok := e.loopDone[loopKey]; ok {
		mt.Read(1)
		return w, nil
	}
	e.loopDone[loopKey] = owner
	return owner, nil
}

// LeaseAcquire implements store.Store.
func (m *Memory) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	e := m.doc(p.ExecutionID)
	mt.Write(1)
	if d, ok := e.units[p.Unit]; ok {
		mt.Read(1)
		if d.Holder != p.Holder && d.Expires.After(p.Now) {
			return store.ErrLeaseHeld
		}
		mt.Write(1)
	}
	e.units[p.Unit] = m.newLease(p)
	return nil
}

// LeaseRenew implements store.Store.
func (m *Memory) LeaseRenew(ctx context.Context, p store.LeaseAcquireParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	mt.Read(1)
	e := m.doc(p.ExecutionID)
	d, ok := e.units[p.Unit]
	if !ok || d.Holder != p.Holder {
		return store.ErrLeaseLost
	}
	mt.Write(1)
	e.units[p.Unit] = m.newLease(p)
	return nil
}

// LeaseRelease implements store.Store.
func (m *Memory) LeaseRelease(ctx context.Context, executionID, unit, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, executionID)
	mt.Read(1)
	e := m.doc(executionID)
	if d, ok := e.units[unit]; ok && d.Holder == holder {
		mt.Delete(1)
		delete(e.units, unit)
	}
	return nil
}

// BatchPut implements store.Store.
func (m *Memory) BatchPut(ctx context.Context, b types.Batch) (bool, error) {
	data, err := json.Marshal(b.Events)
	if err != nil {
		return false, fmt.Errorf("store: encode batch: %w", err)
	}
	d := batchDoc{Data: string(data), Ops: b.Ops}
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, b.ExecutionID).Write(1)
	// The projection does not need the execution document (events of an
	// execution may arrive before it is visible).
	e := m.doc(b.ExecutionID)
	if _, ok := e.batches[b.ID]; ok {
		return false, nil
	}
	m.size("executions/"+b.ExecutionID+"/batches/"+b.ID, []byte(d.Data))
	e.batches[b.ID] = d
	return true, nil
}

// EventList implements store.Store.
func (m *Memory) EventList(ctx context.Context, executionID string) ([]types.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []types.Projected
	if e := m.execs[executionID]; e != nil {
		for id, d := range e.batches {
			p, err := codec.Events(id, []byte(d.Data))
			if err != nil {
				return nil, err
			}
			ps = append(ps, p...)
		}
	}
	return types.EventsInOrder(ps), nil
}

// EventLog implements store.Store.
func (m *Memory) EventLog(ctx context.Context, executionID string) ([]types.Event, map[string]float64, error) {
	evs, err := m.EventList(ctx, executionID)
	if err != nil {
		return nil, nil, err
	}
	ops, err := m.OpsTotal(ctx, executionID)
	return evs, ops, err
}

// OpsTotal implements store.Store.
func (m *Memory) OpsTotal(ctx context.Context, executionID string) (map[string]float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tot := map[string]float64{}
	if e := m.execs[executionID]; e != nil {
		for _, d := range e.batches {
			for k, v := range d.Ops {
				tot[k] += v
			}
		}
	}
	return tot, nil
}

// PlaybookPut implements store.Store.
func (m *Memory) PlaybookPut(ctx context.Context, p store.PlaybookPutParams) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pb := m.playbooks[p.Path]
	if pb == nil {
		pb = &memPlaybook{path: p.Path}
		m.playbooks[p.Path] = pb
	}
	if n := len(pb.versions); n > 0 && pb.versions[n-1].Source == p.Source {
		return n, nil
	}
	now := time.Now().UTC()
	pb.name, pb.updated = p.Name, now
	v := len(pb.versions) + 1
	pb.versions = append(pb.versions, store.PlaybookVersion{Path: p.Path, Name: p.Name, Version: v, Source: p.Source, CreatedAt: now})
	return v, nil
}

// PlaybookGet implements store.Store.
func (m *Memory) PlaybookGet(ctx context.Context, path string, version int) (*store.PlaybookVersion, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pb := m.playbooks[path]
	if pb == nil || len(pb.versions) == 0 {
		return nil, store.ErrNotFound
	}
	if version == 0 {
		version = len(pb.versions)
	}
	if version < 1 || version > len(pb.versions) {
		return nil, store.ErrNotFound
	}
	v := pb.versions[version-1]
	v.Name = pb.name
	return &v, nil
}

// PlaybookList implements store.Store.
func (m *Memory) PlaybookList(ctx context.Context) ([]store.PlaybookSummary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.PlaybookSummary{}
	for _, pb := range m.playbooks {
		out = append(out, store.PlaybookSummary{Path: pb.path, Name: pb.name, Latest: len(pb.versions), UpdatedAt: pb.updated})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// DLQPut implements store.Store.
func (m *Memory) DLQPut(ctx context.Context, e store.DLQEntry) error {
	e.Normalize()
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.Status == "" {
		e.Status = store.DLQPending
	}
	if old, ok := m.dlq[e.MessageID]; ok {
		e.FirstSeen, e.Status = old.FirstSeen, old.Status
		e.Attempts = max(e.Attempts, old.Attempts)
	}
	m.dlq[e.MessageID] = e
	return nil
}

// dlqFileLocked stores a filed entry as given (status pending when
// unset, normalised). The caller holds m.mu.
func (m *Memory) dlqFileLocked(e store.DLQEntry) {
	e.Normalize()
	if e.Status == "" {
		e.Status = store.DLQPending
	}
	m.dlq[e.MessageID] = e
}

// dlqResolveLocked applies a resolution (an absent entry is written bare).
// The caller holds m.mu.
func (m *Memory) dlqResolveLocked(r store.DLQResolution) {
	id := store.DLQID(r.ID)
	e, ok := m.dlq[id]
	if !ok {
		e = store.DLQEntry{MessageID: id}
	}
	e.Status = r.Status
	if r.Note != "" {
		e.Note = r.Note
	}
	m.dlq[id] = e
}

// DLQGet implements store.Store.
func (m *Memory) DLQGet(ctx context.Context, id string) (*store.DLQEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.dlq[store.DLQID(id)]
	if !ok {
		return nil, store.ErrNotFound
	}
	return &e, nil
}

// DLQList implements store.Store.
func (m *Memory) DLQList(ctx context.Context, status store.DLQStatus, limit int) ([]store.DLQEntry, error) {
	return m.DLQQuery(ctx, store.DLQFilter{Status: status, Limit: limit})
}

// DLQQuery implements store.Store.
func (m *Memory) DLQQuery(ctx context.Context, f store.DLQFilter) ([]store.DLQEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	out := []store.DLQEntry{}
	for _, e := range m.dlq {
		if f.Matches(e) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastSeen.Equal(out[j].LastSeen) {
			return out[i].LastSeen.After(out[j].LastSeen)
		}
		return strings.Compare(out[i].MessageID, out[j].MessageID) < 0
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// DLQSetStatus implements store.Store.
func (m *Memory) DLQSetStatus(ctx context.Context, id string, from, to store.DLQStatus, note string) (*store.DLQEntry, error) {
	m.mu.Lock()
	id = store.DLQID(id)
	defer m.mu.Unlock()
	e, ok := m.dlq[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	if e.Status != from {
		return nil, errs.New(errs.FailedPrecondition, "store: dlq entry %s is %s, not %s", id, e.Status, from)
	}
	e.Status, e.Note = to, note
	m.dlq[id] = e
	return &e, nil
}

// LeaseGet implements store.Store.
func (m *Memory) LeaseGet(ctx context.Context, executionID, unit string) (string, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, executionID).Read(1)
	e := m.execs[executionID]
	if e == nil {
		return "", time.Time{}, store.ErrNotFound
	}
	d, ok := e.units[unit]
	if !ok {
		return "", time.Time{}, store.ErrNotFound
	}
	return d.Holder, d.Expires, nil
}

// IterationGet implements store.Store.
func (m *Memory) IterationGet(ctx context.Context, executionID, loopKey string, index int) (types.Status, string, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, executionID).Read(1)
	e := m.execs[executionID]
	if e == nil {
		return "", "", time.Time{}, store.ErrNotFound
	}
	if e.iters[loopKey] == nil || e.iters[loopKey][index] == nil {
		meterOf(ctx, executionID).Read(1) // the group documents' query
		b := e.grouped(loopKey, index)
		if b == nil {
			return "", "", time.Time{}, store.ErrNotFound
		}
		r, err := codec.Iteration(b)
		if err != nil {
			return "", "", time.Time{}, err
		}
		return r.Status, "", time.Time{}, nil
	}
	it := e.iters[loopKey][index]
	return types.Status(it.status), it.holder, it.expires, nil
}

// Close implements store.Store.
func (m *Memory) Close() error { return nil }

var _ store.Store = (*Memory)(nil)

// AttemptPut implements store.Store.
func (m *Memory) AttemptPut(ctx context.Context, executionID, unit, key string, out types.Outcome) error {
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("store: encode attempt: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, executionID).Write(1)
	e := m.doc(executionID)
	if e.attempts == nil {
		e.attempts = map[string]string{}
	}
	k := unit + "/" + key
	if _, ok := e.attempts[k]; !ok {
		e.attempts[k] = string(b)
	}
	return nil
}

// AttemptGet implements store.Store.
func (m *Memory) AttemptGet(ctx context.Context, executionID, unit, key string) (*types.Outcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, executionID).Read(1)
	e := m.execs[executionID]
	if e == nil || e.attempts == nil {
		return nil, store.ErrNotFound
	}
	d, ok := e.attempts[unit+"/"+key]
	if !ok {
		return nil, store.ErrNotFound
	}
	return codec.Outcome([]byte(d))
}
