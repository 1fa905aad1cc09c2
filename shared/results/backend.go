package results

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
)

// ErrNotFound is returned (wrapped) by Backend.Get, and by Store.Resolve,
// when no object exists at the key (code errs.NotFound: not retried).
// Branch with errors.Is or errs.Is.
var ErrNotFound = errs.Sentinel(errs.NotFound, "results: object not found")

// ErrExists is returned (wrapped) by an ObjectWriter's Close when the
// writer was made with ObjectAttrs.IfAbsent and an object is already at
// its key: nothing was replaced (code errs.AlreadyExists: not retried).
var ErrExists = errs.Sentinel(errs.AlreadyExists, "results: an object is already at the key")

// ErrQuota is returned (wrapped) by a write that would store an object
// over the result tier's quota of one task attempt (NOETL_RESULT_MAX_OBJECT_MB:
// the length range the write grant signs): nothing is stored (code
// errs.ResourceExhausted; the task fails with error kind "limit").
var ErrQuota = errs.Sentinel(errs.ResourceExhausted, "results: object over the result tier's quota")

// QuotaSetting is the setting of the result tier's quota of one task
// attempt, named in ErrQuota's messages.
const QuotaSetting = "NOETL_RESULT_MAX_OBJECT_MB"

// Backend is a dumb byte store for result objects (NoETL result storage RFC §5 "stored in
// object store"), keyed by the physical key (Locator.PhysicalKey).
//
// Contract (checked by resultstest.BackendSuite; all but List and Delete by
// resultstest.ObjectSuite, which package grant's signed-URL driver runs):
//   - Put writes data at key, overwriting any existing object (the tier's
//     idempotent-overwrite rule, NoETL result storage RFC §5); contentType is the MIME
//     type recorded with the object ("application/json",
//     "application/vnd.apache.arrow.file").
//   - Get returns the bytes last Put at key, or an error wrapping
//     ErrNotFound when there is none.
//   - Exists reports whether an object is at key (false, nil when not).
//   - NewWriter streams an object to key: nothing is visible at key until
//     Close returns nil, which replaces any object there; Abort (or a done
//     ctx) discards what was written. With attrs.IfAbsent the object is
//     created only if none is at key when Close commits it: otherwise
//     Close fails with an error wrapping ErrExists and the object there
//     is left as it was (of concurrent writers exactly one succeeds). The writer holds a bounded buffer
//     (the GCS driver: one upload chunk), never the whole object.
//   - Every object has a generation (Cloud Storage's: a number that
//     changes whenever the key is written; the memory driver counts up):
//     the writer's Generation after Close, the opened Object's, the
//     listed ObjectInfo's. A driver that keeps none reports 0.
//   - Open returns the object at key for reading (an error wrapping
//     ErrNotFound when there is none): its size, attributes and
//     generation, ranges read with ReadAt or streamed with NewReader.
//     With generation > 0 it opens exactly that generation of the object,
//     and an error wrapping ErrNotFound when the key holds another (the
//     object was replaced) or none. Every read of one opened object sees
//     the same bytes (the GCS driver pins the object's generation; a
//     replaced object fails the read).
//   - List calls fn for every object whose key starts with prefix, in
//     ascending key order, with its size, attributes and update time.
//   - Delete removes the object at key; a missing object is not an error.
//   - A done ctx makes the call fail with an error.
//   - Drivers never retry whole-object calls; callers (Pub/Sub and Cloud
//     Tasks redelivery) do. Errors are wrapped with the operation and key.
//   - Implementations are safe for concurrent use.
type Backend interface {
	Put(ctx context.Context, key string, data []byte, contentType string) error
	Get(ctx context.Context, key string) ([]byte, error)
	Exists(ctx context.Context, key string) (bool, error)
	NewWriter(ctx context.Context, key string, attrs ObjectAttrs) ObjectWriter
	Open(ctx context.Context, key string, generation int64) (Object, error)
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	Delete(ctx context.Context, key string) error
}

// ObjectAttrs are an object's attributes.
type ObjectAttrs struct {
	// ContentType is the object's MIME type.
	ContentType string
	// Metadata is the object's custom metadata (MetaExpires: its ttl).
	Metadata map[string]string
	// IfAbsent makes a write create the object only where none is
	// (Backend.NewWriter; Cloud Storage's ifGenerationMatch=0): the result
	// tier writes each object once (NoETL result storage RFC "Risks": two
	// writers of the same key). Never set on the attributes of a read.
	IfAbsent bool
}

// Object metadata keys.
const (
	// MetaExpires is the object metadata key holding, in RFC 3339, when
	// a result stored with output.store.ttl may be deleted (by GC, once
	// its execution no longer needs it).
	MetaExpires = "noetl-expires"
)

// ObjectWriter streams one object (Backend.NewWriter).
type ObjectWriter interface {
	io.Writer
	// Close finishes the object: it is visible at its key once Close
	// returns nil.
	Close() error
	// Generation is the generation Close created (0 before a successful
	// Close, or from a driver that keeps none).
	Generation() int64
	// Abort discards the object being written (nothing becomes visible).
	Abort()
}

// Object is an opened object (Backend.Open).
type Object interface {
	// ReadAt reads len(p) bytes at off (io.ReaderAt), with the context
	// Open was given.
	io.ReaderAt
	// Size is the object's size in bytes.
	Size() int64
	// Attrs are the object's attributes.
	Attrs() ObjectAttrs
	// Generation is the generation opened (0 from a driver that keeps
	// none).
	Generation() int64
	// NewReader streams the n bytes from off (n < 0: to the end).
	NewReader(ctx context.Context, off, n int64) (io.ReadCloser, error)
}

// ObjectInfo describes one listed object (Backend.List).
type ObjectInfo struct {
	Key        string
	Size       int64
	Attrs      ObjectAttrs
	Updated    time.Time
	Generation int64
}

// BucketNamer is implemented by backends that live in a named bucket (the
// GCS backend). Store.Offload records the name as "$ref.bucket".
type BucketNamer interface {
	Bucket() string
}

// NewMemory returns an in-process Backend (a mutex-guarded map) for tests
// and local tools. It copies data on Put and Get, honours ctx
// cancellation, and satisfies resultstest.BackendSuite. It is not
// BucketNamer (NewMemoryBucket is).
func NewMemory() Backend {
	return &memBackend{m: map[string]*memObject{}}
}

// NewMemoryBucket is NewMemory naming a bucket (BucketNamer), for tests
// of several cells.
func NewMemoryBucket(name string) Backend {
	return &namedMem{memBackend: memBackend{m: map[string]*memObject{}}, name: name}
}

type namedMem struct {
	memBackend
	name string
}

func (n *namedMem) Bucket() string { return n.name }

type memBackend struct {
	mu sync.RWMutex
	m  map[string]*memObject
}

// memObject is one immutable version of an object.
type memObject struct {
	data    []byte
	attrs   ObjectAttrs
	updated time.Time
	gen     int64
}

// memGeneration numbers the memory driver's object versions (across
// backends, as Cloud Storage's generations are unique).
var memGeneration atomic.Int64

func (mb *memBackend) Put(ctx context.Context, key string, data []byte, contentType string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("results: memory put %s: %w", key, err)
	}
	mb.set(key, &memObject{data: slices.Clone(data), attrs: ObjectAttrs{ContentType: contentType}, updated: time.Now()})
	return nil
}

func (mb *memBackend) set(key string, o *memObject) {
	if o.data == nil {
		o.data = []byte{}
	}
	o.gen = memGeneration.Add(1)
	mb.mu.Lock()
	mb.m[key] = o
	mb.mu.Unlock()
}

// create sets key to o only if nothing is there (false: something is).
func (mb *memBackend) create(key string, o *memObject) bool {
	if o.data == nil {
		o.data = []byte{}
	}
	o.gen = memGeneration.Add(1)
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if _, ok := mb.m[key]; ok {
		return false
	}
	mb.m[key] = o
	return true
}

func (mb *memBackend) get(key string) (*memObject, bool) {
	mb.mu.RLock()
	o, ok := mb.m[key]
	mb.mu.RUnlock()
	return o, ok
}

func (mb *memBackend) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("results: memory get %s: %w", key, err)
	}
	o, ok := mb.get(key)
	if !ok {
		return nil, fmt.Errorf("results: memory get %s: %w", key, ErrNotFound)
	}
	return slices.Clone(o.data), nil
}

func (mb *memBackend) Exists(ctx context.Context, key string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("results: memory exists %s: %w", key, err)
	}
	_, ok := mb.get(key)
	return ok, nil
}

func (mb *memBackend) NewWriter(ctx context.Context, key string, a ObjectAttrs) ObjectWriter {
	return &memWriter{ctx: ctx, mb: mb, key: key, ifAbsent: a.IfAbsent, attrs: ObjectAttrs{ContentType: a.ContentType, Metadata: maps.Clone(a.Metadata)}}
}

type memWriter struct {
	ctx      context.Context
	mb       *memBackend
	key      string
	attrs    ObjectAttrs
	ifAbsent bool
	buf      []byte
	done     bool
	gen      int64
}

func (w *memWriter) Generation() int64 { return w.gen }

func (w *memWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, errors.New("results: memory write: writer closed")
	}
	if err := w.ctx.Err(); err != nil {
		return 0, fmt.Errorf("results: memory write %s: %w", w.key, err)
	}
	if len(w.buf)+len(p) > cap(w.buf) { // grow by doubling: append's 1.25× growth of large slices copies a large object many times over
		nb := make([]byte, len(w.buf), max(2*cap(w.buf), len(w.buf)+len(p), 4096))
		copy(nb, w.buf)
		w.buf = nb
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *memWriter) Close() error {
	if w.done {
		return errors.New("results: memory write: writer closed")
	}
	w.done = true
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("results: memory write %s: %w", w.key, err)
	}
	o := &memObject{data: w.buf, attrs: w.attrs, updated: time.Now()}
	if w.ifAbsent {
		if !w.mb.create(w.key, o) {
			return fmt.Errorf("results: memory write %s: %w", w.key, ErrExists)
		}
		w.gen = o.gen
		return nil
	}
	w.mb.set(w.key, o)
	w.gen = o.gen
	return nil
}

func (w *memWriter) Abort() { w.done, w.buf = true, nil }

func (mb *memBackend) Open(ctx context.Context, key string, generation int64) (Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("results: memory open %s: %w", key, err)
	}
	o, ok := mb.get(key)
	if !ok {
		return nil, fmt.Errorf("results: memory open %s: %w", key, ErrNotFound)
	}
	if generation > 0 && o.gen != generation {
		return nil, fmt.Errorf("results: memory open %s#%d: %w (no such generation: the key holds %d)", key, generation, ErrNotFound, o.gen)
	}
	return &memOpened{o: o, ctx: ctx}, nil
}

// memOpened reads one version of an object (replacing the key later does
// not change what it reads).
type memOpened struct {
	o   *memObject
	ctx context.Context
}

func (m *memOpened) Size() int64 { return int64(len(m.o.data)) }

func (m *memOpened) Generation() int64 { return m.o.gen }

func (m *memOpened) Attrs() ObjectAttrs {
	return ObjectAttrs{ContentType: m.o.attrs.ContentType, Metadata: maps.Clone(m.o.attrs.Metadata)}
}

func (m *memOpened) ReadAt(p []byte, off int64) (int, error) {
	if err := m.ctx.Err(); err != nil {
		return 0, err
	}
	if off >= int64(len(m.o.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.o.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memOpened) NewReader(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	size := int64(len(m.o.data))
	if off > size {
		off = size
	}
	end := size
	if n >= 0 && off+n < size {
		end = off + n
	}
	return io.NopCloser(&ctxReader{ctx: ctx, r: bytes.NewReader(m.o.data[off:end])}), nil
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func (mb *memBackend) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("results: memory list %s: %w", prefix, err)
	}
	mb.mu.RLock()
	var keys []string
	objs := map[string]*memObject{}
	for k, o := range mb.m {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
			objs[k] = o
		}
	}
	mb.mu.RUnlock()
	slices.Sort(keys)
	for _, k := range keys {
		o := objs[k]
		if err := fn(ObjectInfo{Key: k, Size: int64(len(o.data)), Attrs: ObjectAttrs{ContentType: o.attrs.ContentType, Metadata: maps.Clone(o.attrs.Metadata)}, Updated: o.updated, Generation: o.gen}); err != nil {
			return err
		}
	}
	return nil
}

func (mb *memBackend) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("results: memory delete %s: %w", key, err)
	}
	mb.mu.Lock()
	delete(mb.m, key)
	mb.mu.Unlock()
	return nil
}
