package results

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
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

// Offload records both digests of the object's bytes in the reference:
// the hex SHA-256 and the CRC-32C as Cloud Storage encodes it (base64 of
// the big-endian sum).
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
	var crc [4]byte
	binary.BigEndian.PutUint32(crc[:], crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	if want := base64.StdEncoding.EncodeToString(crc[:]); ref[CRC32CKey] != want {
		t.Fatalf("crc32c = %v, want %s", ref[CRC32CKey], want)
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

// An object changed after it was written is refused under either read
// check (the crc32c by default), naming the reference and the digest
// compared; each check reads only its own digest, and a reference that
// records only one of them is checked against it.
func TestResolveDigestMismatch(t *testing.T) {
	ctx := WithReader(context.Background(), Reader{Execution: "exec-1"})
	for _, check := range []ReadCheck{"", ReadCheckCRC32C, ReadCheckSHA256} {
		t.Run("check="+string(check), func(t *testing.T) {
			s := newTestStore(16)
			s.ReadCheck = check
			ref := offloadFor(t, s, "exec-1")
			inner := ref[RefKey].(map[string]any)
			used := "crc32c" // the default
			if check == ReadCheckSHA256 {
				used = "sha256"
			}
			with := func(field string, v any) map[string]any {
				m := maps.Clone(inner)
				if v == nil {
					delete(m, field)
				} else {
					m[field] = v
				}
				return map[string]any{RefKey: m}
			}
			wrongSHA := strings.Repeat("ab", 32)
			wrongCRC := "AAAAAA=="
			// The intact object: a wrong value of the digest not checked is
			// not read; a wrong value of the one checked is refused.
			if _, err := s.Resolve(ctx, ref); err != nil {
				t.Fatalf("intact: %v", err)
			}
			for field, wrong := range map[string]string{DigestKey: wrongSHA, CRC32CKey: wrongCRC} {
				_, err := s.Resolve(ctx, with(field, wrong))
				if field == used {
					if !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), "it records "+used+" "+wrong) {
						t.Errorf("wrong %s in the reference: %v, want ErrDigest", field, err)
					}
				} else if err != nil {
					t.Errorf("wrong %s, which %s does not read: %v", field, used, err)
				}
			}
			// One digest recorded: it is checked whatever the setting.
			if _, err := s.Resolve(ctx, with(CRC32CKey, nil)); err != nil {
				t.Errorf("intact, sha256 only: %v", err)
			}
			noCRC := with(CRC32CKey, nil)
			noCRC[RefKey].(map[string]any)[DigestKey] = wrongSHA
			if _, err := s.Resolve(ctx, noCRC); !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), "it records sha256") {
				t.Errorf("wrong sha256, no crc32c: %v", err)
			}
			noSHA := with(DigestKey, nil)
			noSHA[RefKey].(map[string]any)[CRC32CKey] = wrongCRC
			if _, err := s.Resolve(ctx, noSHA); !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), "it records crc32c") {
				t.Errorf("wrong crc32c, no sha256: %v", err)
			}

			// The object changed (same size or not): refused by its
			// generation (the reference records the one written), and,
			// for a reference that records none, by its digest.
			orig := mustGet(t, s, inner["key"].(string))
			if _, ok := inner[GenerationKey].(int64); !ok {
				t.Fatalf("the reference records no generation: %v", inner)
			}
			for _, body := range []string{strings.Replace(orig, "x", "y", 1), `{"tampered": true}`} {
				if err := s.Put(ctx, inner["key"].(string), []byte(body), ContentTypeJSON); err != nil {
					t.Fatal(err)
				}
				s.Cache = nil
				_, err := s.Resolve(ctx, ref)
				if !errors.Is(err, ErrGeneration) || !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "reference noetl://default/default/results/exec-1/fetch/1/0/1") || !strings.Contains(err.Error(), inner["key"].(string)) {
					t.Fatalf("tampered object: %v", err)
				}
				_, err = s.Resolve(ctx, with(GenerationKey, nil))
				if !errors.Is(err, ErrDigest) || !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "reference noetl://default/default/results/exec-1/fetch/1/0/1") || !strings.Contains(err.Error(), inner["key"].(string)) || !strings.Contains(err.Error(), "it records "+used) {
					t.Fatalf("tampered object, reference without a generation: %v", err)
				}
			}
			// A reference that records no digest and no generation (a bare
			// key given to an artifact task) loads unchecked.
			legacy := with(DigestKey, nil)
			delete(legacy[RefKey].(map[string]any), CRC32CKey)
			delete(legacy[RefKey].(map[string]any), GenerationKey)
			if v, err := s.Resolve(ctx, legacy); err != nil || v == nil {
				t.Fatalf("reference without digests: %v %v", v, err)
			}
			// A malformed digest is a bad reference.
			for _, bad := range []struct{ field, value string }{{DigestKey, "abc"}, {CRC32CKey, "abc"}, {CRC32CKey, "AAAAAAAA"}} {
				if _, err := s.Resolve(ctx, with(bad.field, bad.value)); !errors.Is(err, ErrBadRef) {
					t.Errorf("malformed %s %q: %v", bad.field, bad.value, err)
				}
			}
		})
	}
}

// mustGet is the object at key as text.
func mustGet(t *testing.T, s *Store, key string) string {
	t.Helper()
	data, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
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
