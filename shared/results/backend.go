package results

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/shared/errs"
)

// ErrNotFound is returned (wrapped) by Backend.Get, and by Store.Resolve,
// when no object exists at the key (code errs.NotFound: not retried).
// Branch with errors.Is or errs.Is.
var ErrNotFound = errs.Sentinel(errs.NotFound, "results: object not found")

// Backend is a dumb byte store for result objects (seed 004 §5 "stored in
// object store"), keyed by the physical key (Locator.PhysicalKey).
//
// Contract (checked by resultstest.BackendSuite):
//   - Put writes data at key, overwriting any existing object (the tier's
//     idempotent-overwrite rule, seed 004 §5); contentType is the MIME
//     type recorded with the object ("application/json",
//     "application/vnd.apache.arrow.file").
//   - Get returns the bytes last Put at key, or an error wrapping
//     ErrNotFound when there is none.
//   - Exists reports whether an object is at key (false, nil when not).
//   - A done ctx makes the call fail with an error.
//   - Drivers never retry; callers (Pub/Sub and Cloud Tasks redelivery) do.
//     Errors are wrapped with the operation and key.
//   - Implementations are safe for concurrent use.
type Backend interface {
	Put(ctx context.Context, key string, data []byte, contentType string) error
	Get(ctx context.Context, key string) ([]byte, error)
	Exists(ctx context.Context, key string) (bool, error)
}

// BucketNamer is implemented by backends that live in a named bucket (the
// GCS backend). Store.Offload records the name as "$ref.bucket" and
// Store.Resolve refuses a reference naming another bucket.
type BucketNamer interface {
	Bucket() string
}

// NewGCS returns a Backend storing objects in bucket through client (ARCHITECTURE.md
// "Storage"; with STORAGE_EMULATOR_HOST set, or a fake-gcs-server client,
// it talks to the emulator). Every call runs with the client's retry policy
// replaced by storage.RetryNever. Put uploads in a single request with a
// CRC32C checksum, so a corrupted upload fails instead of storing bad bytes.
// The bucket must exist; NewGCS does no I/O.
func NewGCS(client *storage.Client, bucket string) Backend {
	return &gcsBackend{b: client.Bucket(bucket).Retryer(storage.WithPolicy(storage.RetryNever)), name: bucket}
}

type gcsBackend struct {
	b    *storage.BucketHandle
	name string
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Bucket implements BucketNamer.
func (g *gcsBackend) Bucket() string { return g.name }

// Put implements Backend.
func (g *gcsBackend) Put(ctx context.Context, key string, data []byte, contentType string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("results: gcs put gs://%s/%s: %w", g.name, key, err)
	}
	w := g.b.Object(key).NewWriter(ctx)
	w.ContentType = contentType
	w.ChunkSize = 0 // one request: no resumable session to retry
	w.CRC32C = crc32.Checksum(data, castagnoli)
	w.SendCRC32C = true
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return fmt.Errorf("results: gcs put gs://%s/%s: %w", g.name, key, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("results: gcs put gs://%s/%s: %w", g.name, key, err)
	}
	return nil
}

// Get implements Backend.
func (g *gcsBackend) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("results: gcs get gs://%s/%s: %w", g.name, key, err)
	}
	r, err := g.b.Object(key).NewReader(ctx)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) {
			return nil, fmt.Errorf("results: gcs get gs://%s/%s: %w", g.name, key, ErrNotFound)
		}
		return nil, fmt.Errorf("results: gcs get gs://%s/%s: %w", g.name, key, err)
	}
	defer r.Close()
	n := r.Attrs.Size
	if n < 0 {
		n = 0
	}
	buf := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("results: gcs get gs://%s/%s: %w", g.name, key, err)
	}
	return buf.Bytes(), nil
}

// Exists implements Backend.
func (g *gcsBackend) Exists(ctx context.Context, key string) (bool, error) {
	if err := ctx.Err(); err != nil { // not every transport checks it
		return false, fmt.Errorf("results: gcs exists gs://%s/%s: %w", g.name, key, err)
	}
	_, err := g.b.Object(key).Attrs(ctx)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, storage.ErrObjectNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("results: gcs exists gs://%s/%s: %w", g.name, key, err)
}

// NewMemory returns an in-process Backend (a mutex-guarded map) for tests
// and local tools. It copies data on Put and Get, honours ctx cancellation,
// and satisfies resultstest.BackendSuite. It is not BucketNamer.
func NewMemory() Backend {
	return &memBackend{m: map[string][]byte{}}
}

type memBackend struct {
	mu sync.RWMutex
	m  map[string][]byte
}

func (mb *memBackend) Put(ctx context.Context, key string, data []byte, _ string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("results: memory put %s: %w", key, err)
	}
	cp := make([]byte, len(data))
	copy(cp, data)
	mb.mu.Lock()
	mb.m[key] = cp
	mb.mu.Unlock()
	return nil
}

func (mb *memBackend) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("results: memory get %s: %w", key, err)
	}
	mb.mu.RLock()
	data, ok := mb.m[key]
	mb.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("results: memory get %s: %w", key, ErrNotFound)
	}
	cp := make([]byte, len(data))
	copy(cp, data)
	return cp, nil
}

func (mb *memBackend) Exists(ctx context.Context, key string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("results: memory exists %s: %w", key, err)
	}
	mb.mu.RLock()
	_, ok := mb.m[key]
	mb.mu.RUnlock()
	return ok, nil
}
