package results

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/noetl/gcpengine/shared/types"
)

// AttemptObject is the result-tier object that keeps the result of one
// task attempt behind the side-effect barrier (docs "Security", the
// barrier's records): the kind that commits the attempt's side effect
// with a record of it (postgres, in one transaction) stores the result
// here before the commit, and the record holds only its digest and a MAC.
// A re-run of a committed attempt reads the result back from here; a
// run whose commit failed leaves an object the next run overwrites. The
// object belongs to the attempt's execution (its coordinates name it),
// so only that execution's grants reach it.
type AttemptObject interface {
	// Put stores data as the object (replacing what is there). Errors
	// are the tier's; an object over the tier's quota wraps ErrQuota.
	Put(ctx context.Context, data []byte) error
	// Get returns the object's bytes; an error wrapping ErrNotFound when
	// there is none.
	Get(ctx context.Context) ([]byte, error)
}

type attemptKey struct{}

// WithAttemptObject returns ctx carrying the attempt's object (the
// runner: one over the request's grants; tests: a memory one).
func WithAttemptObject(ctx context.Context, o AttemptObject) context.Context {
	return context.WithValue(ctx, attemptKey{}, o)
}

// AttemptObjectFrom returns the object ctx carries, or nil.
func AttemptObjectFrom(ctx context.Context) AttemptObject {
	o, _ := ctx.Value(attemptKey{}).(AttemptObject)
	return o
}

// AttemptCoords are the coordinates of a barriered attempt's object: the
// attempt's step and task (step "<step>.<task>", frame and row 0) at a
// version derived from its barrier key (unique to its unit, task
// position, attempt and page), so every barriered attempt has an object
// of its own in its execution.
func AttemptCoords(executionID, step, task string, attempt int, barrier string) types.ResultCoords {
	sum := sha256.Sum256([]byte(barrier))
	return types.ResultCoords{ExecutionID: executionID, Step: step + "." + task, Attempt: attempt, Version: "barrier-" + hex.EncodeToString(sum[:12])}
}

// AttemptDestination returns the physical key and bucket of a barriered
// attempt's object (AttemptCoords) in s, as JSON (FormatJSON).
func (s *Store) AttemptDestination(c types.ResultCoords) (key, bucket string) {
	c = s.Defaulted(c)
	cell, _ := s.Place(c)
	return s.PhysicalKey(c, FormatJSON), s.BucketOf(cell.Name)
}

// MemoryAttempt is an AttemptObject in memory (tests).
type MemoryAttempt struct {
	mu   sync.Mutex
	data []byte
	puts int
}

// Put implements AttemptObject.
func (m *MemoryAttempt) Put(_ context.Context, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data, m.puts = append([]byte(nil), data...), m.puts+1
	return nil
}

// Get implements AttemptObject.
func (m *MemoryAttempt) Get(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		return nil, ErrNotFound
	}
	return append([]byte(nil), m.data...), nil
}

// Set replaces the object's bytes (a test tampering with it; nil: gone).
func (m *MemoryAttempt) Set(data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data = data
}

// Puts returns how many times Put stored the object.
func (m *MemoryAttempt) Puts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.puts
}
