package results

// Results by ownership (issue 13 item 6): a reference is loaded only for
// the execution that wrote it, its parent or one of its children. The
// execution is read from the reference itself (the physical key's
// execution= segment, which must agree with the logical URI), so a
// hand-made reference cannot borrow another execution's object by
// claiming a different uri.

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// DigestKey is the reference field holding the hex SHA-256 of the stored
// object's bytes (Store.Offload records it, Store.Resolve checks it).
const DigestKey = "sha256"

// Reader is the execution on whose behalf references are loaded.
type Reader struct {
	// Execution is the reading execution's id (required).
	Execution string
	// Parent is its parent's id ("" for a top-level execution).
	Parent string
	// IsChild reports whether id is a child of Execution (a `kind:
	// playbook` child: its execution document names Execution as its
	// parent); nil means no child's results are readable.
	IsChild func(ctx context.Context, id string) (bool, error)
}

type readerKey struct{}

// WithReader returns ctx carrying r: Store.Resolve loads only the
// references r may read. The engine sets it for every unit of work and
// every control-plane read of its own execution's objects.
func WithReader(ctx context.Context, r Reader) context.Context {
	return context.WithValue(ctx, readerKey{}, r)
}

// ReaderOf returns the Reader ctx carries (ok=false when none).
func ReaderOf(ctx context.Context) (Reader, bool) {
	r, ok := ctx.Value(readerKey{}).(Reader)
	return r, ok && r.Execution != ""
}

// Allows reports whether r may load a result of execution id: its own,
// its parent's, or one of its children's (a store read through IsChild).
func (r Reader) Allows(ctx context.Context, id string) (bool, error) {
	switch {
	case id == "":
		return false, nil
	case id == r.Execution, id == r.Parent && r.Parent != "":
		return true, nil
	case r.IsChild != nil:
		return r.IsChild(ctx, id)
	}
	return false, nil
}

// keyPattern is a physical key (Locator.PhysicalKey): fourteen segments,
// the execution in the ninth.
var keyPattern = regexp.MustCompile(`^noetl/env=[^/]+/region=[^/]+/cell=[^/]+/shard=[0-9]{4}/tenant=[^/]+/project=[^/]+/date=[0-9]{4}-[0-9]{2}-[0-9]{2}/execution=([^/]+)/results/[^/]+/[0-9]+/[0-9]+/[0-9]+\.(json|feather)$`)

// KeyExecution returns the execution a physical key belongs to
// (Locator.PhysicalKey's execution= segment, unescaped), and false for a
// key of another shape (a bare object name, "..", an escape that is not
// canonical).
func KeyExecution(key string) (string, bool) {
	m := keyPattern.FindStringSubmatch(key)
	if m == nil {
		return "", false
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "." || seg == ".." {
			return "", false
		}
	}
	id, err := url.PathUnescape(m[1])
	if err != nil || id == "" || id == "." || id == ".." || url.PathEscape(id) != m[1] {
		return "", false
	}
	return id, true
}

// RefExecution returns the execution a reference belongs to: v is a
// reference map ({"$ref": {...}}) or its inner "$ref" map. The execution
// comes from the key (KeyExecution); a logical uri, when given, must
// name the same one. Errors wrap ErrForbidden (a key that names no
// execution, a uri that disagrees) or ErrBadRef (no key).
func RefExecution(v any) (string, error) {
	ref, _ := v.(map[string]any)
	if inner, ok := ref[RefKey].(map[string]any); ok {
		ref = inner
	}
	key, _ := ref["key"].(string)
	uri, _ := ref["uri"].(string)
	if key == "" {
		return "", fmt.Errorf("%w: %s: no key", ErrBadRef, uri)
	}
	id, ok := KeyExecution(key)
	if !ok {
		return "", fmt.Errorf("%w: object %q is not a result of any execution (want a results-tier key, noetl/env=…/execution=<id>/results/…)", ErrForbidden, key)
	}
	if strings.HasPrefix(uri, URIScheme+"://") {
		c, err := ParseLogicalURI(uri)
		if err != nil || c.ExecutionID != id {
			return "", fmt.Errorf("%w: reference %s names object %q of execution %s", ErrForbidden, uri, key, id)
		}
	}
	return id, nil
}

// Authorize checks that the context's Reader may load the reference v
// (RefExecution, Reader.Allows) without loading it. Errors wrap
// ErrForbidden and name the reference and both executions, or are the
// Reader's store error.
func Authorize(ctx context.Context, v any) error {
	id, err := RefExecution(v)
	if err != nil {
		return err
	}
	r, ok := ReaderOf(ctx)
	if !ok {
		return fmt.Errorf("%w: a result of execution %s read outside any execution", ErrForbidden, id)
	}
	allowed, err := r.Allows(ctx, id)
	if err != nil {
		return fmt.Errorf("results: is %s a child of %s: %w", id, r.Execution, err)
	}
	if !allowed {
		return fmt.Errorf("%w: execution %s may read its own results, its parent's and its children's, not those of execution %s (%s)", ErrForbidden, r.Execution, id, describe(v))
	}
	return nil
}

// describe names a reference in messages: its uri, else its key.
func describe(v any) string {
	ref, _ := v.(map[string]any)
	if inner, ok := ref[RefKey].(map[string]any); ok {
		ref = inner
	}
	if u, _ := ref["uri"].(string); strings.HasPrefix(u, URIScheme+"://") {
		return u
	}
	k, _ := ref["key"].(string)
	return k
}
