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
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Reference map keys (seed 004 §5 "carried inline: the bounded extracted
// block").
const (
	// RefKey marks a result reference: a map with this key stands for the
	// stored value (see Store.Offload for the full shape).
	RefKey = "$ref"
	// ExtractedKey holds the reference's extracted block (see Extract).
	ExtractedKey = "extracted"
)

// DefaultInlineMax is the inline budget, in bytes of JSON, used when
// Store.InlineMax ≤ 0 (64 KiB).
const DefaultInlineMax = 65536

// ErrBadRef is returned (wrapped) by Store.Resolve for a "$ref" map that is
// malformed (missing key, unknown format) or names another bucket.
// Code errs.InvalidArgument.
var ErrBadRef = errs.Sentinel(errs.InvalidArgument, "results: bad result reference")

// ErrForbidden is returned (wrapped) by Store.Resolve for a reference the
// reading execution may not load (results by ownership, issue 13 item 6):
// one of another execution than the reader, its parent or one of its
// children, a key that names no execution, or a read outside any
// execution (no Reader in the context).
var ErrForbidden = errors.New("results: reference refused")

// ErrDigest is returned (wrapped) by Store.Resolve when the stored object
// does not match the sha256 its reference records: the object was
// changed (or replaced) after it was written.
var ErrDigest = errors.New("results: the stored object does not match its reference's sha256")

// Store is the result tier's policy (seed 004 §5): it moves over-budget
// results to its Backend under names from its Locator, and turns references
// back into values. It holds no cache and is safe for concurrent use if its
// Backend is. Backend is required; the other fields have defaults.
type Store struct {
	Backend
	Locator
	// InlineMax is the largest JSON encoding, in bytes, kept inline;
	// ≤ 0 means DefaultInlineMax (65536).
	InlineMax int
	// Now gives the date segment of new physical keys; nil means time.Now.
	Now func() time.Time
}

// Offload stores v in the result tier when it is over the inline budget
// (seed 004 §5 "the size threshold that gates inline-vs-reference").
//
//   - If v's JSON encoding is at most InlineMax bytes it returns (nil, nil):
//     the caller keeps v inline.
//   - If v is tabular (AsTable) it is stored as Arrow Feather v2
//     (EncodeFeather; format "feather", content type ContentTypeFeather);
//     otherwise as its JSON encoding (format "json", ContentTypeJSON).
//   - The object goes to PhysicalKey(c, format, Now()), overwriting what is
//     there (idempotent redelivery).
//
// It then returns the reference map that the engine keeps in state and
// events instead of v ("bucket" only when the Backend is a BucketNamer,
// "rows" only for feather; numbers are int64):
//
//	{"$ref": {"uri": LogicalURI(c), "key": <physical key>, "bucket": <bucket>,
//	          "format": "feather"|"json", "bytes": <object size>, "rows": <row count>,
//	          "sha256": <hex SHA-256 of the object's bytes>},
//	 "extracted": Extract(v)}
//
// The uri and the key both name the execution c.ExecutionID (Resolve
// loads a reference only for that execution, its parent or its
// children), and Resolve checks the object against "sha256".
//
// Errors: c lacks ExecutionID or Step (wrapping ErrBadURI); v cannot be
// JSON-encoded (e.g. NaN); encoding failed; Backend.Put failed (wrapped).
func (s *Store) Offload(ctx context.Context, c types.ResultCoords, v any) (any, error) {
	return s.OffloadLimit(ctx, c, v, -1)
}

// OffloadLimit is Offload with the inline budget of one result (a step's
// output.inline_max_bytes, DSL.md "DSL v2 names" output.store): limit < 0
// means the Store's InlineMax, 0 stores v whatever its size, > 0 is the
// largest JSON encoding in bytes kept inline.
func (s *Store) OffloadLimit(ctx context.Context, c types.ResultCoords, v any, limit int) (any, error) {
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

	ref := map[string]any{"uri": s.LogicalURI(c)}
	var data []byte
	var contentType string
	t, tabular := scanTable(v)
	if tabular {
		if data, err = encodeFeather(t); err != nil {
			return nil, fmt.Errorf("results: offload %s: %w", ref["uri"], err)
		}
		ref["format"], ref["rows"], contentType = FormatFeather, int64(len(t.rows)), ContentTypeFeather
	} else {
		if js == nil {
			if js, err = json.Marshal(v); err != nil {
				return nil, fmt.Errorf("results: offload %s: %w", ref["uri"], err)
			}
		}
		data = js
		ref["format"], contentType = FormatJSON, ContentTypeJSON
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	key := s.PhysicalKey(c, ref["format"].(string), now())
	if err := s.Backend.Put(ctx, key, data, contentType); err != nil {
		return nil, fmt.Errorf("results: offload %s: %w", ref["uri"], err)
	}
	observeOffload(ctx, ref["format"].(string), len(data)) // telemetry (observe.go)
	ref["key"] = key
	ref["bytes"] = int64(len(data))
	sum := sha256.Sum256(data)
	ref[DigestKey] = hex.EncodeToString(sum[:])
	if bn, ok := s.Backend.(BucketNamer); ok {
		ref["bucket"] = bn.Bucket()
	}
	var extracted map[string]any
	if tabular {
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
	cp := *s
	cp.InlineMax = 1
	return cp.Offload(ctx, c, v)
}

// IsRef reports whether v is a result reference: a map[string]any with a
// "$ref" key (the shape Offload returns).
func IsRef(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[RefKey]
	return ok
}

// Resolve returns v with every result reference in it replaced by the
// stored value (seed 004 §4.2 "the read path resolves the logical URI →
// physical key → object fetch"). It walks map[string]any, []any and
// []map[string]any; a map with a "$ref" key is replaced as a whole (its
// "extracted" block is dropped) and the loaded value is not walked again.
//
//   - Feather objects decode to []any of map[string]any (DecodeFeather:
//     int64, float64, bool, string, nil cells).
//   - JSON objects decode with whole numbers as int64, others float64
//     (jsonx).
//
// Only references the context's Reader may load are loaded (WithReader:
// the reading execution's own results, its parent's and its children's);
// the execution is read from the reference's key (and must agree with
// its uri), never taken on trust. A reference that records a "sha256"
// (every one Offload makes) is loaded only if the object's bytes hash to
// it; one without (made before digests were recorded, or a bare key
// string given to an artifact task) is checked for ownership only.
//
// Copy on write: v itself is never modified; containers on the path to a
// reference are shallow-copied, everything else is shared, and a v without
// references is returned as is. The object is read from "$ref.key" (the
// date segment is not derivable from the URI, so the key is never
// recomputed); the bucket, when present, must be the Backend's. Nothing is
// cached across calls.
//
// Errors (wrapped, naming the reference's URI or key): ErrBadRef for a
// malformed reference or another bucket, ErrForbidden for a reference the
// reader may not load, ErrNotFound when the object is missing, ErrDigest
// when it does not match its sha256, ErrFormat when it cannot be decoded,
// or the Backend's error.
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

// load fetches and decodes the object a "$ref" value describes.
func (s *Store) load(ctx context.Context, r any) (v any, err error) {
	defer func() { observeResolve(ctx, r, err) }() // telemetry (observe.go)
	ref, ok := r.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %q is %T, want an object", ErrBadRef, RefKey, r)
	}
	uri, _ := ref["uri"].(string)
	key, _ := ref["key"].(string)
	format, _ := ref["format"].(string)
	if key == "" {
		return nil, fmt.Errorf("%w: %s: no key", ErrBadRef, uri)
	}
	if format != FormatFeather && format != FormatJSON {
		return nil, fmt.Errorf("%w: %s: format %q", ErrBadRef, uri, format)
	}
	if b, ok := ref["bucket"].(string); ok && b != "" {
		if bn, ok := s.Backend.(BucketNamer); ok && bn.Bucket() != b {
			return nil, fmt.Errorf("%w: %s: bucket %q, store reads %q", ErrBadRef, uri, b, bn.Bucket())
		}
	}
	if err := Authorize(ctx, r); err != nil {
		return nil, err
	}
	want, hasDigest := ref[DigestKey].(string)
	if _, present := ref[DigestKey]; present && (!hasDigest || len(want) != 64) {
		return nil, fmt.Errorf("%w: %s: %s is not a hex SHA-256", ErrBadRef, uri, DigestKey)
	}
	if s.Backend == nil {
		return nil, errors.New("results: resolve: Store has no Backend")
	}
	data, err := s.Backend.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("results: resolve %s: %w", uri, err)
	}
	if hasDigest {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, want) {
			return nil, fmt.Errorf("%w: reference %s (object %s) records sha256 %s, the object's is %s", ErrDigest, uri, key, want, got)
		}
	}
	if format == FormatFeather {
		rows, err := DecodeFeather(data)
		if err != nil {
			return nil, fmt.Errorf("results: resolve %s: %w", uri, err)
		}
		return rows, nil
	}
	var out any
	if err := jsonx.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("results: resolve %s: %w: json: %v", uri, ErrFormat, err)
	}
	return out, nil
}
