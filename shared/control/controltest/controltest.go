// Package controltest provides in-memory fakes of the control plane's I/O
// for in-process unit tests of shared/control, shared/router and
// shared/worker: a Publisher (bus.Publisher: the events and commands
// topics; an alias of shared/bus/membus), a Tasks (tasks.Creator: Cloud
// Tasks; an alias of shared/tasks/memtasks), an Offloader
// (results.Offloader: the results tier), a Store wrapper that fails chosen
// calls, a settable Clock, and Env, which wires them with memstore.Memory and
// a control.Control. The fakes move values the way the real transports do
// (JSON encoded, decoded with shared/jsonx and normalised like execute and
// materialize do), so a value that would not survive a Cloud Task body or
// a Pub/Sub message does not survive here either; each passes the
// conformance suite its driver passes (bustest, taskstest, resultstest).
// They are safe for concurrent use. Integration tests use the real
// emulators instead (scripts/up).
package controltest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/bus/membus"
	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/tasks/memtasks"
	"github.com/noetl/gcpengine/shared/types"
)

// T0 is the fake clock's default start (a fixed UTC instant, so tests are
// repeatable).
var T0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// Clock is a settable clock for Control.Now and Worker.Now.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t (never backwards: an earlier t is ignored).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	if t.After(c.t) {
		c.t = t
	}
	c.mu.Unlock()
}

// FailTimes returns a failure knob for the fakes' Fail* fields: it fails
// the first n calls whose argument matches (nil match: every call) with
// err, and lets every other call through.
func FailTimes[T any](n int, err error, match func(T) bool) func(T) error {
	var mu sync.Mutex
	return func(v T) error {
		mu.Lock()
		defer mu.Unlock()
		if n <= 0 || (match != nil && !match(v)) {
			return nil
		}
		n--
		return err
	}
}

// Publisher is the in-memory bus.Publisher (shared/bus/membus), kept
// here under its old name for the engine's tests.
type Publisher = membus.Publisher

// Task is one Cloud Task of the fake queue (shared/tasks/memtasks).
type Task = memtasks.Task

// Tasks is the in-memory tasks.Creator (shared/tasks/memtasks), kept here
// under its old name for the engine's tests.
type Tasks = memtasks.Tasks

// Offloader is an in-memory results.Offloader: a value whose JSON
// encoding is longer than InlineMax bytes is stored (after a JSON round
// trip) and replaced by the reference {"$ref": {"key": ...}, "extracted":
// results.ExtractedOf(v)} (the shape of shared/results references); Resolve
// replaces the references at any depth of a value by fresh copies of their
// values, and a reference to a value it does not hold is results.ErrNotFound.
// Like results.Store it loads a reference only for the context's
// results.Reader (the execution that stored it, its parent, its
// children: results.ErrForbidden otherwise); its key starts with the
// path-escaped execution id.
// resultstest.OffloaderSuite holds it to the contract results.Store passes.
type Offloader struct {
	// InlineMax is the inline budget in bytes (≤ 0: everything inline).
	InlineMax int

	mu     sync.Mutex
	vals   map[string]any
	coords []types.ResultCoords
}

// RefKey is the key of a reference map (shared/results.RefKey).
const RefKey = results.RefKey

// Offload implements results.Offloader.
func (o *Offloader) Offload(ctx context.Context, c types.ResultCoords, v any) (any, error) {
	return o.offload(ctx, c, v, o.InlineMax)
}

// OffloadForced stores v whatever its size (results.Store.OffloadForced).
func (o *Offloader) OffloadForced(ctx context.Context, c types.ResultCoords, v any) (any, error) {
	return o.offload(ctx, c, v, 1)
}

func (o *Offloader) offload(ctx context.Context, c types.ResultCoords, v any, limit int) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("controltest: encode result: %w", err)
	}
	if limit <= 0 || len(b) <= limit {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, errs.Wrap(errs.CodeOf(err), err, "controltest: offload")
	}
	key := fmt.Sprintf("%s/%s/%d/%d/%d", url.PathEscape(c.ExecutionID), c.Step, c.Frame, c.Row, c.Attempt)
	var stored any
	if err := jsonx.Unmarshal(b, &stored); err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	o.vals[key] = stored
	o.coords = append(o.coords, c)
	return map[string]any{RefKey: map[string]any{"key": key}, results.ExtractedKey: results.ExtractedOf(v)}, nil
}

// Resolve implements results.Offloader: every reference inside v (maps
// and lists, at any depth) becomes a fresh copy of its stored value; any
// other value is returned as is.
func (o *Offloader) Resolve(ctx context.Context, v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x[RefKey].(map[string]any); ok {
			if err := ctx.Err(); err != nil {
				return nil, errs.Wrap(errs.CodeOf(err), err, "controltest: resolve")
			}
			key, _ := ref["key"].(string)
			id, _, _ := strings.Cut(key, "/")
			if id, err := url.PathUnescape(id); err != nil || id == "" {
				return nil, fmt.Errorf("controltest: resolve %q: %w", key, results.ErrBadRef)
			} else if err := results.AuthorizeExecution(ctx, id, key); err != nil {
				return nil, err
			}
			o.mu.Lock()
			val, ok := o.vals[key]
			o.mu.Unlock()
			if !ok {
				return nil, fmt.Errorf("controltest: resolve %q: %w", key, results.ErrNotFound)
			}
			return jsonx.Clone(val), nil
		}
		var out map[string]any
		for k, e := range x {
			r, err := o.Resolve(ctx, e)
			if err != nil {
				return nil, err
			}
			if out == nil && !sameValue(r, e) {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			if out != nil {
				out[k] = r
			}
		}
		if out != nil {
			return out, nil
		}
		return x, nil
	case []any:
		var out []any
		for i, e := range x {
			r, err := o.Resolve(ctx, e)
			if err != nil {
				return nil, err
			}
			if out == nil && !sameValue(r, e) {
				out = append([]any(nil), x...)
			}
			if out != nil {
				out[i] = r
			}
		}
		if out != nil {
			return out, nil
		}
		return x, nil
	}
	return v, nil
}

// sameValue reports whether Resolve left e as it was (the same map or
// slice, or an equal scalar).
func sameValue(r, e any) bool {
	switch x := e.(type) {
	case map[string]any:
		y, ok := r.(map[string]any)
		return ok && reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	case []any:
		y, ok := r.([]any)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	}
	return true
}

// Offloaded returns the coordinates of the values stored so far.
func (o *Offloader) Offloaded() []types.ResultCoords {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]types.ResultCoords(nil), o.coords...)
}

// FlakyStore wraps a store.Store and fails chosen calls: Fail is called
// with the method name ("ExecutionGet", "ExecutionCheckpoint",
// "CompleteUnit", "AttemptPut") and the execution id before the call is
// passed on; a non-nil error is returned instead. A step unit's
// CompleteUnit (it commits a transition) is also failed by
// "ExecutionCheckpoint".
type FlakyStore struct {
	store.Store
	Fail func(op, executionID string) error
}

func (f *FlakyStore) fail(op, id string) error {
	if f.Fail == nil {
		return nil
	}
	return f.Fail(op, id)
}

// ExecutionGet implements store.Store.
func (f *FlakyStore) ExecutionGet(ctx context.Context, id string) (*store.Execution, error) {
	if err := f.fail("ExecutionGet", id); err != nil {
		return nil, err
	}
	return f.Store.ExecutionGet(ctx, id)
}

// ExecutionCheckpoint implements store.Store.
func (f *FlakyStore) ExecutionCheckpoint(ctx context.Context, p store.CheckpointParams) (store.Checkpoint, error) {
	if err := f.fail("ExecutionCheckpoint", p.ExecutionID); err != nil {
		return store.Checkpoint{}, err
	}
	return f.Store.ExecutionCheckpoint(ctx, p)
}

// CompleteUnit implements store.Store.
func (f *FlakyStore) CompleteUnit(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	if err := f.fail("CompleteUnit", p.ExecutionID); err != nil {
		return store.UnitCompletion{}, err
	}
	if p.Checkpoint != nil {
		// A step unit's end commits its transition: it fails as a
		// checkpoint does.
		if err := f.fail("ExecutionCheckpoint", p.ExecutionID); err != nil {
			return store.UnitCompletion{}, err
		}
	}
	return f.Store.CompleteUnit(ctx, p)
}

// AttemptPut implements store.Store.
func (f *FlakyStore) AttemptPut(ctx context.Context, executionID, unit, key string, out types.Outcome) error {
	if err := f.fail("AttemptPut", executionID); err != nil {
		return err
	}
	return f.Store.AttemptPut(ctx, executionID, unit, key, out)
}

// Env wires the fakes with an in-memory store and a Control (Source
// "execute", its Now on Clock, logs discarded).
type Env struct {
	Clock   *Clock
	Memory  *memstore.Memory
	Bus     *Publisher
	Tasks   *Tasks
	Control *control.Control
	Log     *slog.Logger
}

// NewEnv returns a fresh Env with its clock at T0.
func NewEnv() *Env {
	e := &Env{Clock: NewClock(T0), Memory: memstore.NewMemory(), Bus: &Publisher{}, Tasks: &Tasks{}, Log: slog.New(slog.DiscardHandler)}
	e.Control = &control.Control{Store: e.Memory, Bus: e.Bus, Tasks: e.Tasks, Now: e.Clock.Now, Source: "execute", Log: e.Log}
	return e
}

// Launch creates execution id of the playbook src with workload (as the
// api does: launch.Start) and applies its start (as route does). parentID
// links a child execution ("" for none).
func (e *Env) Launch(ctx context.Context, id, parentID, src string, workload map[string]any) error {
	pb, err := dsl.Load([]byte(src), "test.yaml")
	if err != nil {
		return err
	}
	if _, err := launch.Start(ctx, e.Memory, e.Bus, launch.Params{Playbook: pb, Source: []byte(src), Workload: workload,
		ParentID: parentID, ExecutionID: id, Now: e.Clock.Now()}); err != nil {
		return err
	}
	var req *types.Event
	for _, b := range e.Bus.Batches() {
		for i := range b.Events {
			if b.ExecutionID == id && b.Events[i].EventType == types.EvExecutionRequested {
				req = &b.Events[i]
			}
		}
	}
	if req == nil {
		return fmt.Errorf("controltest: launch of %s published no request event", id)
	}
	_, err = e.Control.Apply(ctx, control.ApplyParams{ExecutionID: id, Event: *req, OutboxID: req.EventID})
	return err
}

// State reads an execution's state (nil when it cannot be read).
func (e *Env) State(ctx context.Context, id string) *store.Execution {
	rec, err := e.Memory.ExecutionGet(ctx, id)
	if err != nil {
		return nil
	}
	return rec
}
