package results

// Objects written once (NoETL result storage RFC "Risks": two writers of
// the same key). Every object of the tier is created with
// ObjectAttrs.IfAbsent, so an object never changes after its reference
// was made. Two writers of the same coordinates (two deliveries of one
// unit: Cloud Tasks may deliver a task twice, and a unit of read-only
// tasks is not leased) cannot replace each other's object; the second
// one either finds the same bytes (a deterministic result: its reference
// names the object there), stores its own value at a fresh @version
// (Offload: the value is in memory), or adopts the object there (a
// streamed table, which cannot be written again: Sink.End).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// mintVersion returns a fresh @version (NoETL result storage RFC §4: the
// grammar's [A-Za-z0-9._-]{1,64}): "w" and 16 hex digits.
func mintVersion() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "w" + hex.EncodeToString(b[:])
}

// writeOnce writes one object of coordinates c with write, creating it
// only where none is. When another writer's object is already at the key
// and holds other bytes, c gets a fresh version and write runs again
// (once: a versioned key is new). Errors: write's (the object is
// aborted), the backend's.
func (s *Store) writeOnce(ctx context.Context, c types.ResultCoords, format, contentType string, opts OffloadOptions, write func(*objectOut) (int64, error)) (map[string]any, error) {
	for {
		o, err := s.create(ctx, c, format, contentType, opts)
		if err != nil {
			return nil, err
		}
		rows, err := write(o)
		if err != nil {
			o.abort()
			return nil, fmt.Errorf("results: offload %s: %w", o.uri, err)
		}
		ref, err := o.finish(ctx, rows)
		if !errors.Is(err, ErrExists) || c.Version != "" {
			return ref, err
		}
		if ref, _, err := s.sameBytes(ctx, o, rows); err == nil && ref != nil {
			return ref, nil
		}
		c.Version = mintVersion()
		observeRewrite(ctx, telemetry.ConflictVersioned)
	}
}

// there is the object another writer left at o's key.
type there struct {
	size   int64
	gen    int64     // its generation (0: the backend keeps none)
	digest string    // hex SHA-256
	crc    string    // CRC32CKey's encoding
	expire time.Time // its MetaExpires (zero: none)
}

// existing reads the whole object at o's key, hashing it. Errors: the
// backend's (ErrNotFound when it went away).
func (s *Store) existing(ctx context.Context, o *objectOut) (there, error) {
	obj, err := s.backendFor(o.cell.Name).Open(ctx, o.key, 0)
	if err != nil {
		return there{}, err
	}
	t := there{size: obj.Size(), gen: obj.Generation()}
	if e, ok := obj.Attrs().Metadata[MetaExpires]; ok {
		t.expire, _ = time.Parse(time.RFC3339, e)
	}
	r, err := obj.NewReader(ctx, 0, -1)
	if err != nil {
		return there{}, err
	}
	defer r.Close()
	d := newDigests()
	buf := getChunk()
	defer putChunk(buf)
	if _, err := io.CopyBuffer(d, r, (*buf)[:cap(*buf)]); err != nil {
		return there{}, err
	}
	t.digest, t.crc = d.sha256Hex(), d.crc32c()
	return t, nil
}

// sameBytes reads the object at o's key once and returns its reference
// when it holds exactly what o wrote (same size and SHA-256), with that
// object's ttl; otherwise a nil reference and what it read of the object
// (for adoptTable). Errors: the backend's (ErrNotFound when it went
// away).
func (s *Store) sameBytes(ctx context.Context, o *objectOut, rows int64) (map[string]any, there, error) {
	t, err := s.existing(ctx, o)
	if err != nil || t.size != o.n || t.digest != o.digest() {
		return nil, t, err
	}
	observeRewrite(ctx, telemetry.ConflictSame)
	return o.ref(rows, t.size, t.digest, t.crc, t.gen, t.expire), t, nil
}

// adoptTable returns the reference and extracted block of the table
// another writer left at o's key (a Sink's object refused with
// ErrExists; t is what sameBytes read of it): the reference the second
// writer would have made had it been first. Errors: ErrLost (wrapped)
// when the object there is not a readable table; the backend's.
func (s *Store) adoptTable(ctx context.Context, o *objectOut, t there) (map[string]any, map[string]any, error) {
	ref := o.ref(0, t.size, t.digest, t.crc, t.gen, t.expire)
	pr, err := s.ParseRef(ref)
	if err != nil {
		return nil, nil, err
	}
	info, err := s.tableInfo(ctx, pr)
	if err != nil {
		return nil, nil, err
	}
	schema := info.schema
	m, err := metaOf(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrLost, o.uri, err)
	}
	ref["rows"] = info.rows
	observeRewrite(ctx, telemetry.ConflictAdopted)
	return ref, tableExtracted(info.rows, schema, m.at, m.rowsAt, m.env), nil
}
