package results

// Copies of results for another execution (a rerun, docs "Rerun"): a
// rerun reuses step runs of the execution it reruns, and the results of
// those runs must be its own — readable under its ownership (owner.go)
// and kept as long as it is (GC deletes an execution's results by
// prefix), whatever happens to the source afterwards. CopyRefs copies
// each stored object the reused values name under the rerun's execution,
// checked as a read is: the context's Reader must be allowed to load it
// and its bytes must match the digest its reference records.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CopyStats counts what CopyRefs copied.
type CopyStats struct {
	// Objects and Bytes are the objects copied and their total size.
	Objects int
	Bytes   int64
}

// CopyRefs returns v with every result reference in it (walked as Resolve
// walks: maps, []any, []map[string]any) replaced by the reference of a copy
// of its object owned by execution to: the same logical coordinates
// (tenant, project, step, frame, row, attempt, version) under to, at the
// physical key they give, written once (ObjectAttrs.IfAbsent; the same
// bytes already there are adopted, other bytes go to a fresh @version, as
// Offload does). The copy records the source's digests and extracted
// block; it has no ttl (it lives as long as execution to). v itself is
// not modified; a v without references is returned as is.
//
// Each reference is checked before anything is read: the context's Reader
// (WithReader: the source execution, its parent and children) must be
// allowed to load it (ErrForbidden); the bytes are streamed (never held
// whole) through the digest check of a read (ErrLost with ErrDigest: the
// copy is then aborted, nothing is left at its key); a reference without
// a logical uri cannot name its copy (ErrBadRef). Errors wrap those and
// the backend's.
func (s *Store) CopyRefs(ctx context.Context, v any, to string) (any, CopyStats, error) {
	var st CopyStats
	if to == "" {
		return nil, st, fmt.Errorf("%w: copy for no execution", ErrBadURI)
	}
	out, _, err := mapRefs(v, func(m map[string]any) (any, error) {
		ref, n, err := s.copyRef(ctx, m, to)
		if err == nil {
			st.Objects++
			st.Bytes += n
		}
		return ref, err
	})
	return out, st, err
}

// copyRef copies the object of one reference map for execution to and
// returns the copy's reference map and size.
func (s *Store) copyRef(ctx context.Context, m map[string]any, to string) (map[string]any, int64, error) {
	if s.Backend == nil {
		return nil, 0, fmt.Errorf("results: copy: Store has no Backend")
	}
	ref, err := s.ParseRef(m)
	if err != nil {
		return nil, 0, err
	}
	if err := AuthorizeRef(ctx, ref); err != nil {
		return nil, 0, err
	}
	if !strings.HasPrefix(ref.URI, URIScheme+"://") {
		return nil, 0, fmt.Errorf("%w: %s has no logical uri to name its copy by", ErrBadRef, ref.Name())
	}
	c, err := ParseLogicalURI(ref.URI)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrBadRef, err)
	}
	c.ExecutionID = to
	obj, repaired, err := s.openRef(ctx, ref) // the generation the reference records
	if err != nil {
		return nil, 0, err
	}
	contentType := obj.Attrs().ContentType
	if contentType == "" {
		contentType = ContentTypeJSON
		if ref.Format == FormatFeather {
			contentType = ContentTypeFeather
		}
	}
	var size int64
	out, err := s.writeOnce(ctx, c, ref.Format, contentType, OffloadOptions{}, func(o *objectOut) (int64, error) {
		rd, err := obj.NewReader(ctx, 0, -1)
		if err != nil {
			return 0, lostOr(ref, err)
		}
		defer rd.Close()
		v := s.verifierOf(ref, repaired)
		n, err := copyBuffer(o, v, rd)
		if err != nil {
			return 0, err
		}
		if err := v.check(); err != nil {
			return 0, err
		}
		size = n
		return ref.Rows, nil
	})
	if err != nil {
		return nil, 0, err
	}
	copied := map[string]any{RefKey: out}
	if ex, ok := m[ExtractedKey]; ok {
		copied[ExtractedKey] = ex
	}
	return copied, size, nil
}

// mapRefs returns v with fn(ref) in place of every reference map in it
// (copy on write, as Resolve: containers on the path to a reference are
// shallow-copied, v is returned as is when it holds none; changed says
// which). It stops at fn's first error.
func mapRefs(v any, fn func(map[string]any) (any, error)) (out any, changed bool, err error) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[RefKey]; ok {
			r, err := fn(x)
			return r, true, err
		}
		var m map[string]any
		for k, e := range x {
			ne, ch, err := mapRefs(e, fn)
			if err != nil {
				return nil, false, err
			}
			if ch {
				if m == nil {
					m = maps.Clone(x)
				}
				m[k] = ne
			}
		}
		if m != nil {
			return m, true, nil
		}
	case []any:
		return mapList(x, fn)
	case []map[string]any:
		l := make([]any, len(x))
		for i := range x {
			l[i] = x[i]
		}
		if out, changed, err := mapList(l, fn); changed || err != nil {
			return out, changed, err
		}
	}
	return v, false, nil
}

// mapList is mapRefs of a list.
func mapList(x []any, fn func(map[string]any) (any, error)) (any, bool, error) {
	var l []any
	for i, e := range x {
		ne, ch, err := mapRefs(e, fn)
		if err != nil {
			return nil, false, err
		}
		if ch {
			if l == nil {
				l = slices.Clone(x)
			}
			l[i] = ne
		}
	}
	if l != nil {
		return l, true, nil
	}
	return x, false, nil
}
