package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

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

// Close implements Store.
func (f *Firestore) Close() error { return f.c.Close() }

func (f *Firestore) exec(id string) *firestore.DocumentRef {
	return f.c.Collection("executions").Doc(id)
}

func isCode(err error, c codes.Code) bool { return status.Code(err) == c }

type execDoc struct {
	Status    string    `firestore:"status"`
	Playbook  string    `firestore:"playbook"`
	ParentID  string    `firestore:"parent_id"`
	Version   int64     `firestore:"version"`
	CreatedAt time.Time `firestore:"created_at"`
	UpdatedAt time.Time `firestore:"updated_at"`
	State     string    `firestore:"state"`
	Source    string    `firestore:"source"`
}

func toDoc(rec *Execution) (execDoc, error) {
	b, err := json.Marshal(rec.State)
	if err != nil {
		return execDoc{}, fmt.Errorf("store: encode state: %w", err)
	}
	created, _ := time.Parse(time.RFC3339Nano, rec.State.CreatedAt)
	return execDoc{Status: rec.State.Status, Playbook: rec.State.Playbook, ParentID: rec.State.ParentID,
		Version: rec.State.Version, CreatedAt: created, UpdatedAt: time.Now().UTC(), State: string(b), Source: rec.Source}, nil
}

func fromSnap(s *firestore.DocumentSnapshot) (*Execution, error) {
	var d execDoc
	if err := s.DataTo(&d); err != nil {
		return nil, fmt.Errorf("store: decode execution: %w", err)
	}
	st := &engine.State{}
	if err := jsonx.Unmarshal([]byte(d.State), st); err != nil {
		return nil, fmt.Errorf("store: decode state: %w", err)
	}
	normState(st)
	return &Execution{State: st, Source: d.Source}, nil
}

// normState converts json.Number leftovers inside generic maps.
func normState(st *engine.State) {
	st.Workload = jsonx.NormalizeMap(st.Workload)
	st.Ctx = jsonx.NormalizeMap(st.Ctx)
	st.Results = jsonx.NormalizeMap(st.Results)
	st.Result = jsonx.Normalize(st.Result)
	for _, ss := range st.Steps {
		ss.Args = jsonx.NormalizeMap(ss.Args)
		ss.Error = jsonx.Normalize(ss.Error)
	}
	if st.Outbox != nil {
		for i := range st.Outbox.Commands {
			c := &st.Outbox.Commands[i]
			c.Args = jsonx.NormalizeMap(c.Args)
			c.Item = jsonx.Normalize(c.Item)
			c.Prev = jsonx.Normalize(c.Prev)
			c.Iter = jsonx.NormalizeMap(c.Iter)
			c.CtxPatch = jsonx.NormalizeMap(c.CtxPatch)
			c.TaskResults = jsonx.NormalizeMap(c.TaskResults)
		}
		for i := range st.Outbox.Loops {
			l := &st.Outbox.Loops[i]
			for j := range l.Items {
				l.Items[j] = jsonx.Normalize(l.Items[j])
			}
			l.Args = jsonx.NormalizeMap(l.Args)
		}
		for i := range st.Outbox.Events {
			st.Outbox.Events[i].Payload = jsonx.NormalizeMap(st.Outbox.Events[i].Payload)
		}
	}
	st.ParentIter = jsonx.NormalizeMap(st.ParentIter)
	if c := st.Resume; c != nil {
		c.Args, c.Iter, c.CtxPatch, c.TaskResults = jsonx.NormalizeMap(c.Args), jsonx.NormalizeMap(c.Iter), jsonx.NormalizeMap(c.CtxPatch), jsonx.NormalizeMap(c.TaskResults)
		c.Item, c.Prev = jsonx.Normalize(c.Item), jsonx.Normalize(c.Prev)
	}
	if st.Workload == nil {
		st.Workload = map[string]any{}
	}
	if st.Ctx == nil {
		st.Ctx = map[string]any{}
	}
	if st.Results == nil {
		st.Results = map[string]any{}
	}
	if st.Steps == nil {
		st.Steps = map[string]*engine.StepState{}
	}
}

// ExecutionCreate implements Store.
func (f *Firestore) ExecutionCreate(ctx context.Context, rec *Execution) error {
	d, err := toDoc(rec)
	if err != nil {
		return err
	}
	if _, err := f.exec(rec.State.ExecutionID).Create(ctx, d); err != nil {
		if isCode(err, codes.AlreadyExists) {
			return ErrExists
		}
		return fmt.Errorf("store: create execution: %w", err)
	}
	return nil
}

// ExecutionGet implements Store.
func (f *Firestore) ExecutionGet(ctx context.Context, id string) (*Execution, error) {
	s, err := f.exec(id).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("store: get execution: %w", err)
	}
	return fromSnap(s)
}

// ExecutionUpdate implements Store.
func (f *Firestore) ExecutionUpdate(ctx context.Context, id string, fn ExecutionUpdateFunc) error {
	ref := f.exec(id)
	return f.c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		s, err := tx.Get(ref)
		if err != nil {
			if isCode(err, codes.NotFound) {
				return ErrNotFound
			}
			return err
		}
		rec, err := fromSnap(s)
		if err != nil {
			return err
		}
		write, err := fn(rec)
		if err != nil || !write {
			return err
		}
		d, err := toDoc(rec)
		if err != nil {
			return err
		}
		return tx.Set(ref, d)
	})
}

type blobDoc struct {
	Data string `firestore:"data"`
}

func (f *Firestore) loop(execID, key string) *firestore.DocumentRef {
	return f.exec(execID).Collection("loops").Doc(key)
}

// LoopPut implements Store.
func (f *Firestore) LoopPut(ctx context.Context, executionID string, plan engine.LoopPlan) error {
	b, err := json.Marshal(plan)
	if err != nil {
		return fmt.Errorf("store: encode loop plan: %w", err)
	}
	if _, err := f.loop(executionID, plan.Key()).Create(ctx, blobDoc{Data: string(b)}); err != nil && !isCode(err, codes.AlreadyExists) {
		return fmt.Errorf("store: put loop plan: %w", err)
	}
	return nil
}

// LoopGet implements Store.
func (f *Firestore) LoopGet(ctx context.Context, executionID, key string) (*engine.LoopPlan, error) {
	s, err := f.loop(executionID, key).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("store: get loop plan: %w", err)
	}
	var d blobDoc
	if err := s.DataTo(&d); err != nil {
		return nil, err
	}
	p := &engine.LoopPlan{}
	if err := jsonx.Unmarshal([]byte(d.Data), p); err != nil {
		return nil, fmt.Errorf("store: decode loop plan: %w", err)
	}
	for i := range p.Items {
		p.Items[i] = jsonx.Normalize(p.Items[i])
	}
	p.Args = jsonx.NormalizeMap(p.Args)
	return p, nil
}

type iterDoc struct {
	Index  int    `firestore:"index"`
	Status string `firestore:"status"`
	Data   string `firestore:"data"`
}

// IterationPut implements Store.
func (f *Firestore) IterationPut(ctx context.Context, executionID, loopKey string, it Iteration) error {
	b, err := json.Marshal(it)
	if err != nil {
		return fmt.Errorf("store: encode iteration: %w", err)
	}
	_, err = f.loop(executionID, loopKey).Collection("iterations").Doc(fmt.Sprintf("%08d", it.Index)).
		Set(ctx, iterDoc{Index: it.Index, Status: it.Status, Data: string(b)})
	if err != nil {
		return fmt.Errorf("store: put iteration: %w", err)
	}
	return nil
}

// IterationCount implements Store.
func (f *Firestore) IterationCount(ctx context.Context, executionID, loopKey string) (int, error) {
	q := f.loop(executionID, loopKey).Collection("iterations").NewAggregationQuery().WithCount("n")
	res, err := q.Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: count iterations: %w", err)
	}
	switch v := res["n"].(type) {
	case int64:
		return int(v), nil
	case interface{ GetIntegerValue() int64 }:
		return int(v.GetIntegerValue()), nil
	}
	return 0, fmt.Errorf("store: count iterations: unexpected %T", res["n"])
}

// IterationList implements Store.
func (f *Firestore) IterationList(ctx context.Context, executionID, loopKey string) ([]Iteration, error) {
	it := f.loop(executionID, loopKey).Collection("iterations").Documents(ctx)
	defer it.Stop()
	var out []Iteration
	for {
		s, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("store: list iterations: %w", err)
		}
		var d iterDoc
		if err := s.DataTo(&d); err != nil {
			return nil, err
		}
		var x Iteration
		if err := jsonx.Unmarshal([]byte(d.Data), &x); err != nil {
			return nil, err
		}
		x.Result = jsonx.Normalize(x.Result)
		x.Error = jsonx.Normalize(x.Error)
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// LoopDoneCreate implements Store.
func (f *Firestore) LoopDoneCreate(ctx context.Context, executionID, loopKey string) error {
	_, err := f.exec(executionID).Collection("loop_done").Doc(loopKey).Create(ctx, map[string]any{"at": time.Now().UTC()})
	if err != nil {
		if isCode(err, codes.AlreadyExists) {
			return ErrExists
		}
		return fmt.Errorf("store: loop done: %w", err)
	}
	return nil
}

type leaseDoc struct {
	Holder    string    `firestore:"holder"`
	Expires   time.Time `firestore:"expires"`
	Completed bool      `firestore:"completed"`
}

// LeaseAcquire implements Store.
func (f *Firestore) LeaseAcquire(ctx context.Context, p LeaseAcquireParams) (LeaseState, error) {
	ref := f.exec(p.ExecutionID).Collection("leases").Doc(p.Unit)
	var state LeaseState
	err := f.c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		state = LeaseAcquired
		s, err := tx.Get(ref)
		if err != nil && !isCode(err, codes.NotFound) {
			return err
		}
		if err == nil {
			var d leaseDoc
			if err := s.DataTo(&d); err != nil {
				return err
			}
			if d.Completed {
				state = LeaseCompleted
				return nil
			}
			if d.Holder != "" && d.Holder != p.Holder && d.Expires.After(p.Now) {
				return ErrLeaseHeld
			}
		}
		return tx.Set(ref, leaseDoc{Holder: p.Holder, Expires: p.Now.Add(p.TTL)})
	})
	if err != nil {
		if err == ErrLeaseHeld {
			return 0, ErrLeaseHeld
		}
		return 0, fmt.Errorf("store: acquire lease: %w", err)
	}
	return state, nil
}

// LeaseRelease implements Store. A release by a holder whose lease was
// taken over is a no-op, and completion is final.
func (f *Firestore) LeaseRelease(ctx context.Context, executionID, unit, holder string, completed bool) error {
	ref := f.exec(executionID).Collection("leases").Doc(unit)
	err := f.c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		s, err := tx.Get(ref)
		if err != nil && !isCode(err, codes.NotFound) {
			return err
		}
		var d leaseDoc
		if err == nil {
			if err := s.DataTo(&d); err != nil {
				return err
			}
		}
		switch {
		case d.Completed:
			return nil
		case completed:
			return tx.Set(ref, leaseDoc{Completed: true})
		case d.Holder != holder:
			return nil
		}
		return tx.Set(ref, leaseDoc{})
	})
	if err != nil {
		return fmt.Errorf("store: release lease: %w", err)
	}
	return nil
}

type eventDoc struct {
	Type      string `firestore:"event_type"`
	Timestamp string `firestore:"timestamp"`
	Step      string `firestore:"step"`
	Seq       int64  `firestore:"seq"`
	Data      string `firestore:"data"`
}

// EventPut implements Store (idempotent by event id; the first write wins).
func (f *Firestore) EventPut(ctx context.Context, ev types.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("store: encode event: %w", err)
	}
	// First write wins: a re-emitted event (same id) keeps its original
	// projection.
	_, err = f.exec(ev.ExecutionID).Collection("events").Doc(ev.EventID).
		Create(ctx, eventDoc{Type: ev.EventType, Timestamp: ev.Timestamp, Step: ev.Step, Data: string(b)})
	if err != nil && !isCode(err, codes.AlreadyExists) {
		return fmt.Errorf("store: put event: %w", err)
	}
	return nil
}

// EventList implements Store: events in seq order (timestamp order for
// events projected without a seq).
func (f *Firestore) EventList(ctx context.Context, executionID string) ([]types.Event, error) {
	it := f.exec(executionID).Collection("events").Documents(ctx)
	defer it.Stop()
	var out []types.Event
	for {
		s, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("store: list events: %w", err)
		}
		var d eventDoc
		if err := s.DataTo(&d); err != nil {
			return nil, err
		}
		var ev types.Event
		if err := jsonx.Unmarshal([]byte(d.Data), &ev); err != nil {
			return nil, err
		}
		ev.Payload = jsonx.NormalizeMap(ev.Payload)
		out = append(out, ev)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Seq != out[j].Seq && out[i].Seq > 0 && out[j].Seq > 0 {
			return out[i].Seq < out[j].Seq
		}
		return out[i].Timestamp < out[j].Timestamp
	})
	return out, nil
}

// DLQPut implements Store. A repeated entry for the same message keeps
// its first_seen and status and the larger attempt count.
func (f *Firestore) DLQPut(ctx context.Context, e DLQEntry) error {
	if e.Status == "" {
		e.Status = "pending"
	}
	ref := f.c.Collection("dlq").Doc(e.MessageID)
	err := f.c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		s, err := tx.Get(ref)
		if err != nil && !isCode(err, codes.NotFound) {
			return err
		}
		if err == nil {
			var old DLQEntry
			if err := s.DataTo(&old); err == nil {
				e.FirstSeen, e.Status = old.FirstSeen, old.Status
				if old.Attempts > e.Attempts {
					e.Attempts = old.Attempts
				}
			}
		}
		return tx.Set(ref, e)
	})
	if err != nil {
		return fmt.Errorf("store: put dlq entry: %w", err)
	}
	return nil
}
