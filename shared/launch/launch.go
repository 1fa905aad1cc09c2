// Package launch starts executions: it merges the workload, writes the
// execution document and publishes playbook.execution.requested, after
// which route takes over. The api function (POST /executions) and the
// worker (a `kind: playbook` task starting a child execution) share it.
package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// Publisher is what launching needs from the bus.
type Publisher interface {
	PublishBatch(ctx context.Context, b types.Batch) error
}

// Params describes an execution to start.
type Params struct {
	Playbook *dsl.Playbook
	Source   []byte
	// Workload is deep-merged over the playbook's workload.
	Workload map[string]any
	// ParentID links a child execution to its parent.
	ParentID string
	// ExecutionID is the id to use ("" = a new one). A child's id is
	// derived from its parent task so a redelivered task finds it.
	ExecutionID string
	// Resume is the parent's unit of work to publish when this execution
	// finishes (child executions only).
	Resume *types.Command
	// ParentIter is the parent's iteration state (iter.parent in the child).
	ParentIter map[string]any
	// Credentials resolves the playbook's keychain before the run (nil:
	// a playbook with a keychain is rejected).
	Credentials credentials.Store
	Now         time.Time
}

// Start creates the execution and publishes its request event in a batch
// marked for route (which applies the start). It returns the execution id.
// Starting an id that exists is not an error: the request event is
// published again (idempotent; route ignores repeats).
func Start(ctx context.Context, st store.Store, pub Publisher, p Params) (string, error) {
	id := p.ExecutionID
	if id == "" {
		id = NewID()
	}
	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	merged := DeepMerge(jsonx.Clone(p.Playbook.Workload), p.Workload)
	wl, _ := merged.(map[string]any)
	if wl == nil {
		wl = map[string]any{}
	}
	if len(p.Playbook.Keychain) > 0 {
		if p.Credentials == nil {
			return "", &KeychainError{Err: errors.New("the playbook declares a keychain but no credential store is configured")}
		}
		if _, err := Keychain(ctx, p.Credentials, p.Playbook, wl, id); err != nil {
			return "", &KeychainError{Err: err}
		}
	}
	s := engine.NewState(id, p.ParentID, p.Playbook, wl, now)
	s.Resume = p.Resume
	s.ParentIter = p.ParentIter
	// The execution's trace starts here (observe.go): its request batch
	// carries the root's traceparent and sampling decision.
	ctx = executionContext(ctx, s)
	err := st.ExecutionCreate(ctx, &store.Execution{State: s, Source: string(p.Source)})
	if err != nil && !errors.Is(err, store.ErrExists) {
		return "", err
	}
	if err == nil {
		observeStart(ctx, s)
	}
	ev := types.NewEvent(types.EvExecutionRequested, id, "api", now)
	ev.EntityType, ev.EntityID, ev.ParentID = "playbook", s.Playbook, p.ParentID
	ev.Payload = map[string]any{"playbook": s.Playbook, "parent_id": p.ParentID}
	ev.Clock = types.HLC(0, now)
	b := types.Batch{ID: types.DeriveID(id, "requested"), ExecutionID: id, Source: "api", Route: true, Events: []types.Event{ev}}
	if err := pub.PublishBatch(ctx, b); err != nil {
		return "", err
	}
	return id, nil
}

// KeychainError rejects an execution whose keychain does not resolve (a
// missing or invalid credential); nothing was created.
type KeychainError struct{ Err error }

// Error implements error.
func (e *KeychainError) Error() string { return "keychain: " + e.Err.Error() }

// Unwrap returns the resolution error (errors.Is credentials.ErrNotFound).
func (e *KeychainError) Unwrap() error { return e.Err }

// NewID returns a new execution id (time-ordered prefix + random suffix).
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

// DeepMerge merges over into base (maps recursively; other values of over
// replace) and returns base (DSL.md "Document": workload defaults
// deep-merged with the request payload).
func DeepMerge(base any, over any) any {
	bm, ok1 := base.(map[string]any)
	om, ok2 := over.(map[string]any)
	if !ok1 || !ok2 {
		if over == nil {
			return base
		}
		return over
	}
	for k, v := range om {
		if cur, ok := bm[k]; ok {
			bm[k] = DeepMerge(cur, v)
		} else {
			bm[k] = v
		}
	}
	return bm
}
