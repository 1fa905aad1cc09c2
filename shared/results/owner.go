package results

// Results by ownership (README "Security"): a reference is loaded only for
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
// the execution in the ninth, the attempt optionally versioned
// (<attempt>@<version>).
var keyPattern = regexp.MustCompile(`^noetl/env=[^/]+/region=[^/]+/cell=[^/]+/shard=[0-9]{4}/tenant=[^/]+/project=[^/]+/date=[0-9]{4}-[0-9]{2}-[0-9]{2}/execution=([^/]+)/results/[^/]+/[0-9]+/[0-9]+/[0-9]+(@[A-Za-z0-9._-]{1,64})?\.(json|feather)$`)

// KeyExecution returns the execution a physical key belongs to
// (Locator.PhysicalKey's execution= segment, unescaped), and false for a
// key of another shape (a bare object name, "..", an escape that is not
// canonical). Ownership (Authorize) and GC (shared/operations/gc) both read
// keys with it.
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

// refOf reads the fields ownership needs from v: a Ref, a reference map
// ({"$ref": {...}}) or its inner "$ref" map.
func refOf(v any) Ref {
	if r, ok := v.(Ref); ok {
		return r
	}
	m, _ := v.(map[string]any)
	if inner, ok := m[RefKey].(map[string]any); ok {
		m = inner
	}
	r := Ref{}
	r.URI, _ = m["uri"].(string)
	r.Key, _ = m["key"].(string)
	return r
}

// RefExecution returns the execution a reference belongs to: v is a Ref,
// a reference map ({"$ref": {...}}) or its inner "$ref" map. The
// execution comes from the key (KeyExecution); a logical uri, when given,
// must name the same one. A reference without a key (the key is derived
// from its logical uri, ParseRef) belongs to the uri's execution. Errors
// wrap ErrForbidden (a key that names no execution, a uri that
// disagrees) or ErrBadRef (neither a key nor a logical uri).
func RefExecution(v any) (string, error) {
	r := refOf(v)
	logical := strings.HasPrefix(r.URI, URIScheme+"://")
	if r.Key == "" {
		if !logical {
			return "", fmt.Errorf("%w: %s: no key", ErrBadRef, r.URI)
		}
		c, err := ParseLogicalURI(r.URI)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrBadRef, err)
		}
		return c.ExecutionID, nil
	}
	id, ok := KeyExecution(r.Key)
	if !ok {
		return "", fmt.Errorf("%w: object %q is not a result of any execution (want a results-tier key, noetl/env=…/execution=<id>/results/…)", ErrForbidden, r.Key)
	}
	if logical {
		c, err := ParseLogicalURI(r.URI)
		if err != nil || c.ExecutionID != id {
			return "", fmt.Errorf("%w: reference %s names object %q of execution %s", ErrForbidden, r.URI, r.Key, id)
		}
	}
	return id, nil
}

// Authorize checks that the context's Reader may load the reference v (a
// Ref or a reference map: RefExecution, Reader.Allows) without loading
// it. Errors wrap ErrForbidden and name the reference and both
// executions, or are the Reader's store error.
func Authorize(ctx context.Context, v any) error {
	r := refOf(v)
	id, err := RefExecution(r)
	if err != nil {
		return err
	}
	return AuthorizeExecution(ctx, id, r.Name())
}

// AuthorizeRef is Authorize of a parsed reference (every read of the
// Store calls it after ParseRef and before the backend or the Cache).
func AuthorizeRef(ctx context.Context, r Ref) error { return Authorize(ctx, r) }

// AuthorizeExecution checks that the context's Reader may load a result
// of execution id (name names the result in messages): Authorize once the
// execution is known (fakes of the tier, which have no physical keys,
// call it). Errors as Authorize.
func AuthorizeExecution(ctx context.Context, id, name string) error {
	r, ok := ReaderOf(ctx)
	if !ok {
		return fmt.Errorf("%w: a result of execution %s read outside any execution", ErrForbidden, id)
	}
	allowed, err := r.Allows(ctx, id)
	if err != nil {
		return fmt.Errorf("results: is %s a child of %s: %w", id, r.Execution, err)
	}
	if !allowed {
		return fmt.Errorf("%w: execution %s may read its own results, its parent's and its children's, not those of execution %s (%s)", ErrForbidden, r.Execution, id, name)
	}
	return nil
}
