// Package gcsresults is the Google Cloud Storage driver of results.Backend
// (the contract in shared/results, in the manner of go-cloud's gcsblob
// beside blob/driver): objects in one bucket through a storage client, the
// emulator's when STORAGE_EMULATOR_HOST is set or the client is a
// fake-gcs-server's. It runs resultstest.BackendSuite like the in-memory
// backend of shared/results (results.NewMemory).
package gcsresults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net/http"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/results"
)

// UploadChunk is the chunk size of the GCS driver's resumable uploads
// (8 MiB: the most a streamed write buffers).
const UploadChunk = 8 << 20

// NewGCS returns a results.Backend storing objects in bucket through client (README "Architecture"
// "Storage"; with STORAGE_EMULATOR_HOST set, or a fake-gcs-server client,
// it talks to the emulator). Whole-object calls run with the client's
// retry policy replaced by storage.RetryNever. Put uploads in a single
// request with a CRC32C checksum, so a corrupted upload fails instead of
// storing bad bytes. NewWriter uploads through a resumable session in
// UploadChunk chunks (a chunk that fails is sent again, up to 5 times,
// within the session); reads of an opened object are pinned to its
// generation. The bucket must exist; NewGCS does no I/O.
func NewGCS(client *storage.Client, bucket string) results.Backend {
	return &gcsBackend{
		b:      client.Bucket(bucket).Retryer(storage.WithPolicy(storage.RetryNever)),
		chunks: client.Bucket(bucket).Retryer(storage.WithPolicy(storage.RetryAlways), storage.WithMaxAttempts(5)),
		name:   bucket,
	}
}

type gcsBackend struct {
	b, chunks *storage.BucketHandle
	name      string
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Bucket implements BucketNamer.
func (g *gcsBackend) Bucket() string { return g.name }

// Put implements results.Backend.
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

// Get implements results.Backend.
func (g *gcsBackend) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("results: gcs get gs://%s/%s: %w", g.name, key, err)
	}
	r, err := g.b.Object(key).NewReader(ctx)
	if err != nil {
		return nil, g.wrap("get", key, err)
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

func (g *gcsBackend) wrap(op, key string, err error) error {
	if errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("results: gcs %s gs://%s/%s: %w", op, g.name, key, results.ErrNotFound)
	}
	return fmt.Errorf("results: gcs %s gs://%s/%s: %w", op, g.name, key, err)
}

// Exists implements results.Backend.
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

// NewWriter implements results.Backend.
func (g *gcsBackend) NewWriter(ctx context.Context, key string, a results.ObjectAttrs) results.ObjectWriter {
	wctx, cancel := context.WithCancel(ctx)
	obj := g.chunks.Object(key)
	if a.IfAbsent {
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	}
	w := obj.NewWriter(wctx)
	w.ContentType = a.ContentType
	w.Metadata = a.Metadata
	w.ChunkSize = UploadChunk
	return &gcsWriter{w: w, cancel: cancel, crc: crc32.New(castagnoli), name: "gs://" + g.name + "/" + key}
}

type gcsWriter struct {
	w      *storage.Writer
	cancel context.CancelFunc
	crc    interface {
		io.Writer
		Sum32() uint32
	}
	name string
	err  error
	gen  int64
}

// Generation implements results.ObjectWriter.
func (w *gcsWriter) Generation() int64 { return w.gen }

func (w *gcsWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.crc.Write(p)
	n, err := w.w.Write(p)
	if err != nil {
		if isPrecondition(err) { // the session refused at its start
			err = results.ErrExists
		}
		w.err = fmt.Errorf("results: gcs write %s: %w", w.name, err)
	}
	return n, w.err
}

// isPrecondition reports whether err is Cloud Storage's 412 (a failed
// precondition: here, ifGenerationMatch=0 on an existing object).
func isPrecondition(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed
}

// Close sends the last chunk with the object's CRC32C: GCS refuses an
// object whose bytes do not match it.
func (w *gcsWriter) Close() error {
	defer w.cancel()
	if w.err != nil {
		return w.err
	}
	w.w.CRC32C = w.crc.Sum32()
	w.w.SendCRC32C = true
	if err := w.w.Close(); err != nil {
		if isPrecondition(err) {
			return fmt.Errorf("results: gcs write %s: %w", w.name, results.ErrExists)
		}
		return fmt.Errorf("results: gcs write %s: %w", w.name, err)
	}
	if a := w.w.Attrs(); a != nil {
		w.gen = a.Generation
	}
	return nil
}

// Abort cancels the upload (the resumable session is abandoned; the
// bucket's AbortIncompleteMultipartUpload rule and the session's own
// expiry clean it up).
func (w *gcsWriter) Abort() {
	w.cancel()
	_ = w.w.Close()
}

// Open implements results.Backend.
func (g *gcsBackend) Open(ctx context.Context, key string, generation int64) (results.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("results: gcs open gs://%s/%s: %w", g.name, key, err)
	}
	oh := g.b.Object(key)
	if generation > 0 {
		oh = oh.Generation(generation)
	}
	a, err := oh.Attrs(ctx)
	if err != nil {
		if generation > 0 && errors.Is(err, storage.ErrObjectNotExist) {
			return nil, fmt.Errorf("results: gcs open gs://%s/%s#%d: %w (no such generation: replaced or deleted)", g.name, key, generation, results.ErrNotFound)
		}
		return nil, g.wrap("open", key, err)
	}
	return &gcsObject{ctx: ctx, oh: oh.Generation(a.Generation), attrs: a, name: "gs://" + g.name + "/" + key}, nil
}

type gcsObject struct {
	ctx   context.Context
	oh    *storage.ObjectHandle
	attrs *storage.ObjectAttrs
	name  string
}

func (o *gcsObject) Size() int64 { return o.attrs.Size }

func (o *gcsObject) Generation() int64 { return o.attrs.Generation }

func (o *gcsObject) Attrs() results.ObjectAttrs {
	return results.ObjectAttrs{ContentType: o.attrs.ContentType, Metadata: maps.Clone(o.attrs.Metadata)}
}

func (o *gcsObject) NewReader(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	r, err := o.oh.NewRangeReader(ctx, off, n)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) {
			return nil, fmt.Errorf("results: gcs read %s: %w (replaced or deleted while read)", o.name, results.ErrNotFound)
		}
		return nil, fmt.Errorf("results: gcs read %s: %w", o.name, err)
	}
	return r, nil
}

func (o *gcsObject) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.attrs.Size {
		return 0, io.EOF
	}
	n := int64(len(p))
	short := false
	if off+n > o.attrs.Size {
		n, short = o.attrs.Size-off, true
	}
	r, err := o.NewReader(o.ctx, off, n)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	got, err := io.ReadFull(r, p[:n])
	if err != nil {
		return got, fmt.Errorf("results: gcs read %s: %w", o.name, err)
	}
	if short {
		return got, io.EOF
	}
	return got, nil
}

// List implements results.Backend.
func (g *gcsBackend) List(ctx context.Context, prefix string, fn func(results.ObjectInfo) error) error {
	it := g.b.Objects(ctx, &storage.Query{Prefix: prefix})
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("results: gcs list gs://%s/%s: %w", g.name, prefix, err)
		}
		if err := fn(results.ObjectInfo{Key: a.Name, Size: a.Size, Attrs: results.ObjectAttrs{ContentType: a.ContentType, Metadata: a.Metadata}, Updated: a.Updated, Generation: a.Generation}); err != nil {
			return err
		}
	}
}

// Delete implements results.Backend.
func (g *gcsBackend) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("results: gcs delete gs://%s/%s: %w", g.name, key, err)
	}
	err := g.b.Object(key).Delete(ctx)
	if err == nil || errors.Is(err, storage.ErrObjectNotExist) {
		return nil
	}
	return fmt.Errorf("results: gcs delete gs://%s/%s: %w", g.name, key, err)
}
