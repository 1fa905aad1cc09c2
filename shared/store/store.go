// Package store persists the control plane's state (README "Architecture"
// "Storage"): the execution document and its transactional outbox, loop
// plans, iteration records and lane markers, unit leases, the events
// projection (one document per event batch), the catalog and the DLQ.
// Values are stored as JSON strings inside the documents (Firestore cannot
// hold arrays of arrays, and JSON keeps ints distinct from floats); a few
// scalar fields are duplicated beside them for queries.
//
// Method names are entity-first (ExecutionGet, IterationEnd), parameters of
// multi-field calls are *Params structs, and errors carry a code
// (shared/errs: NotFound, AlreadyExists, FailedPrecondition, ...) that
// callers branch on (riverqueue/river, google/go-cloud). A store never
// retries; its callers (Pub/Sub and Cloud Tasks redelivery) do.
//
// This package is the contract only: the Store interface, its types,
// *Params and errors, and the pure helpers every driver shares (input
// checks, DLQ entry normalisation, workload sealing). It links no cloud
// client (shared/planes checks it). The drivers live beside it, as
// go-cloud's blob/driver stands beside gcsblob and memblob and River's
// riverdriver beside riverpgxv5: firestorestore (Cloud Firestore, the
// production backend) and memstore (in process, for unit tests and
// in-process runs). storetest is the conformance suite every driver and
// every wrapper of a Store passes.
//
// The documents under an execution (batches, leases, iterations, lanes,
// loop_done markers) are independent of the execution document, as
// Firestore subcollections are: they can be written before it exists (an
// event batch projected before the execution is visible) and writing them
// never creates it.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wire"
)

// Sentinels (errs.Sentinel: each carries its code, and errors.Is matches
// the store's own errors only — a NotFound from another backend inside a
// store call, e.g. a missing credential while a checkpoint applies, is not
// ErrNotFound).
var (
	// ErrNotFound: the document does not exist (code NotFound).
	ErrNotFound = errs.Sentinel(errs.NotFound, "store: not found")
	// ErrExists: a Create found the document already there (code
	// AlreadyExists).
	ErrExists = errs.Sentinel(errs.AlreadyExists, "store: already exists")
	// ErrLeaseHeld: another holder owns an unexpired lease on the unit
	// (FailedPrecondition: retry later).
	ErrLeaseHeld = &errs.Error{Code: errs.FailedPrecondition, Msg: "store: lease held by another holder"}
	// ErrLeaseLost: the caller's lease expired and was taken over.
	ErrLeaseLost = &errs.Error{Code: errs.FailedPrecondition, Msg: "store: lease lost"}
	// ErrParked: the unit is parked in the DLQ (its iteration record is
	// held by a DLQ entry, ParkHolder): only that entry's replay may take
	// it (IterationBeginParams.Unpark); any other delivery is dropped.
	ErrParked = &errs.Error{Code: errs.FailedPrecondition, Msg: "store: unit parked in the DLQ"}
)

// ParkPrefix starts the holder of an iteration record parked in the DLQ
// (ParkHolder): a lease that never expires, held by the DLQ entry.
const ParkPrefix = "dlq:"

// ParkHolder is the holder of an iteration record parked under the DLQ
// entry dlqID.
func ParkHolder(dlqID string) string { return ParkPrefix + dlqID }

// ParkedBy returns the DLQ entry id of a parked record's holder, and
// whether holder is a park at all.
func ParkedBy(holder string) (string, bool) {
	return strings.CutPrefix(holder, ParkPrefix)
}

// DLQResolution is the change of a DLQ entry when the unit it parks ends
// (committed with that end: Execution.Resolve, IterationEndParams.Resolve).
type DLQResolution struct {
	// ID is the entry's id.
	ID string
	// Status is its new status (DLQDone, DLQReplayed, DLQDiscarded).
	Status DLQStatus
	// Note replaces the entry's note; empty keeps it.
	Note string
}

// ExecutionFile is wire.ExecutionFile (the shape POST /executions carries; shared/wire keeps it light for the CLI).
type ExecutionFile = wire.ExecutionFile

// Execution is the execution document.
type Execution struct {
	State *engine.State
	// Source is the playbook YAML the execution runs (frozen at start).
	Source string
	// Files are the files beside a playbook submitted from a file that its
	// tasks read (script: files), keyed by the path as the playbook writes
	// it, frozen at start (written by ExecutionCreate only; README "Running
	// any playbook": scripts beside the playbook). nil for most executions.
	Files map[string]ExecutionFile
	// UpdateTime is the document's version as read (Firestore's update
	// time; zero for a record not read from the store). A checkpoint based
	// on this read commits only if the document has not changed since.
	UpdateTime time.Time
	// File and Resolve are DLQ writes a CheckpointFunc asks for, committed
	// in the same commit as the state (never stored with the execution; a
	// CheckpointFunc sets both on every call): File files a unit's entry
	// (as given, status pending: the caller merged any earlier copy; the
	// DLQ parks of step units live in State.Parked, so filing one and
	// parking it is one commit); Resolve changes the status (and the note,
	// when not empty) of entries whose parked unit ended with this
	// transition. An entry to resolve that no longer exists (expired) is
	// written bare, with its status and note only.
	File    *DLQEntry
	Resolve []DLQResolution
}

// CheckpointFunc computes a transition of rec (it may mutate rec.State).
// It returns the transition's output, or nil when nothing is to be written
// (the event does not apply: a duplicate, a stale run). It runs inside a
// transaction and may run more than once (contention retries), so it must
// be a deterministic function of rec.
type CheckpointFunc func(rec *Execution) (*engine.Output, error)

// CheckpointParams names one checkpoint: the execution, the outbox id
// (derived from the applied event, so a replay finds it), and the
// transition. Base, when set, is the execution as the caller read it
// (ExecutionGet): the transition is computed on it and committed with one
// write that succeeds only if the document is unchanged since (an
// optimistic checkpoint: no transaction, no second read); on a conflict
// the store falls back to a transaction that reads the document again.
// Base may be mutated. A Base with a zero UpdateTime (not read from the
// store) is ignored. When Apply returns nil on Base the store reports
// "not applied" without checking that Base is still current, so Apply
// must be monotonic: an event that does not apply to a state does not
// apply to any later one (the engine's duplicates, stale runs and ended
// executions are).
type CheckpointParams struct {
	ExecutionID string
	OutboxID    string
	Apply       CheckpointFunc
	Base        *Execution
}

// Checkpoint is the result of ExecutionCheckpoint.
type Checkpoint struct {
	// Applied reports that the transition was written.
	Applied bool
	// Output is the transition's output (nil when not applied).
	Output *engine.Output
	// State is the state as written (or as read, when not applied).
	State *engine.State
	// UpdateTime is the execution document's update time as the commit
	// wrote it (Applied only; zero when the driver does not know it): a
	// Base of State with it is current until the document's next write,
	// so the caller that goes on with the execution (a continued unit)
	// checkpoints on it without reading the document again.
	UpdateTime time.Time
}

// LeaseAcquireParams names a unit lease (executions/{id}/units/{unit}).
type LeaseAcquireParams struct {
	ExecutionID string
	Unit        string // types.Command.UnitKey()
	// Holder identifies one delivery of the unit (unique per delivery, so
	// two concurrent deliveries of the same Cloud Task are two holders).
	Holder string
	TTL    time.Duration
	Now    time.Time
}

// IterationBeginParams takes the lease of a side-effecting iteration on
// its record document (executions/{id}/loops/{key}/iterations/{index}).
type IterationBeginParams struct {
	ExecutionID string
	LoopKey     string
	Index       int
	Holder      string
	TTL         time.Duration
	Now         time.Time
	// Unpark is the DLQ entry whose park the caller may take over (the
	// replay of that entry: types.Command.ReplayOf); taking it marks the
	// entry replayed in the same commit. A record parked under another
	// entry is ErrParked.
	Unpark string
	// Grouped says the loop's ends may have been committed in group
	// record documents (IterationCompletion.Group: its plan batches
	// iterations, engine.LoopPlan.BatchOf > 1): the groups are looked up
	// first (one query), and a record of Index found there is returned as
	// ended with no lease taken.
	Grouped bool
}

// IterationParkParams files a loop iteration in the DLQ and parks it
// (IterationPark).
type IterationParkParams struct {
	ExecutionID string
	LoopKey     string
	Index       int
	// Holder is the filer's own lease holder ("" when it holds none): its
	// lease may be taken over, as may an expired or released one.
	Holder string
	// Entry is the DLQ entry (its MessageID names the park); stored
	// pending.
	Entry DLQEntry
	Now   time.Time
	// Grouped says the loop's ends may have been committed in group
	// record documents, as IterationBeginParams.Grouped: a record of Index
	// found there (and none of its own) is returned as ended, and nothing
	// is filed.
	Grouped bool
}

// IterationEndParams records an iteration's end.
type IterationEndParams struct {
	ExecutionID string
	LoopKey     string
	// Record is the iteration's final record; its Status must be ok,
	// error, or canceled — an iteration cut short because its step run or
	// execution ended without it (IterationEnd refuses any other with
	// InvalidArgument). Only ok and error count for the loop
	// (IterationList, IterationCount).
	Record engine.IterationRecord
	// Holder is the lease holder from IterationBegin, or "" for an
	// iteration that ran without a lease (no side effects), or for the end
	// of an iteration nobody runs (a cancellation): the record is then
	// created if absent, and a running record is ended only when its lease
	// is released or expired at Now (else it is left to its holder).
	Holder string
	Now    time.Time
	// Resolve, when the record is parked in the DLQ (ParkHolder), is the
	// change of that entry committed with the end: the iteration ended
	// through a delivery that ran before it was parked (a completion after
	// the filing sees it), or its entry is being discarded. It is called
	// with the entry's id; nil resolves the entry DLQDone. A parked record
	// is ended whoever Holder is.
	Resolve func(dlqID string) DLQResolution
}

// Resolution is the change of the parked entry dlqID that ending the
// record asks for (p.Resolve's answer, DLQDone when p.Resolve is nil),
// with its ID set: what every driver commits with the end.
func (p IterationEndParams) Resolution(dlqID string) DLQResolution {
	if p.Resolve == nil {
		return DLQResolution{ID: dlqID, Status: DLQDone, Note: "the iteration completed through a delivery that ran before it was parked"}
	}
	r := p.Resolve(dlqID)
	r.ID = dlqID
	return r
}

// IterationLease is an iteration record that has not completed
// (IterationRunning): running — leased, released (Holder "") or parked
// (ParkHolder) — or canceled (with the record's Clock).
type IterationLease struct {
	Index   int
	Status  types.Status
	Holder  string
	Expires time.Time
	// Clock is a canceled record's clock (its loop.iteration.canceled).
	Clock int64
}

// ExecutionSummary is one entry of ExecutionList.
type ExecutionSummary struct {
	ExecutionID string `json:"execution_id"`
	ParentID    string `json:"parent_id,omitempty"`
	Playbook    string `json:"playbook"`
	// Creator is the principal that started the execution
	// (engine.State.Creator; "" when none was recorded).
	Creator string `json:"creator,omitempty"`
	// RerunOf is, for a rerun, the execution it reruns
	// (engine.State.RerunOf; "" otherwise).
	RerunOf   string       `json:"rerun_of,omitempty"`
	Status    types.Status `json:"status"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
}

// ExecutionListParams filters ExecutionList; zero fields match anything.
type ExecutionListParams struct {
	Status   types.Status
	Playbook string
	// ParentID lists the children of an execution (kind: playbook tasks).
	ParentID string
	// Creator lists the executions a principal started (the api forces
	// it to the caller for callers below the operator role).
	Creator string
	// Limit bounds the result (default 50), newest first.
	Limit int
	// BeforeCreated and BeforeID page the list: when BeforeCreated is
	// set, only executions after (older than, in the list's order) the
	// one created then with id BeforeID are listed — the last summary of
	// the previous page.
	BeforeCreated time.Time
	BeforeID      string
	// CreatedFrom and CreatedTo bound the creation time (the state's
	// created_at): from inclusive, to exclusive; zero is unbounded.
	CreatedFrom, CreatedTo time.Time
}

// Matches reports whether an execution's summary fields pass p's filters
// (all but the page cursor and the limit): what the in-memory driver and
// the conformance suite compare with.
func (p ExecutionListParams) Matches(e ExecutionSummary) bool {
	return (p.Status == "" || e.Status == p.Status) && (p.Playbook == "" || e.Playbook == p.Playbook) &&
		(p.ParentID == "" || e.ParentID == p.ParentID) && (p.Creator == "" || e.Creator == p.Creator) &&
		(p.CreatedFrom.IsZero() || !e.CreatedAt.Before(p.CreatedFrom)) && (p.CreatedTo.IsZero() || e.CreatedAt.Before(p.CreatedTo))
}

// Store is the persistence contract of the control plane.
type Store interface {
	// UnitCompleter ends a unit of work in one store call (store_unit.go).
	UnitCompleter
	// ExecutionCreate writes a new execution document; ErrExists if present,
	// InvalidArgument without a state or an execution id.
	ExecutionCreate(ctx context.Context, rec *Execution) error
	// ExecutionGet reads one execution; ErrNotFound if absent.
	ExecutionGet(ctx context.Context, id string) (*Execution, error)
	// ExecutionWatch calls fn with the execution as stored when the watch
	// starts, then again after every change of its document, until fn
	// returns true (ExecutionWatch then returns nil) or ctx ends (it
	// returns ctx's error). ErrNotFound when the execution does not exist
	// (or is deleted while watched). Each call of fn costs one document
	// read (Firestore: a snapshot listener; Memory: a change
	// notification); a quiet execution costs one read however long the
	// watch lasts. The worker watches the execution of a long task
	// attempt, so that a stop reaches running work (interrupt.go).
	ExecutionWatch(ctx context.Context, id string, fn func(*Execution) bool) error
	// ExecutionList lists executions, newest first by the state's
	// created_at (ExecutionSummary.CreatedAt), ties by descending id.
	ExecutionList(ctx context.Context, p ExecutionListParams) ([]ExecutionSummary, error)
	// ExecutionCount counts the executions that pass p's filters by
	// status (the cursor and the limit are ignored; a status without any
	// is absent from the map). Firestore counts with aggregation queries,
	// one per status (billed one read per 1,000 index entries each).
	ExecutionCount(ctx context.Context, p ExecutionListParams) (map[types.Status]int, error)
	// ExecutionCheckpoint runs p.Apply over the execution document and,
	// when it returns an output, writes atomically the new state, the
	// outbox document p.OutboxID holding the output (unless it is empty)
	// and its new loop plans (README "Architecture": the transition is the pure
	// engine applied under one transaction; the outbox is flushed
	// afterwards). Outbox documents are not deleted by the engine: they
	// are the durable record of each transition, replayed idempotently,
	// and expire with the execution (TTL field expire_at). ErrNotFound
	// when the execution does not exist.
	ExecutionCheckpoint(ctx context.Context, p CheckpointParams) (Checkpoint, error)
	// OutboxGet reads a transition's outbox; ErrNotFound once deleted.
	OutboxGet(ctx context.Context, executionID, id string) (*engine.Output, error)
	// LoopGet reads a loop plan; ErrNotFound if absent.
	LoopGet(ctx context.Context, executionID, key string) (*engine.LoopPlan, error)
	// IterationBegin takes the lease of a side-effecting iteration. It
	// returns the existing record (and no error) when the iteration has
	// already ended, ErrLeaseHeld when another holder has an unexpired
	// lease, ErrParked when it is parked in the DLQ under another entry
	// than p.Unpark, nil record and no error when the caller now holds it.
	IterationBegin(ctx context.Context, p IterationBeginParams) (*engine.IterationRecord, error)
	// IterationEnd records an iteration's end. It returns first=true when
	// this call recorded it, false when a record already existed (a
	// duplicate run, or a run without a lease finding the record leased);
	// ErrLeaseLost when p.Holder no longer holds the lease; InvalidArgument
	// when the record's status is not ok or error. A record parked in the
	// DLQ is ended and its entry resolved in the same commit (p.Resolve).
	IterationEnd(ctx context.Context, p IterationEndParams) (first bool, err error)
	// IterationPark files a loop iteration in the DLQ and parks it, in one
	// commit: the entry p.Entry is written and the iteration's record held
	// by it (ParkHolder) without expiry, so that only the entry's replay
	// runs the iteration again. It returns the record (and writes nothing)
	// when the iteration has already ended; ErrLeaseHeld when another
	// holder than p.Holder has an unexpired lease (it runs the unit, its
	// watchdog covers it); ErrParked when it is parked under another
	// entry. Parking it again under the same entry writes nothing.
	IterationPark(ctx context.Context, p IterationParkParams) (*engine.IterationRecord, error)
	// IterationRunning lists a loop run's iteration records that have not
	// completed — running (leased, released or parked) or canceled —
	// ordered by index.
	IterationRunning(ctx context.Context, executionID, loopKey string) ([]IterationLease, error)
	// IterationRelease gives up the holder's lease of an iteration that
	// has not ended (it was handed off: a delayed retry, a child wait), so
	// its continuation can take it at once.
	IterationRelease(ctx context.Context, executionID, loopKey string, index int, holder string) error
	// IterationList returns a loop run's ended iterations ordered by
	// index, one per index: the records of their own documents and of
	// group documents (IterationCompletion.Group); an index recorded in
	// both (two deliveries of one batch) is given once, its own
	// document's record first, else the group document first by id.
	IterationList(ctx context.Context, executionID, loopKey string) ([]engine.IterationRecord, error)
	// IterationCount counts a loop run's ended iterations, one per index
	// as IterationList gives them.
	IterationCount(ctx context.Context, executionID, loopKey string) (int, error)
	// LaneDone marks a lane of a loop run done (idempotent).
	LaneDone(ctx context.Context, executionID, loopKey string, lane int) error
	// LaneCount counts a loop run's done lanes.
	LaneCount(ctx context.Context, executionID, loopKey string) (int, error)
	// LoopDoneCreate claims the completion of a loop run exactly once for
	// owner (the unit key of the iteration that found the loop complete:
	// the same for every delivery of that iteration). It returns the
	// owner on record: owner itself when this call created the claim or
	// when owner made it earlier (a redelivery after a crash must finish
	// the job), another owner's name otherwise (whose task completes it).
	LoopDoneCreate(ctx context.Context, executionID, loopKey, owner string) (winner string, err error)
	// LeaseAcquire takes the unit's lease; ErrLeaseHeld if another holder
	// has an unexpired one (an expired one is taken over).
	LeaseAcquire(ctx context.Context, p LeaseAcquireParams) error
	// LeaseRenew extends the holder's lease to now+ttl; ErrLeaseLost when
	// another holder took it over or it is gone.
	LeaseRenew(ctx context.Context, p LeaseAcquireParams) error
	// AttemptPut records a side-effecting task attempt's outcome under its
	// coordinates within the unit (the side-effect barrier, NoETL result storage RFC §4.4):
	// the first record wins.
	AttemptPut(ctx context.Context, executionID, unit, key string, out types.Outcome) error
	// AttemptGet reads a recorded attempt outcome; ErrNotFound.
	AttemptGet(ctx context.Context, executionID, unit, key string) (*types.Outcome, error)
	// LeaseGet reads a unit's lease: its holder and expiry; ErrNotFound
	// when the unit holds none (never leased, released).
	LeaseGet(ctx context.Context, executionID, unit string) (holder string, expires time.Time, err error)
	// IterationGet reads an iteration's record document: its status
	// (running while leased, ok|error once ended), holder and expiry.
	// Without a document of its own, an index recorded in a group
	// document (IterationCompletion.Group) gives that record's status
	// (one more query); ErrNotFound when neither exists.
	IterationGet(ctx context.Context, executionID, loopKey string, index int) (status types.Status, holder string, expires time.Time, err error)
	// LeaseRelease drops the holder's lease (a lease taken over by another
	// holder is left alone).
	LeaseRelease(ctx context.Context, executionID, unit, holder string) error
	// BatchPut projects one event batch (executions/{id}/batches/{batch_id});
	// created=false when the batch was already projected (the first copy
	// wins).
	BatchPut(ctx context.Context, b types.Batch) (created bool, err error)
	// EventList returns an execution's projected events in causal order with
	// Seq and PrevEventID filled (types.EventsInOrder).
	EventList(ctx context.Context, executionID string) ([]types.Event, error)
	// OpsTotal sums the metered cloud operations of an execution's batches
	// (operation name → count).
	OpsTotal(ctx context.Context, executionID string) (map[string]float64, error)
	// EventLog is EventList and OpsTotal from one read of the execution's
	// batches (the console shows both).
	EventLog(ctx context.Context, executionID string) ([]types.Event, map[string]float64, error)
	// PlaybookPut registers a playbook version in the catalog.
	PlaybookPut(ctx context.Context, p PlaybookPutParams) (int, error)
	// PlaybookGet reads a catalog version (0 = latest); ErrNotFound.
	PlaybookGet(ctx context.Context, path string, version int) (*PlaybookVersion, error)
	// PlaybookList lists the catalog.
	PlaybookList(ctx context.Context) ([]PlaybookSummary, error)
	// SubscriptionPut registers (creates or replaces) a subscription
	// resource and returns the record (generation counted, created_at
	// kept); InvalidArgument without name, source, Pub/Sub subscription
	// or playbook, or with a delivery other than push or pull.
	SubscriptionPut(ctx context.Context, p SubscriptionPutParams) (*Subscription, error)
	// SubscriptionGet reads a registration; ErrNotFound.
	SubscriptionGet(ctx context.Context, name string) (*Subscription, error)
	// SubscriptionList lists the registrations sorted by name.
	SubscriptionList(ctx context.Context) ([]Subscription, error)
	// SubscriptionDelete removes a registration; ErrNotFound.
	SubscriptionDelete(ctx context.Context, name string) error
	// DLQPut records a dead-lettered message (idempotent by message id:
	// a repeated put keeps first_seen and status, takes the larger attempt
	// count).
	DLQPut(ctx context.Context, e DLQEntry) error
	// DLQGet reads one entry; ErrNotFound.
	DLQGet(ctx context.Context, id string) (*DLQEntry, error)
	// DLQList lists entries, most recently seen first, filtered by status
	// ("" = any); limit ≤ 0 means 100.
	DLQList(ctx context.Context, status DLQStatus, limit int) ([]DLQEntry, error)
	// DLQQuery lists the entries every set field of f matches, most
	// recently seen first (GET /dlq?execution_id=&tool_kind=&status=).
	DLQQuery(ctx context.Context, f DLQFilter) ([]DLQEntry, error)
	// DLQSetStatus moves an entry from status from to status to (with a
	// note, e.g. a discard reason), atomically; FailedPrecondition when the
	// entry is not in from (it was replayed or discarded already).
	DLQSetStatus(ctx context.Context, id string, from, to DLQStatus, note string) (*DLQEntry, error)
	// Close releases the client.
	Close() error
}

// DLQEntry is one dead-lettered message (Firestore dlq/{message_id}; the
// schema of NoETL observability spec §8.6).
type DLQEntry struct {
	MessageID   string `json:"message_id" firestore:"message_id"`
	ExecutionID string `json:"execution_id" firestore:"execution_id"`
	StepID      string `json:"step_id" firestore:"step_id"`
	LoopIndex   *int   `json:"loop_index,omitempty" firestore:"loop_index"`
	LoopKey     string `json:"loop_key,omitempty" firestore:"loop_key"`
	ToolKind    string `json:"tool_kind,omitempty" firestore:"tool_kind"`
	// SinkID names the sink of an entry whose task writes ("<kind>:<task>",
	// NoETL observability spec §8.6 sink_id; "" for other tasks).
	SinkID    string `json:"sink_id,omitempty" firestore:"sink_id"`
	Attempts  int    `json:"attempts" firestore:"attempts"`
	LastError string `json:"last_error" firestore:"last_error"`
	// LastStack is where the last attempt failed (NoETL observability spec
	// §8.6 last_stack): the pipeline's position (step, run, iteration,
	// task, attempt, jumps), the error's kind and, for a task failure, the
	// tool's own trace (the task's logs, a python traceback), redacted.
	LastStack string `json:"last_stack,omitempty" firestore:"last_stack"`
	// Spec is a task failure's rendered task configuration (JSON,
	// redacted): what `noetl dlq replay --patch spec.<key>=…` corrects.
	Spec string `json:"spec,omitempty" firestore:"spec"`
	// FirstSeen and LastSeen are when the message was first and last
	// filed (UTC; RFC 3339 in JSON, a timestamp in Firestore). Lists order
	// by LastSeen, newest first.
	FirstSeen time.Time `json:"first_seen" firestore:"first_seen"`
	LastSeen  time.Time `json:"last_seen" firestore:"last_seen"`
	// Payload is the redacted message body (JSON text).
	Payload        string    `json:"payload" firestore:"payload"`
	ContextExcerpt string    `json:"context_excerpt" firestore:"context_excerpt"`
	Status         DLQStatus `json:"status" firestore:"status"`
	// Source is the function that filed the entry (execute, route,
	// materialize, dispatch); Kind says what Unit holds: "unit" (a
	// command, replayed as a Cloud Task) or "message" (a Pub/Sub message,
	// replayed on Topic with Attributes).
	Source string  `json:"source,omitempty" firestore:"source"`
	Kind   DLQKind `json:"kind,omitempty" firestore:"kind"`
	Topic  string  `json:"topic,omitempty" firestore:"topic"`
	// Unit is what replay re-enqueues (the command or message body, JSON);
	// never shown by the API (Payload is its redacted form).
	Unit string `json:"-" firestore:"unit"`
	// UnitEncoding is "base64" when Unit holds base64 of bytes that are
	// not valid UTF-8 (a binary Pub/Sub message: Firestore strings must
	// be UTF-8), else "". Set it through SetUnit; read with UnitBytes.
	UnitEncoding string            `json:"-" firestore:"unit_encoding,omitempty"`
	Attributes   map[string]string `json:"-" firestore:"attributes"`
	// Note is the discard reason or the replay's patches.
	Note     string     `json:"note,omitempty" firestore:"note"`
	ExpireAt *time.Time `json:"-" firestore:"expire_at,omitempty"`
}

// DLQFilter selects DLQ entries: every non-empty field must match.
type DLQFilter struct {
	Status      DLQStatus
	ExecutionID string
	ToolKind    string
	// Limit bounds the entries returned (≤ 0: 100).
	Limit int
}

// Matches reports whether e passes f.
func (f DLQFilter) Matches(e DLQEntry) bool {
	return (f.Status == "" || e.Status == f.Status) && (f.ExecutionID == "" || e.ExecutionID == f.ExecutionID) &&
		(f.ToolKind == "" || e.ToolKind == f.ToolKind)
}

// DLQStatus is where a DLQ entry stands (NoETL observability spec §8.6):
// pending until an operator replays or discards it, done when its unit
// ended without it.
type DLQStatus string

// DLQKind says what a DLQ entry's Unit holds.
type DLQKind string

// DLQ entry kinds.
const (
	// DLQUnit: a command (a unit of work), replayed as a Cloud Task.
	DLQUnit DLQKind = "unit"
	// DLQMessage: a Pub/Sub message, replayed on the entry's Topic with
	// its Attributes.
	DLQMessage DLQKind = "message"
)

// DLQStatuses are the statuses an entry can have, in their order of
// listing in the CLI and the api's errors.
var DLQStatuses = []DLQStatus{DLQPending, DLQReplayed, DLQDiscarded, DLQDone}

// Valid reports whether s is one of DLQStatuses.
func (s DLQStatus) Valid() bool {
	for _, v := range DLQStatuses {
		if s == v {
			return true
		}
	}
	return false
}

// DLQ statuses.
const (
	DLQPending   DLQStatus = "pending"
	DLQReplayed  DLQStatus = "replayed"
	DLQDiscarded DLQStatus = "discarded"
	// DLQDone: the unit ended without this entry — it completed through
	// another delivery, or its step run or execution ended otherwise (a
	// cancellation, a timeout): there is nothing to replay.
	DLQDone DLQStatus = "done"
)

// SetUnit stores b as what replay re-enqueues: as text when b is valid
// UTF-8, else base64 with UnitEncoding "base64".
func (e *DLQEntry) SetUnit(b []byte) {
	if utf8.Valid(b) {
		e.Unit, e.UnitEncoding = string(b), ""
		return
	}
	e.Unit, e.UnitEncoding = base64.StdEncoding.EncodeToString(b), "base64"
}

// UnitBytes returns the bytes replay re-enqueues (Unit, decoded when
// UnitEncoding is "base64"). Errors: InvalidArgument for an encoding it
// does not know or bad base64.
func (e DLQEntry) UnitBytes() ([]byte, error) {
	switch e.UnitEncoding {
	case "":
		return []byte(e.Unit), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(e.Unit)
		if err != nil {
			return nil, errs.Wrap(errs.InvalidArgument, err, "store: dlq entry "+e.MessageID+": bad base64 unit")
		}
		return b, nil
	}
	return nil, errs.New(errs.InvalidArgument, "store: dlq entry %s: unknown unit encoding %q", e.MessageID, e.UnitEncoding)
}

// DLQID returns the document id under which the entry of message id is
// stored and looked up: id itself when Firestore accepts it as a document
// id (valid UTF-8, no "/", not "." or "..", not __name__, at most 512
// bytes), else "dlq-" and the SHA-256 of id in hex. A poison message's
// id is whatever its sender chose; every driver files it under DLQID so
// that no id can make DLQPut fail (a function would then retry the
// message forever).
func DLQID(id string) string {
	if id != "" && utf8.ValidString(id) && !strings.Contains(id, "/") && id != "." && id != ".." &&
		!(strings.HasPrefix(id, "__") && strings.HasSuffix(id, "__")) && len(id) <= 512 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "dlq-" + hex.EncodeToString(sum[:])
}

// Normalize makes e storable by every driver: MessageID becomes DLQID
// of itself and every text field valid UTF-8 (invalid bytes become
// U+FFFD; Unit goes through SetUnit). Drivers call it before they store
// an entry.
func (e *DLQEntry) Normalize() {
	e.MessageID = DLQID(e.MessageID)
	for _, f := range []*string{&e.ExecutionID, &e.StepID, &e.LoopKey, &e.ToolKind, &e.LastError, &e.Payload, &e.ContextExcerpt, &e.Source, &e.Topic, &e.Note} {
		*f = strings.ToValidUTF8(*f, "\uFFFD")
	}
	e.Kind = DLQKind(strings.ToValidUTF8(string(e.Kind), "\uFFFD"))
	if e.UnitEncoding == "" && !utf8.ValidString(e.Unit) {
		e.SetUnit([]byte(e.Unit))
	}
	if len(e.Attributes) > 0 {
		attrs := make(map[string]string, len(e.Attributes))
		for k, v := range e.Attributes {
			attrs[strings.ToValidUTF8(k, "\uFFFD")] = strings.ToValidUTF8(v, "\uFFFD")
		}
		e.Attributes = attrs
	}
}
