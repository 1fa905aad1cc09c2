package results

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/types"
)

// offloadFor stores a 50-item value as a result of execution id.
func offloadFor(t *testing.T, s *Store, id string) map[string]any {
	t.Helper()
	ref, err := s.Offload(context.Background(), types.ResultCoords{ExecutionID: id, Step: "fetch", Frame: 1, Attempt: 1}, sized(50))
	if err != nil || ref == nil {
		t.Fatalf("offload for %s: %v %v", id, ref, err)
	}
	return ref.(map[string]any)
}

// Offload records the sha256 of the object's bytes in the reference.
func TestOffloadRecordsDigest(t *testing.T) {
	s := newTestStore(16)
	ref := offloadFor(t, s, "exec-1")[RefKey].(map[string]any)
	data, err := s.Get(context.Background(), ref["key"].(string))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if ref[DigestKey] != hex.EncodeToString(sum[:]) {
		t.Fatalf("sha256 = %v, want %x", ref[DigestKey], sum)
	}
}

// A reference loads for its own execution, its parent and its children,
// and nowhere else: the execution comes from the key, whatever uri the
// reference claims (README "Security").
func TestResolveOwnership(t *testing.T) {
	s := newTestStore(16)
	own, parent, child, other := offloadFor(t, s, "exec-1"), offloadFor(t, s, "exec-0"), offloadFor(t, s, "exec-2"), offloadFor(t, s, "victim-9")
	children := map[string]bool{"exec-2": true}
	reader := Reader{Execution: "exec-1", Parent: "exec-0", IsChild: func(_ context.Context, id string) (bool, error) { return children[id], nil }}
	ctx := WithReader(context.Background(), reader)
	for name, ref := range map[string]map[string]any{"own": own, "parent": parent, "child": child} {
		if _, err := s.Resolve(ctx, ref); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := s.Resolve(ctx, map[string]any{"steps": []any{other}})
	if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "execution exec-1 may read its own results, its parent's and its children's, not those of execution victim-9 (noetl://default/default/results/victim-9/fetch/1/0/1)") {
		t.Fatalf("another execution's reference: %v", err)
	}
	// A hand-made reference: the victim's key under the reader's uri.
	inner := maps.Clone(other[RefKey].(map[string]any))
	inner["uri"] = own[RefKey].(map[string]any)["uri"]
	if _, err := s.Resolve(ctx, map[string]any{RefKey: inner}); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "names object") {
		t.Errorf("uri that disagrees with the key: %v", err)
	}
	// A key that names no execution (another object of the bucket).
	for _, key := range []string{"bodies/exec-1/t.json", "noetl/env=default/region=default/cell=default/shard=0001/tenant=default/project=default/date=2026-01-01/execution=exec-1/results/../../x.json", "x.json"} {
		if _, err := s.Resolve(ctx, map[string]any{RefKey: map[string]any{"key": key, "format": "json"}}); !errors.Is(err, ErrForbidden) {
			t.Errorf("key %q: %v, want ErrForbidden", key, err)
		}
	}
	// No reader: nothing loads.
	if _, err := s.Resolve(context.Background(), own); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "outside any execution") {
		t.Errorf("no reader: %v", err)
	}
	// The child lookup's own failure is returned, not taken for a no.
	broken := WithReader(context.Background(), Reader{Execution: "exec-1", IsChild: func(context.Context, string) (bool, error) { return false, errors.New("firestore down") }})
	if _, err := s.Resolve(broken, other); err == nil || errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "firestore down") {
		t.Errorf("child lookup failure: %v", err)
	}
}

// An object changed after it was written (its bytes no longer hash to
// the reference's sha256) is refused with an error naming the reference.
func TestResolveDigestMismatch(t *testing.T) {
	s := newTestStore(16)
	ctx := WithReader(context.Background(), Reader{Execution: "exec-1"})
	ref := offloadFor(t, s, "exec-1")
	inner := ref[RefKey].(map[string]any)
	if err := s.Put(ctx, inner["key"].(string), []byte(`{"tampered": true}`), ContentTypeJSON); err != nil {
		t.Fatal(err)
	}
	_, err := s.Resolve(ctx, ref)
	if !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), "reference noetl://default/default/results/exec-1/fetch/1/0/1") || !strings.Contains(err.Error(), inner["key"].(string)) {
		t.Fatalf("tampered object: %v", err)
	}
	// A reference written before digests were recorded loads unchecked.
	legacy := maps.Clone(inner)
	delete(legacy, DigestKey)
	if v, err := s.Resolve(ctx, map[string]any{RefKey: legacy}); err != nil || v.(map[string]any)["tampered"] != true {
		t.Fatalf("legacy reference: %v %v", v, err)
	}
	// A malformed digest is a bad reference.
	bad := maps.Clone(inner)
	bad[DigestKey] = "abc"
	if _, err := s.Resolve(ctx, map[string]any{RefKey: bad}); !errors.Is(err, ErrBadRef) {
		t.Fatalf("malformed digest: %v", err)
	}
}

func TestKeyExecution(t *testing.T) {
	var l Locator
	c := types.ResultCoords{ExecutionID: "484377543601029219", Step: "a/b c", Frame: 2, Row: 3, Attempt: 1}
	if id, ok := KeyExecution(l.PhysicalKey(c, "feather")); !ok || id != c.ExecutionID {
		t.Fatalf("KeyExecution(PhysicalKey) = %q %v", id, ok)
	}
	c.ExecutionID = "a/b"
	if id, ok := KeyExecution(l.PhysicalKey(c, "json")); !ok || id != "a/b" {
		t.Fatalf("escaped id = %q %v", id, ok)
	}
	c.Version = "v2.1"
	if id, ok := KeyExecution(l.PhysicalKey(c, "feather")); !ok || id != "a/b" {
		t.Fatalf("versioned key = %q %v", id, ok)
	}
	for _, bad := range []string{"", "x.json", "noetl/results/x.json",
		"noetl/env=d/region=d/cell=d/shard=0001/tenant=d/project=d/date=2026-01-01/execution=e/results/s/1/0/1.csv",
		"noetl/env=d/region=d/cell=d/shard=0001/tenant=d/project=d/date=2026-01-01/execution=e/results/s/1/0/1.json/x",
		"noetl/env=d/region=d/cell=d/shard=0001/tenant=d/project=d/date=2026-01-01/execution=e%2x/results/s/1/0/1.json",
		"noetl/env=d/region=d/cell=d/shard=0001/tenant=d/project=d/date=2026-01-01/execution=../results/s/1/0/1.json",
	} {
		if id, ok := KeyExecution(bad); ok {
			t.Errorf("KeyExecution(%q) = %q", bad, id)
		}
	}
}
