// Package controltest provides in-memory fakes of the control plane's I/O
// for in-process unit tests of shared/control, shared/router and
// shared/worker: a Publisher (bus.Publisher: the events and commands
// topics), a Tasks (tasks.Creator: Cloud Tasks), an Offloader
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
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/tasks"
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

// Publisher is an in-memory bus.Publisher: it publishes exactly the
// messages the Pub/Sub driver publishes (bus.BatchMessages and
// bus.CommandMessages: split batches, attributes, trace context,
// signature, the meter's pending counts, the publish counted on the
// context's meter), refuses what Pub/Sub refuses (a message over its size
// limit: InvalidArgument; a done context: Canceled or DeadlineExceeded),
// and records each message with the batch or command it decodes to
// (shared/jsonx), in order. bustest.Run holds it to the driver's contract.
type Publisher struct {
	// FailBatch, when set, is called before a batch is published; a
	// non-nil error fails the publish (nothing is recorded).
	FailBatch func(types.Batch) error
	// FailCommands, when set, is called before commands are published; a
	// non-nil error fails the publish (nothing is recorded).
	FailCommands func([]types.Command) error
	// Signer signs the messages as the driver's does (nil: unsigned).
	Signer *sign.Signer

	mu       sync.Mutex
	batches  []types.Batch
	commands []types.Command
	messages map[string][]bus.Encoded // topic ("events", "commands") → messages
	attempts int
}

// publishable refuses what the Pub/Sub client refuses: a done context,
// and a message that does not fit in one publish request.
func publishable(ctx context.Context, msgs []bus.Encoded) error {
	if err := ctx.Err(); err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "controltest: publish")
	}
	for _, m := range msgs {
		if n := len(m.Data) + attributesSize(m.Attributes); n > bus.MaxPubSubMessageBytes-1024 {
			return errs.New(errs.InvalidArgument, "controltest: publish: a %d-byte message exceeds Pub/Sub's limit (%d bytes per publish request)", n, bus.MaxPubSubMessageBytes)
		}
	}
	return nil
}

func attributesSize(a map[string]string) int {
	n := 0
	for k, v := range a {
		n += len(k) + len(v)
	}
	return n
}

// PublishBatch implements bus.Publisher.
func (p *Publisher) PublishBatch(ctx context.Context, b types.Batch) error {
	p.mu.Lock()
	p.attempts++
	fail := p.FailBatch
	p.mu.Unlock()
	if fail != nil {
		if err := fail(b); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "controltest: publish")
	}
	msgs, err := bus.BatchMessages(ctx, p.Signer, b)
	if err != nil {
		return err
	}
	if err := publishable(ctx, msgs); err != nil {
		return err
	}
	got := make([]types.Batch, len(msgs))
	for i, m := range msgs {
		if err := jsonx.Unmarshal(m.Data, &got[i]); err != nil {
			return fmt.Errorf("controltest: decode batch: %w", err)
		}
	}
	bus.CountPublished(ctx, msgs)
	p.mu.Lock()
	p.batches = append(p.batches, got...)
	p.record(bus.EventsTopic, msgs)
	p.mu.Unlock()
	return recordEvents(got)
}

// recordMu serialises appends to the NOETL_RECORD_EVENTS file.
var recordMu sync.Mutex

// recordEvents appends the events of published batches, as the api would
// return them (one JSON object per line), to the file named by
// NOETL_RECORD_EVENTS when it is set: with the stack's recordings
// (emulators/e2e, NOETL_E2E_RECORD_EVENTS), the source of the typed
// payloads' round-trip test data (shared/history TestRecordedEvents
// -update), for the event shapes only unit tests reach (a reclaimed unit,
// an execution deadline, a cursor loop).
func recordEvents(batches []types.Batch) error {
	path := os.Getenv("NOETL_RECORD_EVENTS")
	if path == "" {
		return nil
	}
	recordMu.Lock()
	defer recordMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, b := range batches {
		for _, e := range b.Events {
			line, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if _, err := f.Write(append(line, '\n')); err != nil {
				return err
			}
		}
	}
	return nil
}

// record keeps msgs as published on topic. Called with p.mu held.
func (p *Publisher) record(topic string, msgs []bus.Encoded) {
	if p.messages == nil {
		p.messages = map[string][]bus.Encoded{}
	}
	p.messages[topic] = append(p.messages[topic], msgs...)
}

// PublishCommands implements bus.Publisher.
func (p *Publisher) PublishCommands(ctx context.Context, cmds ...types.Command) error {
	if p.FailCommands != nil {
		if err := p.FailCommands(cmds); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "controltest: publish")
	}
	msgs, err := bus.CommandMessages(ctx, p.Signer, cmds...)
	if err != nil {
		return err
	}
	if err := publishable(ctx, msgs); err != nil {
		return err
	}
	out := make([]types.Command, len(msgs))
	for i, m := range msgs {
		if err := jsonx.Unmarshal(m.Data, &out[i]); err != nil {
			return fmt.Errorf("controltest: decode command: %w", err)
		}
	}
	bus.CountPublished(ctx, msgs)
	p.mu.Lock()
	p.commands = append(p.commands, out...)
	p.record(bus.CommandsTopic, msgs)
	p.mu.Unlock()
	return nil
}

// Messages returns the messages published on topic (bus.EventsTopic or
// bus.CommandsTopic), in publish order: what a subscription receives.
func (p *Publisher) Messages(topic string) []bus.Encoded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bus.Encoded(nil), p.messages[topic]...)
}

// Batches returns the published batches in publish order, as they arrive
// (repeats included: a republished batch appears again, with the same id;
// a batch over bus.MaxMessageBytes appears as its parts).
func (p *Publisher) Batches() []types.Batch {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]types.Batch(nil), p.batches...)
}

// BatchAttempts counts PublishBatch calls, failed ones included.
func (p *Publisher) BatchAttempts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.attempts
}

// Commands returns the commands published on the commands topic, in order.
func (p *Publisher) Commands() []types.Command {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]types.Command(nil), p.commands...)
}

// Events returns the execution's events as the projection keeps them: the
// first copy of each event id, in publish order ("" = every execution).
func (p *Publisher) Events(executionID string) []types.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	var out []types.Event
	for _, b := range p.batches {
		for _, e := range b.Events {
			if (executionID != "" && e.ExecutionID != executionID) || seen[e.EventID] {
				continue
			}
			seen[e.EventID] = true
			out = append(out, e)
		}
	}
	return out
}

// Log returns the execution's event log as the events projection reads it
// back (store.EventList): every copy of every batch projected, then put in
// causal order with duplicates dropped (types.EventsInOrder).
func (p *Publisher) Log(executionID string) []types.Event {
	p.mu.Lock()
	var ps []types.Projected
	seen := map[string]bool{}
	for _, b := range p.batches {
		if b.ExecutionID != executionID || seen[b.ID] {
			continue // the first copy of a batch wins
		}
		seen[b.ID] = true
		for i, e := range b.Events {
			ps = append(ps, types.Projected{Event: e, BatchID: b.ID, Index: i})
		}
	}
	p.mu.Unlock()
	return types.EventsInOrder(ps)
}

// EventsOf returns the distinct events of one type (see Events).
func (p *Publisher) EventsOf(executionID string, typ types.EventType) []types.Event {
	var out []types.Event
	for _, e := range p.Events(executionID) {
		if e.EventType == typ {
			out = append(out, e)
		}
	}
	return out
}

// Conflicts returns a description of every event id published with two
// different contents (type, clock, step, run, iteration or status): a
// re-published event must be the same event. Empty when consistent.
func (p *Publisher) Conflicts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	first := map[string]types.Event{}
	var out []string
	for _, b := range p.batches {
		for _, e := range b.Events {
			f, ok := first[e.EventID]
			if !ok {
				first[e.EventID] = e
				continue
			}
			if f.EventType != e.EventType || f.Clock != e.Clock || f.Step != e.Step || f.StepRun != e.StepRun ||
				iterOf(f.Iteration) != iterOf(e.Iteration) || f.Status != e.Status {
				out = append(out, fmt.Sprintf("event %s: %s clock %d, then %s clock %d (batch %s)", e.EventID, f.EventType, f.Clock, e.EventType, e.Clock, b.ID))
			}
		}
	}
	return out
}

func iterOf(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// Task is one Cloud Task of the fake queue.
type Task struct {
	Name string
	Cmd  types.Command
	// Taken reports the task was delivered (Tasks.Take); Deleted that it
	// was deleted before delivery.
	Taken, Deleted bool
}

// Tasks is an in-memory tasks.Creator with Cloud Tasks' name dedup: a
// second create of a name returns created=false, also after the first was
// delivered or deleted. Commands are stored as execute decodes the body
// the driver sends (tasks.Body: the creator's trace, secrets masked; then
// jsonx); a done context fails the call (Canceled, DeadlineExceeded).
// taskstest.Run holds it to the contract the driver passes on the Cloud
// Tasks emulator.
type Tasks struct {
	// FailCreate, when set, is called before a task is created; a non-nil
	// error fails the create (nothing is recorded).
	FailCreate func(types.Command) error

	mu       sync.Mutex
	tasks    []*Task
	byName   map[string]*Task
	calls    int
	delExecs []string
	deleted  []string
}

// roundTrip returns cmd as execute decodes the body of its Cloud Task.
func roundTrip(ctx context.Context, c types.Command) (types.Command, error) {
	raw, err := tasks.Body(ctx, c)
	if err != nil {
		return types.Command{}, err
	}
	var d types.Command
	if err := jsonx.Unmarshal(raw, &d); err != nil {
		return types.Command{}, fmt.Errorf("controltest: decode command: %w", err)
	}
	return d, nil
}

// done fails a call made with a done context, as the Cloud Tasks client
// does.
func done(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return errs.Wrap(errs.CodeOf(err), err, "controltest: tasks")
	}
	return nil
}

// TaskCreate implements tasks.Creator.
func (t *Tasks) TaskCreate(ctx context.Context, cmd types.Command, now time.Time) (bool, error) {
	t.mu.Lock()
	t.calls++
	fail := t.FailCreate
	t.mu.Unlock()
	if fail != nil {
		if err := fail(cmd); err != nil {
			return false, err
		}
	}
	if err := done(ctx); err != nil {
		return false, err
	}
	d, err := roundTrip(ctx, cmd)
	if err != nil {
		return false, err
	}
	name := cmd.TaskName()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byName == nil {
		t.byName = map[string]*Task{}
	}
	if _, ok := t.byName[name]; ok {
		return false, nil
	}
	tk := &Task{Name: name, Cmd: d}
	t.byName[name] = tk
	t.tasks = append(t.tasks, tk)
	return true, nil
}

// TaskDelete implements tasks.Creator.
func (t *Tasks) TaskDelete(ctx context.Context, cmd types.Command, now time.Time) error {
	if err := done(ctx); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	name := cmd.TaskName()
	t.deleted = append(t.deleted, name)
	if tk := t.byName[name]; tk != nil && !tk.Taken {
		tk.Deleted = true
	}
	return nil
}

// TaskDeleteExecution implements tasks.Creator: it deletes the
// execution's tasks not yet delivered, but its watchdogs (as the
// Dispatcher does).
func (t *Tasks) TaskDeleteExecution(ctx context.Context, executionID string) (int, error) {
	if err := done(ctx); err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.delExecs = append(t.delExecs, executionID)
	prefix := types.TaskPrefix(executionID) + "-"
	n := 0
	for _, tk := range t.tasks {
		if !tk.Taken && !tk.Deleted && strings.HasPrefix(tk.Name, prefix) && !types.IsWatchdog(tk.Name) {
			tk.Deleted = true
			n++
		}
	}
	return n, nil
}

// Tasks returns a copy of every task created, in creation order.
func (t *Tasks) Tasks() []Task {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Task, len(t.tasks))
	for i, tk := range t.tasks {
		out[i] = *tk
	}
	return out
}

// Calls counts TaskCreate calls (failed and duplicate ones included).
func (t *Tasks) Calls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls
}

// Created returns every created task's command, in creation order.
func (t *Tasks) Created() []types.Command {
	return t.list(func(*Task) bool { return true })
}

// Pending returns the commands of tasks neither delivered nor deleted.
func (t *Tasks) Pending() []types.Command {
	return t.list(func(tk *Task) bool { return !tk.Taken && !tk.Deleted })
}

func (t *Tasks) list(keep func(*Task) bool) []types.Command {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []types.Command
	for _, tk := range t.tasks {
		if keep(tk) {
			out = append(out, tk.Cmd)
		}
	}
	return out
}

// Take delivers the pending task that is due first (earliest NotBefore,
// then creation order) among those match accepts (nil: any); ok is false
// when none is pending.
func (t *Tasks) Take(match func(types.Command) bool) (cmd types.Command, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var cands []*Task
	for _, tk := range t.tasks {
		if !tk.Taken && !tk.Deleted && (match == nil || match(tk.Cmd)) {
			cands = append(cands, tk)
		}
	}
	if len(cands) == 0 {
		return types.Command{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Cmd.NotBefore.Before(cands[j].Cmd.NotBefore) })
	cands[0].Taken = true
	return cands[0].Cmd, true
}

// DeletedExecutions returns the execution ids passed to
// TaskDeleteExecution, in call order.
func (t *Tasks) DeletedExecutions() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.delExecs...)
}

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
