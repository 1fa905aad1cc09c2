// Package launch starts executions: it merges the workload, writes the
// execution document and publishes playbook.execution.requested, after
// which route takes over. The api function (POST /executions) and the
// worker (a `kind: playbook` task starting a child execution) share it.
package launch

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// Params describes an execution to start.
type Params struct {
	Playbook *dsl.Playbook
	Source   []byte
	// Files are the script files sent with an inline playbook (checked
	// by CheckFiles), stored with the execution (store.Execution.Files).
	Files map[string]store.ExecutionFile
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
	// a playbook with a keychain is rejected) and holds the grants the
	// playbook's credential references are checked against.
	Credentials credentials.Store
	// Creator is the principal starting the execution (the api's caller;
	// a child's parent's creator; "subscription:<name>"):
	// engine.State.Creator.
	Creator string
	// CatalogPath is the catalog path or playbook file the playbook was
	// loaded from (catalog.Entry.Path), "" for an inline playbook:
	// engine.State.CatalogPath. With Creator it is the grantee of the
	// playbook's credentials (Grantee).
	CatalogPath string
	// Trace is the caller's W3C trace context (traceparent, tracestate,
	// baggage) recorded in the request event's payload under "trace"
	// (a subscription message's, NoETL's event meta.trace); nil = none.
	Trace map[string]string
	// RerunOf, RerunFrom and Reuse make the execution a rerun
	// (engine.State.RerunOf, RerunFrom, Reuse; shared/rerun): the
	// execution it reruns, where it starts, and the recorded step runs it
	// reuses (their stored results already copied to ExecutionID).
	RerunOf   string
	RerunFrom string
	Reuse     map[string]*engine.ReusedRun
	Now       time.Time
}

// Start creates the execution and publishes its request event in a batch
// marked for route (which applies the start). It returns the execution id.
// Starting an id that exists is not an error: the request event is
// published again (idempotent; route ignores repeats).
func Start(ctx context.Context, st store.Store, pub bus.Publisher, p Params) (string, error) {
	id := p.ExecutionID
	fresh := id == ""
	if fresh {
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
	// Credentials by grant (README "Security"): every credential the
	// playbook names, in its keychain or literally on a task, must be
	// granted to it before anything runs.
	g := credentials.Grantee{Path: p.CatalogPath, Creator: p.Creator}
	gctx := credentials.WithGrantee(ctx, g)
	if len(p.Playbook.Keychain) > 0 {
		if p.Credentials == nil {
			return "", &KeychainError{Err: errors.New("the playbook declares a keychain but no credential store is configured")}
		}
		if _, err := keychain(gctx, credentials.Guard(p.Credentials), p.Playbook, wl, id); err != nil {
			return "", &KeychainError{Err: err}
		}
	}
	if err := CheckGrants(gctx, p.Credentials, p.Playbook, g); err != nil {
		return "", err
	}
	var s *engine.State
	created := false
	for draw := 0; ; draw++ {
		s = engine.NewState(id, p.ParentID, p.Playbook, wl, now)
		s.Creator, s.CatalogPath = p.Creator, p.CatalogPath
		s.Resume = p.Resume
		s.ParentIter = p.ParentIter
		s.RerunOf, s.RerunFrom, s.Reuse = p.RerunOf, p.RerunFrom, p.Reuse
		// The execution's trace starts here (observe.go): its request
		// batch carries the root's traceparent and sampling decision.
		ctx = executionContext(ctx, s)
		err := st.ExecutionCreate(ctx, &store.Execution{State: s, Source: string(p.Source), Files: p.Files})
		if err == nil {
			created = true
			break
		}
		if !errors.Is(err, store.ErrExists) {
			return "", err
		}
		if !fresh {
			break // an explicit id that exists: start it again (idempotent)
		}
		if draw == 4 {
			return "", err
		}
		id = NewID() // a drawn id that another start took
	}
	if created {
		observeStart(ctx, s)
	}
	ev := types.NewEvent(types.EvExecutionRequested, id, "api", now)
	ev.EntityType, ev.EntityID, ev.ParentID = "playbook", s.Playbook, p.ParentID
	ev.Payload = history.Encode(history.ExecutionRequested{Playbook: s.Playbook, ParentID: p.ParentID, Trace: p.Trace, RerunOf: p.RerunOf, RerunFrom: p.RerunFrom})
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

// IDEpoch is the epoch of execution ids: 2020-01-01T00:00:00Z in Unix
// milliseconds (types.IDEpoch; types.IDTime reads an id's time back).
const IDEpoch = types.IDEpoch

// idGen is this process's snowflake state: a random node and the last
// millisecond and sequence drawn.
var idGen struct {
	sync.Mutex
	node, ms, seq uint64
}

func init() {
	var b [2]byte
	_, _ = rand.Read(b[:])
	idGen.node = uint64(binary.BigEndian.Uint16(b[:])) & 0x3ff
}

// NewID returns a new execution id: a 64-bit snowflake in decimal, as
// NoETL's execution ids are (NoETL observability spec: "484377543601029219"), so that a
// playbook can store {{ execution_id }} in a BIGINT column. Layout (63
// bits, always positive): milliseconds since IDEpoch << 22 | a 10-bit
// node drawn at random when the process starts << 12 | a 12-bit sequence
// within the millisecond (the 4097th id of a millisecond waits for the
// next one). Ids of one process are unique and increasing; ids sort by
// creation time (numerically; as strings while they have the same number
// of digits, 18 until mid-2027, then 19). Two processes draw the same id
// only with the same node in the same millisecond; Start then draws again
// (the execution document is created with a precondition).
func NewID() string {
	idGen.Lock()
	defer idGen.Unlock()
	for {
		ms := uint64(max(time.Now().UnixMilli()-IDEpoch, 0)) & (1<<41 - 1)
		switch {
		case ms > idGen.ms:
			idGen.ms, idGen.seq = ms, 0
		case idGen.seq < 0xfff:
			idGen.seq++ // same millisecond (or the clock stepped back)
		default:
			time.Sleep(100 * time.Microsecond)
			continue
		}
		return strconv.FormatUint(idGen.ms<<22|idGen.node<<12|idGen.seq, 10)
	}
}

// DerivedID returns the execution id derived from parts (a child
// execution's id from its parent's task, so a redelivered task finds the
// same child): the first 63 bits of SHA-256 of the parts joined by 0x1f,
// in decimal, like NewID's ids (a BIGINT).
func DerivedID(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x1f")))
	return strconv.FormatUint(binary.BigEndian.Uint64(h[:8])>>1, 10)
}

// DeepMerge merges over into base (maps recursively; other values of over
// replace) and returns base (NoETL DSL spec "Document": workload defaults
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
