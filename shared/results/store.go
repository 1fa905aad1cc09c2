package results

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Reference map keys (NoETL result storage RFC §5 "carried inline: the bounded extracted
// block").
const (
	// RefKey marks a result reference: a map with this key stands for the
	// stored value (see Store.Offload for the full shape).
	RefKey = types.ResultRefKey
	// ExtractedKey holds the reference's extracted block (see Extract).
	ExtractedKey = "extracted"
	// DigestKey is the reference field holding the hex SHA-256 of the
	// stored object's bytes (Store.Offload records it; reads check it
	// when the Store's ReadCheck is ReadCheckSHA256, and reads of a
	// repaired object always: digest.go).
	DigestKey = "sha256"
	// GenerationKey is the reference field holding the generation of the
	// object written (Backend: Cloud Storage's object generation): reads
	// open exactly that generation, so an object replaced after the
	// reference was made is never read (openRef).
	GenerationKey = "generation"
)

// MetaRepairs is the object metadata key of a repaired object (`noetl
// results repair`, shared/operations/gc): the generation, in decimal, of the
// lost object it stands in for. A read of a reference whose generation is
// gone accepts the object at its key only when it names that generation
// here, and then checks the reference's sha256 whatever Store.ReadCheck
// says (openRef). Only the control plane writes it: a runner's write
// grant signs the metadata it may set.
const MetaRepairs = "noetl-repairs"

// DefaultInlineMax is the inline budget, in bytes of JSON, used when
// Store.InlineMax ≤ 0 (64 KiB).
const DefaultInlineMax = 65536

// DefaultMaterializeMax is the largest stored object, in bytes, that
// Resolve loads whole when Store.MaterializeMax ≤ 0 (256 MiB): larger
// results are read by streaming consumers (OpenTable, Row).
const DefaultMaterializeMax = 256 << 20

// ErrBadRef is returned (wrapped) by Store.Resolve for a "$ref" map that is
// malformed (missing key, unknown format) or names an unknown cell.
// Code errs.InvalidArgument (not retried).
var ErrBadRef = errs.Sentinel(errs.InvalidArgument, "results: bad result reference")

// ErrForbidden is returned (wrapped) by every read of a reference the
// reading execution may not load (results by ownership, README "Security"):
// one of another execution than the reader, its parent or one of its
// children, a key that names no execution, or a read outside any
// execution (no Reader in the context). Code errs.PermissionDenied (not
// retried); the worker fails the step with error kind
// types.ErrKindForbidden.
var ErrForbidden = errs.Sentinel(errs.PermissionDenied, "results: reference refused")

// ErrDigest is wrapped (with ErrLost) by reads of an object whose bytes
// do not match its reference's digest (the sha256, or the crc32c under
// ReadCheckCRC32C): it was changed, replaced, truncated or corrupted
// after it was written (verifier.check, the one digest check).
// Code errs.NotFound: the object that was written is not there, and
// reading again cannot bring it back.
var ErrDigest = errs.Sentinel(errs.NotFound, "results: the stored object does not match its reference's digest")

// ErrGeneration is wrapped (with ErrLost) by reads of a reference whose
// object was replaced: the key holds another generation than the one the
// reference records, and no repair of it (MetaRepairs). Code
// errs.NotFound, as ErrDigest.
var ErrGeneration = errs.Sentinel(errs.NotFound, "results: the object at the key is not the generation the reference records")

// ErrLost is wrapped by every read of a reference whose object is gone
// (with ErrNotFound) or no longer what was written (with ErrDigest or
// ErrFormat). The worker fails the step once with error kind
// types.ErrKindResultLost naming the URI (NoETL result storage RFC "repair"): a lost
// result does not come back by retrying: code errs.NotFound, which
// errs.ReplyOf dead-letters and a tool's retry policy does not retry.
var ErrLost = errs.Sentinel(errs.NotFound, "results: result lost")

// ErrTooLarge is returned (wrapped) by Resolve for a reference whose
// object is over Store.MaterializeMax: it is read by streaming consumers
// (loop.in, transfer source type result, artifact), never loaded whole.
// Code errs.InvalidArgument (a value over a size limit: not retried).
var ErrTooLarge = errs.Sentinel(errs.InvalidArgument, "results: result too large to load whole")

// Store is the result tier's policy (NoETL result storage RFC §5): it moves over-budget
// results to its backends under names from its Locator, and turns references
// back into values. It is safe for concurrent use if its backends are.
// Backend is required; the other fields have defaults.
type Store struct {
	// Backend is the home cell's object store (in a single-cell
	// deployment, the only one).
	Backend
	Locator
	// CellBackends are the other cells' stores, by cell name; a cell not
	// listed is read and written through Backend.
	CellBackends map[string]Backend
	// InlineMax is the largest JSON encoding, in bytes, kept inline;
	// ≤ 0 means DefaultInlineMax (65536).
	InlineMax int
	// MaterializeMax is the largest object, in bytes, Resolve loads
	// whole; ≤ 0 means DefaultMaterializeMax.
	MaterializeMax int64
	// Cache keeps loaded values by object (nil: none).
	Cache *Cache
	// Now gives the write time of ttl expiries; nil means time.Now.
	Now func() time.Time
	// ReadCheck is the digest every read checks ("" is ReadCheckCRC32C;
	// digest.go; NOETL_RESULT_READ_CHECK).
	ReadCheck ReadCheck
}

// OffloadOptions are one result's storage settings (NoETL DSL spec output.store).
type OffloadOptions struct {
	// Limit is the inline budget: < 0 the Store's InlineMax, 0 stores
	// any value, > 0 the largest JSON encoding kept inline.
	Limit int
	// Compression is the Feather buffer compression: "", "lz4", "zstd".
	Compression string
	// TTL, when > 0, marks the object deletable by GC that long after it
	// was written, once its execution no longer needs it (MetaExpires).
	TTL time.Duration
	// BatchRows, when > 0, is the rows per record batch of a streamed
	// table (clamped to [256, 65536]; 0: about TargetBatchBytes each).
	BatchRows int
}

// backendFor returns the backend of a cell (Backend unless CellBackends
// has it).
func (s *Store) backendFor(cell string) Backend {
	if b, ok := s.CellBackends[cell]; ok {
		return b
	}
	return s.Backend
}

// BucketOf returns the bucket of cell's backend ("" when the backend
// names none, results.NewMemory).
func (s *Store) BucketOf(cell string) string {
	if bn, ok := s.backendFor(cell).(BucketNamer); ok {
		return bn.Bucket()
	}
	return ""
}

// URNResolver is implemented by a backend that holds the references of
// the URNs it serves: Store.ResolveURN asks it instead of deriving keys
// (the runner's backend of granted objects, runner/server, whose grants
// the control plane resolved and authorized).
type URNResolver interface {
	ResolveURN(ctx context.Context, uri string) (map[string]any, error)
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Offload stores v in the result tier when it is over the inline budget
// (NoETL result storage RFC §5 "the size threshold that gates inline-vs-reference"); it
// is OffloadWith with default options. The reference's uri and key both
// name the execution c.ExecutionID (reads load it only for that
// execution, its parent or its children: Authorize), and reads check the
// object against its digest (Store.ReadCheck).
func (s *Store) Offload(ctx context.Context, c types.ResultCoords, v any) (any, error) {
	return s.OffloadWith(ctx, c, v, OffloadOptions{Limit: -1})
}

// OffloadLimit is Offload with the inline budget of one result (a step's
// output.inline_max_bytes, the NoETL DSL spec "DSL v2 names" output.store): limit < 0
// means the Store's InlineMax, 0 stores v whatever its size, > 0 is the
// largest JSON encoding in bytes kept inline.
func (s *Store) OffloadLimit(ctx context.Context, c types.ResultCoords, v any, limit int) (any, error) {
	return s.OffloadWith(ctx, c, v, OffloadOptions{Limit: limit})
}

// OffloadWith stores v in the result tier when its JSON encoding is over
// opts' inline budget, else returns (nil, nil): the caller keeps v inline.
//
//   - A table (AsTable), or a map whose table is one of its fields with
//     small siblings (rows/data/results/items/records: a query's, an http
//     body's, a loop's) is stored as Arrow Feather v2 (format "feather",
//     content type ContentTypeFeather; the siblings in the file's
//     metadata, MetaEnvelope), streamed to the backend in record batches
//     with opts.Compression; anything else as its JSON encoding (format
//     "json", ContentTypeJSON).
//   - The object goes to PhysicalKey(c, format) in the home cell, written
//     once (ObjectAttrs.IfAbsent; NoETL result storage RFC "Risks": two
//     writers of the same key). When another writer (a duplicate or
//     earlier delivery of the same unit) already stored an object there:
//     if it holds the same bytes, the reference names it; otherwise v
//     goes to a fresh @version of the coordinates (NoETL result storage
//     RFC §4 OQ1: a bumped version keeps every write), so every
//     reference names an object that never changes.
//
// It then returns the reference map that the engine keeps in state and
// events instead of v ("bucket" only when the backend is a BucketNamer,
// "rows" only for feather, "expires" only with a ttl; numbers are int64):
//
//	{"$ref": {"uri": LogicalURI(c), "key": <physical key>, "cell": <cell>, "bucket": <bucket>,
//	          "format": "feather"|"json", "bytes": <object size>, "rows": <row count>,
//	          "sha256": <hex SHA-256 of the object's bytes>,
//	          "crc32c": <base64 of the big-endian CRC-32C of the object's bytes>,
//	          "generation": <the object's generation; absent when the backend keeps none>,
//	          "expires": <RFC 3339>},
//	 "extracted": Extract(v)}
//
// Errors: c lacks ExecutionID or Step (wrapping ErrBadURI); v cannot be
// JSON-encoded (e.g. NaN); an unknown compression (ErrCompression);
// encoding or the backend failed (wrapped).
func (s *Store) OffloadWith(ctx context.Context, c types.ResultCoords, v any, opts OffloadOptions) (any, error) {
	limit := opts.Limit
	if limit < 0 {
		limit = s.InlineMax
		if limit <= 0 {
			limit = DefaultInlineMax
		}
	}
	over, err := jsonOver(v, limit)
	if err != nil {
		return nil, fmt.Errorf("results: offload: %w", err)
	}
	var js []byte
	if !over {
		if js, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("results: offload: %w", err)
		}
		if len(js) <= limit {
			return nil, nil
		}
	}
	if s.Backend == nil {
		return nil, errors.New("results: offload: Store has no Backend")
	}
	if c.ExecutionID == "" || c.Step == "" {
		return nil, fmt.Errorf("%w: offload needs ExecutionID and Step (got %q, %q)", ErrBadURI, c.ExecutionID, c.Step)
	}
	if _, _, err := compressionOption(opts.Compression); err != nil {
		return nil, fmt.Errorf("results: offload: %w", err)
	}
	t, tabular := scanTable(v, nil)
	var env *envelope
	if !tabular {
		t, env, tabular = splitEnvelope(v)
	}
	format, contentType := FormatJSON, ContentTypeJSON
	if tabular {
		format, contentType = FormatFeather, ContentTypeFeather
	}
	ref, err := s.writeOnce(ctx, c, format, contentType, opts, func(o *objectOut) (int64, error) {
		if tabular {
			return writeTable(o, t, env, opts.Compression)
		}
		var err error
		if js == nil {
			js, err = json.Marshal(v)
		}
		if err == nil {
			_, err = o.Write(js)
		}
		return 0, err
	})
	if err != nil {
		return nil, err
	}
	var extracted map[string]any
	if tabular && env == nil {
		extracted = extractTable(t)
	} else {
		extracted = Extract(v)
	}
	return map[string]any{RefKey: ref, ExtractedKey: extracted}, nil
}

// OffloadForced stores v in the result tier whatever its size (Offload
// with an inline budget of one byte) and returns its reference; a value
// whose JSON is at most one byte is kept inline (nil, nil). The control
// plane uses it to keep an execution document under Firestore's 1 MiB
// limit (shared/control StateMaxBytes). Errors as Offload.
func (s *Store) OffloadForced(ctx context.Context, c types.ResultCoords, v any) (any, error) {
	return s.OffloadWith(ctx, c, v, OffloadOptions{Limit: 1})
}

// objectOut is an object being written: the backend writer behind its
// digests and a byte count.
type objectOut struct {
	w      ObjectWriter
	h      *digests
	hw     *hashWriter // hashes and writes to w beside the encoder (pipe.go)
	n      int64
	uri    string
	key    string
	cell   Cell
	bucket string
	format string
	expire time.Time
	err    error
}

// create starts the object of a result.
func (s *Store) create(ctx context.Context, c types.ResultCoords, format, contentType string, opts OffloadOptions) (*objectOut, error) {
	c = s.Defaulted(c)
	cell, _ := s.Place(c)
	key := s.PhysicalKey(c, format)
	b := s.backendFor(cell.Name)
	o := &objectOut{h: newDigests(), uri: s.LogicalURI(c), key: key, cell: cell, format: format}
	if bn, ok := b.(BucketNamer); ok {
		o.bucket = bn.Bucket()
	}
	attrs := ObjectAttrs{ContentType: contentType, IfAbsent: true}
	if opts.TTL > 0 {
		o.expire = s.now().Add(opts.TTL).UTC().Truncate(time.Second)
		attrs.Metadata = map[string]string{MetaExpires: o.expire.Format(time.RFC3339)}
	}
	o.w = b.NewWriter(ctx, key, attrs)
	o.hw = newHashWriter(o.w, o.h)
	return o, nil
}

func (o *objectOut) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.hw.Write(p)
	o.n += int64(n)
	if err != nil {
		o.err = err
	}
	return n, err
}

// errAborted stops an aborted object's writer goroutine from writing.
var errAborted = errors.New("results: object aborted")

func (o *objectOut) abort() {
	o.hw.mu.Lock()
	if o.hw.err == nil {
		o.hw.err = errAborted
	}
	o.hw.mu.Unlock()
	_ = o.hw.Flush()
	o.w.Abort()
}

// finish closes the object and returns its "$ref" map.
func (o *objectOut) finish(ctx context.Context, rows int64) (map[string]any, error) {
	if err := o.hw.Flush(); err != nil {
		o.w.Abort()
		return nil, fmt.Errorf("results: offload %s: %w", o.uri, err)
	}
	if err := o.w.Close(); err != nil {
		return nil, fmt.Errorf("results: offload %s: %w", o.uri, err) // ErrExists: another writer's object is there
	}
	observeOffload(ctx, o.format, int(o.n)) // telemetry (observe.go)
	return o.ref(rows, o.n, o.digest(), o.h.crc32c(), o.w.Generation(), o.expire), nil
}

// digest is the hex SHA-256 of what was written (after finish).
func (o *objectOut) digest() string { return o.h.sha256Hex() }

// ref is the "$ref" map of the object at o's key holding size bytes of
// the given digests (rows: a table's; gen: its generation, 0 for none;
// expire: its ttl, zero for none).
func (o *objectOut) ref(rows, size int64, sha, crc string, gen int64, expire time.Time) map[string]any {
	ref := map[string]any{
		"uri": o.uri, "key": o.key, "cell": o.cell.Name, "format": o.format,
		"bytes": size, DigestKey: sha, CRC32CKey: crc,
	}
	if gen > 0 {
		ref[GenerationKey] = gen
	}
	if o.bucket != "" {
		ref["bucket"] = o.bucket
	}
	if o.format == FormatFeather {
		ref["rows"] = rows
	}
	if !expire.IsZero() {
		ref["expires"] = expire.Format(time.RFC3339)
	}
	return ref
}

// IsRef reports whether v is a result reference: a map[string]any with a
// "$ref" key (the shape Offload returns; types.IsResultRef, the leaf
// package's check the engine uses).
func IsRef(v any) bool { return types.IsResultRef(v) }

// Ref is a parsed reference: where its object is and what it holds.
type Ref struct {
	URI    string // the logical URI ("" for a bare key)
	Key    string // the physical key
	Cell   string // the cell ("" = the home cell's backend)
	Bucket string // the bucket recorded ("" = none)
	Format string // FormatFeather or FormatJSON
	Bytes  int64  // the object's size (0 = unknown)
	Rows   int64  // a table's rows (0 = unknown)
	SHA256 string // the object's hex SHA-256 ("" = not recorded)
	CRC32C string // the object's CRC-32C, CRC32CKey's encoding ("" = not recorded)
	// Generation is the object's generation (0 = not recorded: the
	// object at the key is read).
	Generation int64
}

// Name is how messages name the reference: its URI, else its key.
func (r Ref) Name() string {
	if r.URI != "" {
		return r.URI
	}
	return r.Key
}

// ParseRef reads a reference: v is a reference map ({"$ref": {...}}) or
// its inner "$ref" map. The key may be left out when the uri is a
// logical URI (it is then derived). Errors wrap ErrBadRef.
func (s *Store) ParseRef(v any) (Ref, error) {
	m, _ := v.(map[string]any)
	if inner, ok := m[RefKey]; ok {
		if m, ok = inner.(map[string]any); !ok {
			return Ref{}, fmt.Errorf("%w: %q is %T, want an object", ErrBadRef, RefKey, inner)
		}
	}
	if m == nil {
		return Ref{}, fmt.Errorf("%w: %T is not a reference", ErrBadRef, v)
	}
	r := Ref{}
	r.URI, _ = m["uri"].(string)
	r.Key, _ = m["key"].(string)
	r.Cell, _ = m["cell"].(string)
	r.Bucket, _ = m["bucket"].(string)
	r.Format, _ = m["format"].(string)
	r.SHA256, _ = m[DigestKey].(string)
	r.CRC32C, _ = m[CRC32CKey].(string)
	r.Bytes, _ = toInt(m["bytes"])
	r.Rows, _ = toInt(m["rows"])
	if g, ok := m[GenerationKey]; ok {
		n, ok := toInt(g)
		if !ok || n <= 0 {
			return r, fmt.Errorf("%w: %s: generation %v is not a positive integer", ErrBadRef, r.Name(), g)
		}
		r.Generation = n
	}
	if r.Key == "" {
		if !strings.HasPrefix(r.URI, URIScheme+"://") {
			return r, fmt.Errorf("%w: %s: no key", ErrBadRef, r.Name())
		}
		c, err := ParseLogicalURI(r.URI)
		if err != nil {
			return r, fmt.Errorf("%w: %v", ErrBadRef, err)
		}
		if r.Format == "" {
			return r, fmt.Errorf("%w: %s: no format", ErrBadRef, r.Name())
		}
		cell, _ := s.Place(c)
		r.Key, r.Cell = s.PhysicalKey(c, r.Format), cell.Name
	}
	if r.Format != FormatFeather && r.Format != FormatJSON {
		return r, fmt.Errorf("%w: %s: format %q", ErrBadRef, r.Name(), r.Format)
	}
	if r.SHA256 != "" {
		if b, err := hex.DecodeString(r.SHA256); err != nil || len(b) != sha256.Size {
			return r, fmt.Errorf("%w: %s: sha256 %q is not a hex SHA-256", ErrBadRef, r.Name(), r.SHA256)
		}
	}
	if r.CRC32C != "" && !validCRC32C(r.CRC32C) {
		return r, fmt.Errorf("%w: %s: crc32c %q is not the base64 of a CRC-32C", ErrBadRef, r.Name(), r.CRC32C)
	}
	if r.Cell == "" && r.Bucket != "" && s.Cells != nil {
		if c, ok := s.Cells.CellOfBucket(r.Bucket); ok {
			r.Cell = c.Name
		}
	}
	if r.Cell != "" && s.Cells != nil {
		if _, ok := s.Cells.Cell(r.Cell); !ok {
			return r, fmt.Errorf("%w: %s: unknown cell %q", ErrBadRef, r.Name(), r.Cell)
		}
	}
	if r.Cell == "" && r.Bucket != "" {
		if bn, ok := s.Backend.(BucketNamer); ok && bn.Bucket() != r.Bucket {
			return r, fmt.Errorf("%w: %s: bucket %q is not a cell of this deployment", ErrBadRef, r.Name(), r.Bucket)
		}
	}
	return r, nil
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		return int64(x), true
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	}
	return 0, false
}

// Resolve returns v with every result reference in it replaced by the
// stored value (NoETL result storage RFC §4.2 "the read path resolves the logical URI →
// physical key → object fetch"). It walks map[string]any, []any and
// []map[string]any; a map with a "$ref" key is replaced as a whole (its
// "extracted" block is dropped) and the loaded value is not walked again.
//
//   - Feather objects decode to []any of map[string]any (DecodeFeather),
//     or, for a table stored with its envelope, to the whole result map.
//   - JSON objects decode with whole numbers as int64, others float64
//     (jsonx).
//
// Only references the context's Reader may load are loaded (WithReader:
// the reading execution's own results, its parent's and its children's);
// the execution is read from the reference's key (and must agree with
// its uri), never taken on trust. A reference that records a digest
// (every one Offload makes) is loaded only if the object's bytes match it
// (Store.ReadCheck: its "sha256", or its "crc32c"); one without (a
// bare key string given to an artifact task) is checked for ownership
// only.
//
// Copy on write: v itself is never modified; containers on the path to a
// reference are shallow-copied, everything else is shared, and a v without
// references is returned as is. The object is read from "$ref.key" in the
// reference's cell (derived from its uri when the key is absent). Loaded values are kept in the Store's Cache, if any, by key
// and digest; callers must not modify them.
//
// Errors (wrapped, naming the reference's URI or key): ErrBadRef for a
// malformed reference; ErrForbidden for a reference the reader may not
// load (checked before anything is read or taken from the Cache);
// ErrLost with ErrNotFound when the object is missing, with ErrDigest
// when it does not match its digest, with ErrFormat when it cannot be
// decoded; ErrTooLarge for an object over MaterializeMax; or the
// backend's error.
func (s *Store) Resolve(ctx context.Context, v any) (any, error) {
	out, _, err := s.resolve(ctx, v)
	return out, err
}

func (s *Store) resolve(ctx context.Context, v any) (any, bool, error) {
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x[RefKey]; ok {
			val, err := s.load(ctx, r)
			return val, true, err
		}
		return resolveIn(ctx, s, x, maps.All(x), func() map[string]any { return maps.Clone(x) },
			func(out map[string]any, k string, e any) { out[k] = e })
	case []any:
		return resolveIn(ctx, s, x, slices.All(x), func() []any { return slices.Clone(x) }, setAt)
	case []map[string]any:
		return resolveIn(ctx, s, x, slices.All(x), func() []any { // a resolved element need not be a map
			out := make([]any, len(x))
			for j, m := range x {
				out[j] = m
			}
			return out
		}, setAt)
	}
	return v, false, nil
}

// resolveIn resolves the references inside the elements of v, a map or a
// list (all yields its elements by key). When none held one it returns v
// as is (changed false); else a copy (made by clone) in which set replaced
// every element that changed. It stops at the first error.
func resolveIn[K, E any, C any](ctx context.Context, s *Store, v any, all iter.Seq2[K, E], clone func() C, set func(C, K, any)) (any, bool, error) {
	var out C
	copied := false
	for k, e := range all {
		ne, changed, err := s.resolve(ctx, e)
		if err != nil {
			return nil, false, err
		}
		if changed {
			if !copied {
				out, copied = clone(), true
			}
			set(out, k, ne)
		}
	}
	if copied {
		return out, true, nil
	}
	return v, false, nil
}

// setAt sets element i of a list copy (for resolveIn).
func setAt(out []any, i int, e any) { out[i] = e }

func (s *Store) materializeMax() int64 {
	if s.MaterializeMax > 0 {
		return s.MaterializeMax
	}
	return DefaultMaterializeMax
}

// load fetches and decodes the object a "$ref" value describes.
func (s *Store) load(ctx context.Context, r any) (v any, err error) {
	defer func() { observeResolve(ctx, r, err) }() // telemetry (observe.go)
	if s.Backend == nil {
		return nil, errors.New("results: resolve: Store has no Backend")
	}
	ref, err := s.ParseRef(r)
	if err != nil {
		return nil, err
	}
	if err := AuthorizeRef(ctx, ref); err != nil {
		return nil, err
	}
	if ref.Bytes > s.materializeMax() {
		return nil, fmt.Errorf("%w: %s is %d bytes, over the %d a template, python or a loop plan may load (NOETL_RESULT_MATERIALIZE_MAX_MB); stream it (loop.in, transfer source type result, artifact)", ErrTooLarge, ref.Name(), ref.Bytes, s.materializeMax())
	}
	ck := ref.Key + "#" + ref.SHA256
	if s.Cache != nil {
		if v, ok := s.Cache.Get(ck); ok {
			return v, nil
		}
	}
	data, err := s.fetch(ctx, ref)
	if err != nil {
		return nil, err
	}
	if ref.Format == FormatFeather {
		meta, rows, err := decodeFile(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrLost, ref.Name(), err)
		}
		v = meta.value(rows)
	} else if err := jsonx.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%w: %s: %w: json: %v", ErrLost, ref.Name(), ErrFormat, err)
	}
	if s.Cache != nil {
		s.Cache.Put(ck, v, SizeOf(v))
	}
	return v, nil
}

// openRef opens the object a reference names: exactly the generation
// it records (a reference without one: the object at its key). When that
// generation is gone, the object now at the key stands in for it only if
// it is a repair of it (MetaRepairs names the generation) and the
// reference records a sha256: repaired is then true, and the read must
// check that sha256 (verifierOf). Errors: ErrLost wrapped with
// ErrGeneration (the object was replaced) or ErrNotFound (gone); the
// backend's.
func (s *Store) openRef(ctx context.Context, ref Ref) (o Object, repaired bool, err error) {
	b := s.backendFor(ref.Cell)
	o, err = b.Open(ctx, ref.Key, ref.Generation)
	if err == nil {
		return o, false, nil
	}
	if ref.Generation <= 0 || !errors.Is(err, ErrNotFound) {
		return nil, false, lostOr(ref, err)
	}
	cur, cerr := b.Open(ctx, ref.Key, 0)
	switch {
	case cerr == nil && ref.SHA256 != "" && cur.Attrs().Metadata[MetaRepairs] == strconv.FormatInt(ref.Generation, 10):
		return cur, true, nil
	case cerr == nil:
		return nil, false, fmt.Errorf("%w: reference %s: %w: it records generation %d of %s, the key holds generation %d", ErrLost, ref.Name(), ErrGeneration, ref.Generation, ref.Key, cur.Generation())
	case errors.Is(cerr, ErrNotFound):
		return nil, false, fmt.Errorf("%w: %s: generation %d of %s: %w", ErrLost, ref.Name(), ref.Generation, ref.Key, cerr)
	}
	return nil, false, lostOr(ref, cerr)
}

// fetch reads a reference's whole object and checks its digest.
func (s *Store) fetch(ctx context.Context, ref Ref) ([]byte, error) {
	o, repaired, err := s.openRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	if o.Size() > s.materializeMax() {
		return nil, fmt.Errorf("%w: %s is %d bytes, over the %d a template, python or a loop plan may load (NOETL_RESULT_MATERIALIZE_MAX_MB); stream it (loop.in, transfer source type result, artifact)", ErrTooLarge, ref.Name(), o.Size(), s.materializeMax())
	}
	rd, err := o.NewReader(ctx, 0, -1)
	if err != nil {
		return nil, lostOr(ref, err)
	}
	defer rd.Close()
	data := make([]byte, 0, o.Size())
	buf := &bytesWriter{b: data}
	v := s.verifierOf(ref, repaired)
	if _, err := copyBuffer(buf, v, rd); err != nil {
		return nil, lostOr(ref, err)
	}
	if err := v.check(); err != nil {
		return nil, err
	}
	return buf.b, nil
}

// lostOr wraps a read error: a missing object is a lost result.
func lostOr(ref Ref, err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %s: %w", ErrLost, ref.Name(), err)
	}
	return fmt.Errorf("results: resolve %s: %w", ref.Name(), err)
}

// ResolveURN returns the reference of the result a logical URI names
// (only for a reader that may load it: ErrForbidden before any probe),
// found from the URI alone (NoETL result storage RFC §4: zero central lookup): the key
// derived in the home cell, as Feather, else as JSON. When the home cell
// has neither (a cell map that moved the shard after the result was
// written), the other cells of the map are tried. The reference has no
// digest (nothing recorded it), so reads through it check only the
// object's format. Errors: ErrBadURI; ErrNotFound (wrapped) when no cell
// has the object; the backend's error.
func (s *Store) ResolveURN(ctx context.Context, uri string) (map[string]any, error) {
	c, err := ParseLogicalURI(uri)
	if err != nil {
		return nil, err
	}
	if s.Backend == nil {
		return nil, errors.New("results: resolve: Store has no Backend")
	}
	if err := AuthorizeExecution(ctx, c.ExecutionID, uri); err != nil {
		return nil, err // not even whether the object exists is told
	}
	if r, ok := s.Backend.(URNResolver); ok {
		return r.ResolveURN(ctx, uri)
	}
	home, shard := s.Place(c)
	cells := []Cell{home}
	if s.Cells != nil {
		for _, other := range s.Cells.Cells {
			if other.Name != home.Name {
				cells = append(cells, other)
			}
		}
	}
	for _, cell := range cells {
		b := s.backendFor(cell.Name)
		for _, format := range []string{FormatFeather, FormatJSON} {
			key := s.keyIn(c, cell, shard, format)
			o, err := b.Open(ctx, key, 0)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("results: resolve %s: %w", uri, err)
			}
			ref := map[string]any{"uri": s.LogicalURI(c), "key": key, "cell": cell.Name, "format": format, "bytes": o.Size()}
			if g := o.Generation(); g > 0 {
				ref[GenerationKey] = g // what was found is what is read
			}
			if bn, ok := b.(BucketNamer); ok {
				ref["bucket"] = bn.Bucket()
			}
			return map[string]any{RefKey: ref}, nil
		}
	}
	return nil, fmt.Errorf("results: resolve %s: %w (no cell holds it)", uri, ErrNotFound)
}
