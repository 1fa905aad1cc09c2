package latency

import (
	"context"
	"errors"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// Store wraps s so that each call first waits its Firestore latency:
// reads and queries FirestoreRead; writes FirestoreCommit; a
// transaction (read, then commit: ExecutionCheckpoint without a Base read
// by the caller, IterationBegin, IterationEnd, IterationPark,
// LoopDoneCreate, LeaseRenew, PlaybookPut, DLQPut, DLQSetStatus) both;
// LeaseAcquire and CompleteUnit as the driver does them (see each); an optimistic checkpoint (a Base with its
// UpdateTime: one conditional write) a commit only. ExecutionWatch (a listener) and Close are not
// delayed, nor any method the contract gains before it is listed here
// (it is passed through). A wait cut short by ctx returns ctx's error
// and does not call s.
func Store(s store.Store, in *Injector) store.Store { return &latentStore{Store: s, in: in} }

type latentStore struct {
	store.Store
	in *Injector
}

func (l *latentStore) read(ctx context.Context) error { return l.in.Wait(ctx, FirestoreRead) }

func (l *latentStore) commit(ctx context.Context) error { return l.in.Wait(ctx, FirestoreCommit) }

func (l *latentStore) txn(ctx context.Context) error {
	if err := l.read(ctx); err != nil {
		return err
	}
	return l.commit(ctx)
}

func (l *latentStore) ExecutionCreate(ctx context.Context, rec *store.Execution) error {
	if err := l.commit(ctx); err != nil {
		return err
	}
	return l.Store.ExecutionCreate(ctx, rec)
}

func (l *latentStore) ExecutionGet(ctx context.Context, id string) (*store.Execution, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.ExecutionGet(ctx, id)
}

func (l *latentStore) ExecutionList(ctx context.Context, p store.ExecutionListParams) ([]store.ExecutionSummary, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.ExecutionList(ctx, p)
}

func (l *latentStore) ExecutionCount(ctx context.Context, p store.ExecutionListParams) (map[types.Status]int, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.ExecutionCount(ctx, p)
}

func (l *latentStore) ExecutionCheckpoint(ctx context.Context, p store.CheckpointParams) (store.Checkpoint, error) {
	wait := l.txn
	if p.Base != nil && !p.Base.UpdateTime.IsZero() {
		wait = l.commit
	}
	if err := wait(ctx); err != nil {
		return store.Checkpoint{}, err
	}
	return l.Store.ExecutionCheckpoint(ctx, p)
}

func (l *latentStore) OutboxGet(ctx context.Context, executionID, id string) (*engine.Output, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.OutboxGet(ctx, executionID, id)
}

func (l *latentStore) LoopGet(ctx context.Context, executionID, key string) (*engine.LoopPlan, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.LoopGet(ctx, executionID, key)
}

func (l *latentStore) IterationBegin(ctx context.Context, p store.IterationBeginParams) (*engine.IterationRecord, error) {
	if err := l.txn(ctx); err != nil {
		return nil, err
	}
	return l.Store.IterationBegin(ctx, p)
}

func (l *latentStore) IterationEnd(ctx context.Context, p store.IterationEndParams) (bool, error) {
	if err := l.txn(ctx); err != nil {
		return false, err
	}
	return l.Store.IterationEnd(ctx, p)
}

func (l *latentStore) IterationPark(ctx context.Context, p store.IterationParkParams) (*engine.IterationRecord, error) {
	if err := l.txn(ctx); err != nil {
		return nil, err
	}
	return l.Store.IterationPark(ctx, p)
}

func (l *latentStore) IterationRunning(ctx context.Context, executionID, loopKey string) ([]store.IterationLease, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.IterationRunning(ctx, executionID, loopKey)
}

func (l *latentStore) IterationRelease(ctx context.Context, executionID, loopKey string, index int, holder string) error {
	if err := l.commit(ctx); err != nil {
		return err
	}
	return l.Store.IterationRelease(ctx, executionID, loopKey, index, holder)
}

func (l *latentStore) IterationList(ctx context.Context, executionID, loopKey string) ([]engine.IterationRecord, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.IterationList(ctx, executionID, loopKey)
}

func (l *latentStore) IterationCount(ctx context.Context, executionID, loopKey string) (int, error) {
	if err := l.read(ctx); err != nil {
		return 0, err
	}
	return l.Store.IterationCount(ctx, executionID, loopKey)
}

func (l *latentStore) LaneDone(ctx context.Context, executionID, loopKey string, lane int) error {
	if err := l.commit(ctx); err != nil {
		return err
	}
	return l.Store.LaneDone(ctx, executionID, loopKey, lane)
}

func (l *latentStore) LaneCount(ctx context.Context, executionID, loopKey string) (int, error) {
	if err := l.read(ctx); err != nil {
		return 0, err
	}
	return l.Store.LaneCount(ctx, executionID, loopKey)
}

func (l *latentStore) LoopDoneCreate(ctx context.Context, executionID, loopKey, owner string) (string, error) {
	if err := l.txn(ctx); err != nil {
		return "", err
	}
	return l.Store.LoopDoneCreate(ctx, executionID, loopKey, owner)
}

// LeaseAcquire is the driver's fast path, one Create (a commit); a lease
// found held cost the driver's compare-and-set a read more, waited after
// the call (the takeover of an expired lease, a read and a second commit,
// is not told apart from the fast path).
func (l *latentStore) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) error {
	if err := l.commit(ctx); err != nil {
		return err
	}
	err := l.Store.LeaseAcquire(ctx, p)
	if errors.Is(err, store.ErrLeaseHeld) {
		_ = l.read(ctx)
	}
	return err
}

func (l *latentStore) LeaseRenew(ctx context.Context, p store.LeaseAcquireParams) error {
	if err := l.txn(ctx); err != nil {
		return err
	}
	return l.Store.LeaseRenew(ctx, p)
}

func (l *latentStore) AttemptPut(ctx context.Context, executionID, unit, key string, out types.Outcome) error {
	if err := l.commit(ctx); err != nil {
		return err
	}
	return l.Store.AttemptPut(ctx, executionID, unit, key, out)
}

func (l *latentStore) AttemptGet(ctx context.Context, executionID, unit, key string) (*types.Outcome, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.AttemptGet(ctx, executionID, unit, key)
}

func (l *latentStore) LeaseGet(ctx context.Context, executionID, unit string) (string, time.Time, error) {
	if err := l.read(ctx); err != nil {
		return "", time.Time{}, err
	}
	return l.Store.LeaseGet(ctx, executionID, unit)
}

func (l *latentStore) IterationGet(ctx context.Context, executionID, loopKey string, index int) (types.Status, string, time.Time, error) {
	if err := l.read(ctx); err != nil {
		return "", "", time.Time{}, err
	}
	return l.Store.IterationGet(ctx, executionID, loopKey, index)
}

func (l *latentStore) LeaseRelease(ctx context.Context, executionID, unit, holder string) error {
	if err := l.commit(ctx); err != nil {
		return err
	}
	return l.Store.LeaseRelease(ctx, executionID, unit, holder)
}

func (l *latentStore) BatchPut(ctx context.Context, b types.Batch) (bool, error) {
	if err := l.commit(ctx); err != nil {
		return false, err
	}
	return l.Store.BatchPut(ctx, b)
}

func (l *latentStore) EventList(ctx context.Context, executionID string) ([]types.Event, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.EventList(ctx, executionID)
}

func (l *latentStore) OpsTotal(ctx context.Context, executionID string) (map[string]float64, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.OpsTotal(ctx, executionID)
}

func (l *latentStore) EventLog(ctx context.Context, executionID string) ([]types.Event, map[string]float64, error) {
	if err := l.read(ctx); err != nil {
		return nil, nil, err
	}
	return l.Store.EventLog(ctx, executionID)
}

func (l *latentStore) PlaybookPut(ctx context.Context, p store.PlaybookPutParams) (int, error) {
	if err := l.txn(ctx); err != nil {
		return 0, err
	}
	return l.Store.PlaybookPut(ctx, p)
}

func (l *latentStore) PlaybookGet(ctx context.Context, path string, version int) (*store.PlaybookVersion, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.PlaybookGet(ctx, path, version)
}

func (l *latentStore) PlaybookList(ctx context.Context) ([]store.PlaybookSummary, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.PlaybookList(ctx)
}

func (l *latentStore) DLQPut(ctx context.Context, e store.DLQEntry) error {
	if err := l.txn(ctx); err != nil {
		return err
	}
	return l.Store.DLQPut(ctx, e)
}

func (l *latentStore) DLQGet(ctx context.Context, id string) (*store.DLQEntry, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.DLQGet(ctx, id)
}

func (l *latentStore) DLQList(ctx context.Context, status store.DLQStatus, limit int) ([]store.DLQEntry, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.DLQList(ctx, status, limit)
}

func (l *latentStore) DLQQuery(ctx context.Context, f store.DLQFilter) ([]store.DLQEntry, error) {
	if err := l.read(ctx); err != nil {
		return nil, err
	}
	return l.Store.DLQQuery(ctx, f)
}

func (l *latentStore) DLQSetStatus(ctx context.Context, id string, from, to store.DLQStatus, note string) (*store.DLQEntry, error) {
	if err := l.txn(ctx); err != nil {
		return nil, err
	}
	return l.Store.DLQSetStatus(ctx, id, from, to, note)
}

// Publisher wraps p so that each publish first waits PubSubPush: the
// publisher waits what, in Google Cloud, passes between the publish and
// the push reaching the subscriber (an upper bound of the publisher's own
// wait, the publish ack; the subscriber sees the message no earlier than
// it would in the cloud).
func Publisher(p bus.Publisher, in *Injector) bus.Publisher { return &latentBus{p: p, in: in} }

type latentBus struct {
	p  bus.Publisher
	in *Injector
}

func (l *latentBus) PublishBatch(ctx context.Context, b types.Batch) error {
	if err := l.in.Wait(ctx, PubSubPush); err != nil {
		return err
	}
	return l.p.PublishBatch(ctx, b)
}

func (l *latentBus) PublishCommands(ctx context.Context, cmds ...types.Command) error {
	if err := l.in.Wait(ctx, PubSubPush); err != nil {
		return err
	}
	return l.p.PublishCommands(ctx, cmds...)
}

// Tasks wraps c so that a task due now (NotBefore not after now) is
// created after TasksDispatch (create → dispatch: the emulator dispatches
// at once, so the unit runs no earlier than in Google Cloud), a delayed
// task after TasksRPC (its dispatch is its schedule), and a delete after
// TasksRPC.
func Tasks(c tasks.Creator, in *Injector) tasks.Creator { return &latentTasks{c: c, in: in} }

type latentTasks struct {
	c  tasks.Creator
	in *Injector
}

func (l *latentTasks) TaskCreate(ctx context.Context, cmd types.Command, now time.Time) (bool, error) {
	op := TasksDispatch
	if cmd.NotBefore.After(now) {
		op = TasksRPC
	}
	if err := l.in.Wait(ctx, op); err != nil {
		return false, err
	}
	return l.c.TaskCreate(ctx, cmd, now)
}

func (l *latentTasks) TaskDelete(ctx context.Context, cmd types.Command, now time.Time) error {
	if err := l.in.Wait(ctx, TasksRPC); err != nil {
		return err
	}
	return l.c.TaskDelete(ctx, cmd, now)
}

func (l *latentTasks) TaskDeleteExecution(ctx context.Context, executionID string) (int, error) {
	if err := l.in.Wait(ctx, TasksRPC); err != nil {
		return 0, err
	}
	return l.c.TaskDeleteExecution(ctx, executionID)
}

// Backend wraps b so that reads (Get, Exists, Open, List) first wait
// GCSRead and writes (Put, a streamed object's Close, Delete) GCSWrite.
// A backend that names its bucket (results.BucketNamer) still does.
func Backend(b results.Backend, in *Injector) results.Backend {
	l := &latentBackend{Backend: b, in: in}
	if bn, ok := b.(results.BucketNamer); ok {
		return &namedLatentBackend{latentBackend: l, name: bn}
	}
	return l
}

type latentBackend struct {
	results.Backend
	in *Injector
}

type namedLatentBackend struct {
	*latentBackend
	name results.BucketNamer
}

// Bucket implements results.BucketNamer.
func (n *namedLatentBackend) Bucket() string { return n.name.Bucket() }

func (l *latentBackend) Put(ctx context.Context, key string, data []byte, contentType string) error {
	if err := l.in.Wait(ctx, GCSWrite); err != nil {
		return err
	}
	return l.Backend.Put(ctx, key, data, contentType)
}

func (l *latentBackend) Get(ctx context.Context, key string) ([]byte, error) {
	if err := l.in.Wait(ctx, GCSRead); err != nil {
		return nil, err
	}
	return l.Backend.Get(ctx, key)
}

func (l *latentBackend) Exists(ctx context.Context, key string) (bool, error) {
	if err := l.in.Wait(ctx, GCSRead); err != nil {
		return false, err
	}
	return l.Backend.Exists(ctx, key)
}

func (l *latentBackend) NewWriter(ctx context.Context, key string, attrs results.ObjectAttrs) results.ObjectWriter {
	return &latentWriter{ObjectWriter: l.Backend.NewWriter(ctx, key, attrs), ctx: ctx, in: l.in}
}

func (l *latentBackend) Open(ctx context.Context, key string, generation int64) (results.Object, error) {
	if err := l.in.Wait(ctx, GCSRead); err != nil {
		return nil, err
	}
	return l.Backend.Open(ctx, key, generation)
}

func (l *latentBackend) List(ctx context.Context, prefix string, fn func(results.ObjectInfo) error) error {
	if err := l.in.Wait(ctx, GCSRead); err != nil {
		return err
	}
	return l.Backend.List(ctx, prefix, fn)
}

func (l *latentBackend) Delete(ctx context.Context, key string) error {
	if err := l.in.Wait(ctx, GCSWrite); err != nil {
		return err
	}
	return l.Backend.Delete(ctx, key)
}

// latentWriter waits GCSWrite when the object is finished (Close); a wait
// cut short by the writer's ctx aborts the object.
type latentWriter struct {
	results.ObjectWriter
	ctx context.Context
	in  *Injector
}

func (w *latentWriter) Close() error {
	if err := w.in.Wait(w.ctx, GCSWrite); err != nil {
		w.Abort()
		return err
	}
	return w.ObjectWriter.Close()
}

// Tools returns reg with each tool wrapped so that its run first waits
// CloudRunRequest (the runner kinds: one request to the runner's Cloud
// Run service per attempt). A wait cut short by ctx leaves the tool to
// report ctx's end as it always does.
func Tools(reg tools.Registry, in *Injector) tools.Registry {
	out := make(tools.Registry, len(reg))
	for k, t := range reg {
		out[k] = latentTool{t: t, in: in}
	}
	return out
}

type latentTool struct {
	t  tools.Tool
	in *Injector
}

// Run implements tools.Tool.
func (l latentTool) Run(ctx context.Context, req tools.Request) types.Outcome {
	_ = l.in.Wait(ctx, CloudRunRequest)
	return l.t.Run(ctx, req)
}

// CompleteUnit waits what the driver does:
//
//   - a step unit: one Commit (the state, the outbox, the lease's delete
//     and the continued unit's lease, p.Next, in one request), after a
//     read of the unit's lease when it ran leased without its version and of the execution
//     when the caller gave no Base; an end that did not apply deletes the
//     lease alone (a commit after the call);
//   - an iteration: its record's Create (a commit), or a compare-and-set
//     of a leased record (a read and a commit); when it ended its lane,
//     the lane count (a read) and, for the loop's owner, the loop-done
//     claim (a read and a commit), the records' list (a read) and the
//     loop's checkpoint (a read and a commit), after the call.
func (l *latentStore) CompleteUnit(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	if p.Iteration == nil {
		if (p.Holder != "" && p.LeaseVersion == "") || p.Checkpoint == nil || p.Checkpoint.Base == nil || p.Checkpoint.Base.UpdateTime.IsZero() {
			if err := l.read(ctx); err != nil {
				return store.UnitCompletion{}, err
			}
		}
		if err := l.commit(ctx); err != nil {
			return store.UnitCompletion{}, err
		}
		res, err := l.Store.CompleteUnit(ctx, p)
		if err == nil && !res.Checkpoint.Applied && p.Holder != "" {
			_ = l.commit(ctx)
		}
		return res, err
	}
	wait := l.commit
	if p.Iteration.End.Holder != "" {
		wait = l.txn
	}
	if err := wait(ctx); err != nil {
		return store.UnitCompletion{}, err
	}
	res, err := l.Store.CompleteUnit(ctx, p)
	if err != nil || res.Canceled || res.Held || !p.Iteration.LaneDone {
		return res, err
	}
	_ = l.read(ctx) // LaneCount
	if res.LoopOwner {
		_ = l.txn(ctx)  // LoopDoneCreate
		_ = l.read(ctx) // IterationList
		_ = l.txn(ctx)  // the loop's checkpoint
	}
	return res, err
}
