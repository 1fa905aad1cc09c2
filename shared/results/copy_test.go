package results

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
)

// CopyRefs copies every stored object a value names to the new execution:
// the copy is the rerun's own (readable by it, not by its source's reader
// alone), holds the same bytes and digests, keeps the extracted block,
// and the value around the references is left as it was (copy on write).
func TestCopyRefsMakesTheRerunsOwnCopy(t *testing.T) {
	s := newTestStore(16)
	a, b := offloadFor(t, s, "source-1"), offloadFor(t, s, "source-1")
	v := map[string]any{"first": a, "list": []any{"x", b}, "plain": int64(3)}
	src := WithReader(context.Background(), Reader{Execution: "source-1"})
	out, st, err := s.CopyRefs(src, v, "rerun-2")
	if err != nil {
		t.Fatal(err)
	}
	if st.Objects != 2 || st.Bytes <= 0 {
		t.Fatalf("stats %+v", st)
	}
	if !reflect.DeepEqual(v["first"], a) {
		t.Fatal("CopyRefs changed its input")
	}
	m := out.(map[string]any)
	if m["plain"] != int64(3) || m["list"].([]any)[0] != "x" {
		t.Fatalf("copied value %v", m)
	}
	for _, ref := range []any{m["first"], m["list"].([]any)[1]} {
		id, err := RefExecution(ref)
		if err != nil || id != "rerun-2" {
			t.Fatalf("copy belongs to %q (%v), want rerun-2", id, err)
		}
		inner, orig := ref.(map[string]any)[RefKey].(map[string]any), a[RefKey].(map[string]any)
		if inner[DigestKey] != orig[DigestKey] || inner[CRC32CKey] != orig[CRC32CKey] || !strings.Contains(inner["uri"].(string), "/rerun-2/") {
			t.Errorf("copy ref %v, source ref %v", inner, orig)
		}
		if !reflect.DeepEqual(ref.(map[string]any)[ExtractedKey], a[ExtractedKey]) {
			t.Error("the extracted block was not kept")
		}
		// The rerun reads its copy; the source's reader may not.
		got, err := s.Resolve(WithReader(context.Background(), Reader{Execution: "rerun-2"}), ref)
		if err != nil || !reflect.DeepEqual(got, sized(50)) {
			t.Errorf("the rerun reads %v (%v)", got, err)
		}
		if _, err := s.Resolve(WithReader(context.Background(), Reader{Execution: "other"}), ref); !errors.Is(err, ErrForbidden) {
			t.Errorf("another execution reads the copy: %v", err)
		}
	}
	// Copying again for the same execution adopts the same bytes.
	again, _, err := s.CopyRefs(src, v, "rerun-2")
	if err != nil || !reflect.DeepEqual(again, out) {
		t.Errorf("second copy: %v %v", again, err)
	}
	// A value without references comes back as is.
	plain := map[string]any{"a": []any{int64(1)}}
	if got, st, err := s.CopyRefs(src, plain, "rerun-2"); err != nil || st.Objects != 0 || reflect.ValueOf(got).Pointer() != reflect.ValueOf(plain).Pointer() {
		t.Errorf("plain value: %v %+v %v", got, st, err)
	}
}

// A copy is ownership-checked and digest-checked like a read: a reader
// that may not load the reference copies nothing; a replaced or changed
// object is refused as lost and no copy is left at the copy's key.
func TestCopyRefsRefusals(t *testing.T) {
	s := newTestStore(16)
	victim := offloadFor(t, s, "victim-9")
	mine := WithReader(context.Background(), Reader{Execution: "source-1"})
	if _, _, err := s.CopyRefs(mine, map[string]any{"r": victim}, "rerun-2"); !errors.Is(err, ErrForbidden) {
		t.Fatalf("copy of another execution's result: %v, want ErrForbidden", err)
	}
	own := offloadFor(t, s, "source-1")
	key := own[RefKey].(map[string]any)["key"].(string)
	if err := s.Put(context.Background(), key, []byte(`"tampered"`), ContentTypeJSON); err != nil {
		t.Fatal(err)
	}
	// Replaced: refused by generation, before a byte is read; without its
	// generation the reference's digest refuses it.
	_, _, err := s.CopyRefs(mine, own, "rerun-2")
	if !errors.Is(err, ErrLost) || !errors.Is(err, ErrGeneration) {
		t.Fatalf("copy of a replaced object: %v, want ErrLost/ErrGeneration", err)
	}
	noGen := map[string]any{RefKey: maps.Clone(own[RefKey].(map[string]any))}
	delete(noGen[RefKey].(map[string]any), GenerationKey)
	_, _, err = s.CopyRefs(mine, noGen, "rerun-2")
	if !errors.Is(err, ErrLost) || !errors.Is(err, ErrDigest) {
		t.Fatalf("copy of a changed object: %v, want ErrLost/ErrDigest", err)
	}
	var keys []string
	_ = s.List(context.Background(), "", func(o ObjectInfo) error {
		if id, ok := KeyExecution(o.Key); ok && id == "rerun-2" {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if len(keys) != 0 {
		t.Errorf("a refused copy left %v", keys)
	}
	if _, _, err := s.CopyRefs(mine, map[string]any{RefKey: map[string]any{"key": key, "format": "json"}}, "rerun-2"); !errors.Is(err, ErrBadRef) {
		t.Errorf("a reference without a uri: %v, want ErrBadRef", err)
	}
}
