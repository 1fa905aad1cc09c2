// Package store persists execution state in Firestore (ARCHITECTURE.md
// "Storage"): the execution document, loop plans, per-iteration documents,
// unit leases and the events projection. Values are stored as JSON strings
// inside the documents (Firestore cannot hold arrays of arrays, and JSON
// keeps ints distinct from floats); a few scalar fields are duplicated
// beside them for queries.
//
// Method names are entity-first (ExecutionGet, IterationPut), parameters
// of multi-field calls are *Params structs, and callers branch on the
// sentinel errors, never on messages (riverqueue/river, google/go-cloud).
// The store never retries; its callers (Pub/Sub and Cloud Tasks redelivery)
// do.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/types"
)

// Sentinel errors.
var (
	// ErrNotFound: the document does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: a Create found the document already there.
	ErrExists = errors.New("store: already exists")
	// ErrLeaseHeld: another holder owns an unexpired lease on the unit.
	ErrLeaseHeld = errors.New("store: lease held by another holder")
)

// Execution is the execution document.
type Execution struct {
	State *engine.State
	// Source is the playbook YAML the execution runs (frozen at start).
	Source string
}

// ExecutionUpdateFunc mutates rec inside a transaction; returning false
// leaves the document unwritten.
type ExecutionUpdateFunc func(rec *Execution) (write bool, err error)

// Iteration is one loop iteration's final record
// (executions/{id}/loops/{step.run}/iterations/{index}).
type Iteration struct {
	Index  int    `json:"index"`
	Status string `json:"status"` // ok | error
	Result any    `json:"result,omitempty"`
	Error  any    `json:"error,omitempty"`
}

// LeaseAcquireParams names a unit lease (executions/{id}/leases/{unit}).
type LeaseAcquireParams struct {
	ExecutionID string
	Unit        string // types.Command.UnitKey()
	Holder      string // the Cloud Task name of the attempt taking the lease
	TTL         time.Duration
	Now         time.Time
}

// LeaseState tells what LeaseAcquire found.
type LeaseState int

const (
	// LeaseAcquired: the caller now holds the lease.
	LeaseAcquired LeaseState = iota
	// LeaseCompleted: the unit already finished; the caller must not run it.
	LeaseCompleted
)

// Store is the persistence contract of the control plane. Firestore is the
// production backend; storetest holds the conformance suite.
type Store interface {
	// ExecutionCreate writes a new execution document; ErrExists if present.
	ExecutionCreate(ctx context.Context, rec *Execution) error
	// ExecutionGet reads one execution; ErrNotFound if absent.
	ExecutionGet(ctx context.Context, id string) (*Execution, error)
	// ExecutionUpdate runs fn in a transaction over the document.
	ExecutionUpdate(ctx context.Context, id string, fn ExecutionUpdateFunc) error
	// LoopPut stores a loop plan (idempotent: an existing plan is kept).
	LoopPut(ctx context.Context, executionID string, plan engine.LoopPlan) error
	// LoopGet reads a loop plan; ErrNotFound if absent.
	LoopGet(ctx context.Context, executionID, key string) (*engine.LoopPlan, error)
	// IterationPut records an iteration's outcome (idempotent overwrite).
	IterationPut(ctx context.Context, executionID, loopKey string, it Iteration) error
	// IterationCount counts recorded iterations of a loop run.
	IterationCount(ctx context.Context, executionID, loopKey string) (int, error)
	// IterationList returns a loop run's iterations ordered by index.
	IterationList(ctx context.Context, executionID, loopKey string) ([]Iteration, error)
	// LoopDoneCreate marks a loop run complete exactly once; ErrExists
	// when it was already marked.
	LoopDoneCreate(ctx context.Context, executionID, loopKey string) error
	// LeaseAcquire takes the unit's lease; ErrLeaseHeld if another holder
	// has an unexpired one.
	LeaseAcquire(ctx context.Context, p LeaseAcquireParams) (LeaseState, error)
	// LeaseRelease drops the holder's lease; completed marks the unit done
	// so later deliveries are refused with LeaseCompleted.
	LeaseRelease(ctx context.Context, executionID, unit, holder string, completed bool) error
	// EventPut projects one event (idempotent by event id: the first write
	// wins, a re-emitted event keeps its original projection).
	EventPut(ctx context.Context, ev types.Event) error
	// EventAppend projects ev as the next link of its execution's event
	// chain, assigning Seq and PrevEventID; dup reports an event already
	// projected (nothing written).
	EventAppend(ctx context.Context, ev types.Event) (seq int64, dup bool, err error)
	// EventList returns an execution's projected events in seq order.
	EventList(ctx context.Context, executionID string) ([]types.Event, error)
	// PlaybookPut registers a playbook version in the catalog.
	PlaybookPut(ctx context.Context, p PlaybookPutParams) (int, error)
	// PlaybookGet reads a catalog version (0 = latest); ErrNotFound.
	PlaybookGet(ctx context.Context, path string, version int) (*PlaybookVersion, error)
	// PlaybookList lists the catalog.
	PlaybookList(ctx context.Context) ([]PlaybookSummary, error)
	// DLQPut records a dead-lettered message (idempotent by message id).
	DLQPut(ctx context.Context, e DLQEntry) error
	// Close releases the client.
	Close() error
}

// DLQEntry is one dead-lettered message (Firestore dlq/{message_id}; the
// schema of seed 000 §8.6).
type DLQEntry struct {
	MessageID   string `json:"message_id" firestore:"message_id"`
	ExecutionID string `json:"execution_id" firestore:"execution_id"`
	StepID      string `json:"step_id" firestore:"step_id"`
	LoopIndex   *int   `json:"loop_index,omitempty" firestore:"loop_index"`
	LoopKey     string `json:"loop_key,omitempty" firestore:"loop_key"`
	ToolKind    string `json:"tool_kind,omitempty" firestore:"tool_kind"`
	Attempts    int    `json:"attempts" firestore:"attempts"`
	LastError   string `json:"last_error" firestore:"last_error"`
	FirstSeen   string `json:"first_seen" firestore:"first_seen"`
	LastSeen    string `json:"last_seen" firestore:"last_seen"`
	// Payload is the redacted message body (JSON text).
	Payload        string `json:"payload" firestore:"payload"`
	ContextExcerpt string `json:"context_excerpt" firestore:"context_excerpt"`
	Status         string `json:"status" firestore:"status"` // pending|replayed|discarded
}
