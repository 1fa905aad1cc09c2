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
	"github.com/noetl/gcpengine/shared/types"
)

// Memory is the in-process Store: every document is kept as the JSON the
// Firestore driver would store, so values round-trip the same way (whole
// numbers as int64). It meters operations like Firestore would bill them.
// It is for unit tests and fast in-process end-to-end runs; it passes the
// same conformance suite (storetest) as Firestore.
type Memory struct {
	mu         sync.Mutex
	execs      map[string]*memExec
	dlq        map[string]DLQEntry
	playbooks  map[string]*memPlaybook
	subs       map[string]Subscription // subscription.go
	closed     bool
	sizeHook   func(path string, size int)
	checkpoint func() // test hook run inside ExecutionCheckpoint, before the write
}

// memExec is an execution document with its subcollections. Like
// Firestore's, the subcollections exist independently of the document:
// a batch, lease or iteration may be written before the execution is
// created (or after it expired); state is nil until ExecutionCreate.
type memExec struct {
	rev int64 // bumped by every write of the execution document
	// changed is closed (and replaced) by every write of the execution
	// document (ExecutionWatch waits on it).
	changed  chan struct{}
	created  time.Time
	updated  time.Time
	state    []byte // nil: the execution document does not exist
	source   string
	files    map[string]ExecutionFile
	outbox   map[string][]byte
	loops    map[string][]byte
	iters    map[string]map[int]*memIter
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

type memPlaybook struct {
	path, name string
	updated    time.Time
	versions   []PlaybookVersion
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{execs: map[string]*memExec{}, dlq: map[string]DLQEntry{}, playbooks: map[string]*memPlaybook{}}
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
		return nil, ErrNotFound
	}
	return e, nil
}

// doc returns the execution's entry, creating it (without the execution
// document) for writes to its subcollections.
func (m *Memory) doc(id string) *memExec {
	e := m.execs[id]
	if e == nil {
		e = &memExec{outbox: map[string][]byte{}, loops: map[string][]byte{}, iters: map[string]map[int]*memIter{},
			lanes: map[string]map[int]bool{}, loopDone: map[string]string{}, units: map[string]leaseDoc{}, batches: map[string]batchDoc{}}
		m.execs[id] = e
	}
	return e
}

// decode is the execution document as stored.
func (e *memExec) decode() (*Execution, error) {
	rec, err := decodeState(e.state, e.source)
	if err != nil {
		return nil, err
	}
	rec.Files = e.files
	return rec, nil
}

func decodeState(b []byte, source string) (*Execution, error) {
	st := &engine.State{}
	if err := jsonx.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("store: decode state: %w", err)
	}
	NormState(st)
	return &Execution{State: st, Source: source}, nil
}

// ExecutionCreate implements Store.
func (m *Memory) ExecutionCreate(ctx context.Context, rec *Execution) error {
	if err := checkNew(rec); err != nil {
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
		return ErrExists
	}
	m.size("executions/"+id, b)
	e := m.doc(id)
	// created is the state's creation time, the ExecutionList order (as
	// Firestore's created_at field).
	e.created, _ = time.Parse(time.RFC3339Nano, rec.State.CreatedAt)
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

// ExecutionWatch implements Store: fn sees the document at the start and
// after every write of it (a burst of writes between two calls is seen
// once, at its last state, as a snapshot listener would).
func (m *Memory) ExecutionWatch(ctx context.Context, id string, fn func(*Execution) bool) error {
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

// ExecutionGet implements Store.
func (m *Memory) ExecutionGet(ctx context.Context, id string) (*Execution, error) {
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

// ExecutionCount implements Store.
func (m *Memory) ExecutionCount(ctx context.Context, p ExecutionListParams) (map[types.Status]int, error) {
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

// ExecutionList implements Store.
func (m *Memory) ExecutionList(ctx context.Context, p ExecutionListParams) ([]ExecutionSummary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	out := []ExecutionSummary{}
	for id, e := range m.execs {
		if e.state == nil {
			continue
		}
		rec, err := e.decode()
		if err != nil {
			return nil, err
		}
		st := rec.State
		sum := ExecutionSummary{ExecutionID: id, ParentID: st.ParentID, Playbook: st.Playbook, Creator: st.Creator, RerunOf: st.RerunOf, Status: st.Status, CreatedAt: e.created, UpdatedAt: e.updated}
		if !p.matches(sum) {
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

// ExecutionCheckpoint implements Store: the whole call holds the store's
// lock, which serialises it like a Firestore transaction would.
func (m *Memory) ExecutionCheckpoint(ctx context.Context, p CheckpointParams) (Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	e, err := m.get(p.ExecutionID)
	if err != nil {
		return Checkpoint{}, err
	}
	var rec *Execution
	if p.Base != nil && !p.Base.UpdateTime.IsZero() && p.Base.UpdateTime.Equal(revTime(e.rev)) {
		rec = p.Base // the optimistic path: no read
	} else {
		mt.Read(1)
		if rec, err = e.decode(); err != nil {
			return Checkpoint{}, err
		}
	}
	out, err := p.Apply(rec)
	if err != nil || out == nil {
		return Checkpoint{State: rec.State}, err
	}
	if m.checkpoint != nil {
		m.checkpoint()
	}
	b, err := json.Marshal(rec.State)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("store: encode state: %w", err)
	}
	var ob []byte
	if !out.Empty() {
		if ob, err = json.Marshal(out); err != nil {
			return Checkpoint{}, fmt.Errorf("store: encode outbox: %w", err)
		}
	}
	plans := map[string][]byte{}
	for _, plan := range out.Loops {
		pb, err := json.Marshal(plan)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("store: encode loop plan: %w", err)
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
	return Checkpoint{Applied: true, Output: out, State: rec.State}, nil
}

// OutboxGet implements Store.
func (m *Memory) OutboxGet(ctx context.Context, executionID, id string) (*engine.Output, error) {
	return getSub(ctx, m, executionID, func(e *memExec) map[string][]byte { return e.outbox }, id, NormOutput)
}

// LoopGet implements Store.
func (m *Memory) LoopGet(ctx context.Context, executionID, key string) (*engine.LoopPlan, error) {
	return getSub(ctx, m, executionID, func(e *memExec) map[string][]byte { return e.loops }, key, NormPlan)
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
		return nil, ErrNotFound
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
	return decodeIteration(iterDoc{Status: it.status, Data: string(it.data)})
}

// IterationBegin implements Store.
func (m *Memory) IterationBegin(ctx context.Context, p IterationBeginParams) (*engine.IterationRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	its := m.doc(p.ExecutionID).iter(p.LoopKey)
	mt.Write(1)
	cur := its[p.Index]
	if cur != nil {
		mt.Read(1)
		if cur.status != string(types.StatusRunning) {
			return decodeMemIter(cur)
		}
		id, parked := ParkedBy(cur.holder)
		switch {
		case parked && id != p.Unpark:
			return nil, ErrParked
		case parked:
			// The entry's replay takes the iteration: the entry is
			// replayed (same commit).
			mt.Write(1)
			m.dlqResolveLocked(DLQResolution{ID: id, Status: DLQReplayed})
		case cur.holder != p.Holder && cur.expires.After(p.Now):
			return nil, ErrLeaseHeld
		}
		mt.Write(1)
	}
	its[p.Index] = &memIter{status: string(types.StatusRunning), holder: p.Holder, expires: p.Now.Add(p.TTL)}
	return nil, nil
}

// IterationEnd implements Store.
func (m *Memory) IterationEnd(ctx context.Context, p IterationEndParams) (bool, error) {
	if err := checkEnded(p.Record); err != nil {
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
	var res *DLQResolution
	if cur != nil {
		if cur.status != string(types.StatusRunning) {
			return false, nil // the first record wins (a Create in Firestore)
		}
		if id, parked := ParkedBy(cur.holder); parked {
			r := resolution(p.Resolve, id)
			res = &r
		} else if p.Holder == "" && cur.holder != "" && cur.expires.After(p.Now) {
			return false, nil // leased by another delivery: its holder ends it
		} else if p.Holder != "" && cur.holder != p.Holder {
			return false, ErrLeaseLost
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

// IterationPark implements Store.
func (m *Memory) IterationPark(ctx context.Context, p IterationParkParams) (*engine.IterationRecord, error) {
	e := p.Entry
	e.normalize()
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	its := m.doc(p.ExecutionID).iter(p.LoopKey)
	mt.Read(1)
	park := ParkHolder(e.MessageID)
	if cur := its[p.Index]; cur != nil {
		if cur.status != string(types.StatusRunning) {
			return decodeMemIter(cur)
		}
		if cur.holder == park {
			return nil, nil
		}
		if _, parked := ParkedBy(cur.holder); parked {
			return nil, ErrParked
		}
		if cur.holder != "" && cur.holder != p.Holder && cur.expires.After(p.Now) {
			return nil, ErrLeaseHeld
		}
	}
	mt.Write(2)
	its[p.Index] = &memIter{status: string(types.StatusRunning), holder: park}
	e.Status = DLQPending
	m.dlqFileLocked(e)
	return nil, nil
}

// IterationRunning implements Store.
func (m *Memory) IterationRunning(ctx context.Context, executionID, loopKey string) ([]IterationLease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []IterationLease{}
	if e := m.execs[executionID]; e != nil {
		for i, it := range e.iters[loopKey] {
			switch it.status {
			case string(types.StatusRunning):
				out = append(out, IterationLease{Index: i, Status: types.StatusRunning, Holder: it.holder, Expires: it.expires})
			case string(types.StatusCanceled):
				r, err := decodeMemIter(it)
				if err != nil {
					return nil, err
				}
				out = append(out, IterationLease{Index: i, Status: types.StatusCanceled, Clock: r.Clock})
			}
		}
	}
	meterOf(ctx, executionID).Read(float64(max(1, len(out))))
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// IterationRelease implements Store.
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

// IterationList implements Store.
func (m *Memory) IterationList(ctx context.Context, executionID, loopKey string) ([]engine.IterationRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []engine.IterationRecord{}
	for _, it := range m.doc(executionID).iters[loopKey] {
		if !completed(it.status) {
			continue
		}
		r, err := decodeMemIter(it)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	meterOf(ctx, executionID).Read(float64(max(1, len(out))))
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// IterationCount implements Store.
func (m *Memory) IterationCount(ctx context.Context, executionID, loopKey string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	if e := m.execs[executionID]; e != nil {
		for _, it := range e.iters[loopKey] {
			if completed(it.status) {
				n++
			}
		}
	}
	meterOf(ctx, executionID).Read(float64(1 + n/1000))
	return n, nil
}

// LaneDone implements Store.
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

// LaneCount implements Store.
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

// LoopDoneCreate implements Store.
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

// LeaseAcquire implements Store.
func (m *Memory) LeaseAcquire(ctx context.Context, p LeaseAcquireParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	e := m.doc(p.ExecutionID)
	mt.Write(1)
	if d, ok := e.units[p.Unit]; ok {
		mt.Read(1)
		if d.Holder != p.Holder && d.Expires.After(p.Now) {
			return ErrLeaseHeld
		}
		mt.Write(1)
	}
	e.units[p.Unit] = newLease(p)
	return nil
}

// LeaseRenew implements Store.
func (m *Memory) LeaseRenew(ctx context.Context, p LeaseAcquireParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := meterOf(ctx, p.ExecutionID)
	mt.Read(1)
	e := m.doc(p.ExecutionID)
	d, ok := e.units[p.Unit]
	if !ok || d.Holder != p.Holder {
		return ErrLeaseLost
	}
	mt.Write(1)
	e.units[p.Unit] = newLease(p)
	return nil
}

// LeaseRelease implements Store.
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

// BatchPut implements Store.
func (m *Memory) BatchPut(ctx context.Context, b types.Batch) (bool, error) {
	d, err := encodeBatch(b, DefaultRetention)
	if err != nil {
		return false, err
	}
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

// EventList implements Store.
func (m *Memory) EventList(ctx context.Context, executionID string) ([]types.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []types.Projected
	if e := m.execs[executionID]; e != nil {
		for id, d := range e.batches {
			p, err := decodeBatch(id, d)
			if err != nil {
				return nil, err
			}
			ps = append(ps, p...)
		}
	}
	return types.EventsInOrder(ps), nil
}

// EventLog implements Store.
func (m *Memory) EventLog(ctx context.Context, executionID string) ([]types.Event, map[string]float64, error) {
	evs, err := m.EventList(ctx, executionID)
	if err != nil {
		return nil, nil, err
	}
	ops, err := m.OpsTotal(ctx, executionID)
	return evs, ops, err
}

// OpsTotal implements Store.
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

// PlaybookPut implements Store.
func (m *Memory) PlaybookPut(ctx context.Context, p PlaybookPutParams) (int, error) {
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
	pb.versions = append(pb.versions, PlaybookVersion{Path: p.Path, Name: p.Name, Version: v, Source: p.Source, CreatedAt: now})
	return v, nil
}

// PlaybookGet implements Store.
func (m *Memory) PlaybookGet(ctx context.Context, path string, version int) (*PlaybookVersion, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pb := m.playbooks[path]
	if pb == nil || len(pb.versions) == 0 {
		return nil, ErrNotFound
	}
	if version == 0 {
		version = len(pb.versions)
	}
	if version < 1 || version > len(pb.versions) {
		return nil, ErrNotFound
	}
	v := pb.versions[version-1]
	v.Name = pb.name
	return &v, nil
}

// PlaybookList implements Store.
func (m *Memory) PlaybookList(ctx context.Context) ([]PlaybookSummary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []PlaybookSummary{}
	for _, pb := range m.playbooks {
		out = append(out, PlaybookSummary{Path: pb.path, Name: pb.name, Latest: len(pb.versions), UpdatedAt: pb.updated})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// DLQPut implements Store.
func (m *Memory) DLQPut(ctx context.Context, e DLQEntry) error {
	e.normalize()
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.Status == "" {
		e.Status = DLQPending
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
func (m *Memory) dlqFileLocked(e DLQEntry) {
	e.normalize()
	if e.Status == "" {
		e.Status = DLQPending
	}
	m.dlq[e.MessageID] = e
}

// dlqResolveLocked applies a resolution (an absent entry is written bare).
// The caller holds m.mu.
func (m *Memory) dlqResolveLocked(r DLQResolution) {
	id := DLQID(r.ID)
	e, ok := m.dlq[id]
	if !ok {
		e = DLQEntry{MessageID: id}
	}
	e.Status = r.Status
	if r.Note != "" {
		e.Note = r.Note
	}
	m.dlq[id] = e
}

// DLQGet implements Store.
func (m *Memory) DLQGet(ctx context.Context, id string) (*DLQEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.dlq[DLQID(id)]
	if !ok {
		return nil, ErrNotFound
	}
	return &e, nil
}

// DLQList implements Store.
func (m *Memory) DLQList(ctx context.Context, status DLQStatus, limit int) ([]DLQEntry, error) {
	return m.DLQQuery(ctx, DLQFilter{Status: status, Limit: limit})
}

// DLQQuery implements Store.
func (m *Memory) DLQQuery(ctx context.Context, f DLQFilter) ([]DLQEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	out := []DLQEntry{}
	for _, e := range m.dlq {
		if f.matches(e) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].LastSeen != out[j].LastSeen {
			return out[i].LastSeen > out[j].LastSeen
		}
		return strings.Compare(out[i].MessageID, out[j].MessageID) < 0
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// DLQSetStatus implements Store.
func (m *Memory) DLQSetStatus(ctx context.Context, id string, from, to DLQStatus, note string) (*DLQEntry, error) {
	m.mu.Lock()
	id = DLQID(id)
	defer m.mu.Unlock()
	e, ok := m.dlq[id]
	if !ok {
		return nil, ErrNotFound
	}
	if e.Status != from {
		return nil, errs.New(errs.FailedPrecondition, "store: dlq entry %s is %s, not %s", id, e.Status, from)
	}
	e.Status, e.Note = to, note
	m.dlq[id] = e
	return &e, nil
}

// LeaseGet implements Store.
func (m *Memory) LeaseGet(ctx context.Context, executionID, unit string) (string, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, executionID).Read(1)
	e := m.execs[executionID]
	if e == nil {
		return "", time.Time{}, ErrNotFound
	}
	d, ok := e.units[unit]
	if !ok {
		return "", time.Time{}, ErrNotFound
	}
	return d.Holder, d.Expires, nil
}

// IterationGet implements Store.
func (m *Memory) IterationGet(ctx context.Context, executionID, loopKey string, index int) (types.Status, string, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, executionID).Read(1)
	e := m.execs[executionID]
	if e == nil || e.iters[loopKey] == nil || e.iters[loopKey][index] == nil {
		return "", "", time.Time{}, ErrNotFound
	}
	it := e.iters[loopKey][index]
	return types.Status(it.status), it.holder, it.expires, nil
}

// Close implements Store.
func (m *Memory) Close() error { return nil }

var _ Store = (*Memory)(nil)
var _ Store = (*Firestore)(nil)

// AttemptPut implements Store.
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

// AttemptGet implements Store.
func (m *Memory) AttemptGet(ctx context.Context, executionID, unit, key string) (*types.Outcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	meterOf(ctx, executionID).Read(1)
	e := m.execs[executionID]
	if e == nil || e.attempts == nil {
		return nil, ErrNotFound
	}
	d, ok := e.attempts[unit+"/"+key]
	if !ok {
		return nil, ErrNotFound
	}
	return decodeOutcome(d)
}
