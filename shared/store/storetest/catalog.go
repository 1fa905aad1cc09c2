package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/noetl/gcpengine/shared/store"
)

var playbookCases = []testCase{
	{"PutVersionsGet", testPlaybookPutGet},
	{"List", testPlaybookList},
	{"ConcurrentPutsNumberedOnce", testPlaybookConcurrentPut},
}

func putPlaybook(ctx context.Context, t *testing.T, s store.Store, path, name, src string, want int) {
	t.Helper()
	v, err := s.PlaybookPut(ctx, store.PlaybookPutParams{Path: path, Name: name, Source: src})
	if err != nil || v != want {
		t.Fatalf("PlaybookPut(%s, %q) = %d, %v; want version %d", path, src, v, err, want)
	}
}

func getPlaybook(ctx context.Context, t *testing.T, s store.Store, path string, version int) *store.PlaybookVersion {
	t.Helper()
	v, err := s.PlaybookGet(ctx, path, version)
	if err != nil {
		t.Fatalf("PlaybookGet(%s, %d): %v", path, version, err)
	}
	return v
}

// testPlaybookPutGet: versions are numbered 1, 2, ... in registration
// order; registering the latest source again returns its version; Get
// reads a version (0 = latest) and reports ErrNotFound for an unknown path
// or version. Paths may contain "/".
func testPlaybookPutGet(ctx context.Context, t *testing.T, s store.Store) {
	path := "tests/storetest/" + uniqueID(t)
	srcA, srcB := "name: a\n", "name: b\n"
	putPlaybook(ctx, t, s, path, "a", srcA, 1)
	putPlaybook(ctx, t, s, path, "a", srcA, 1)
	putPlaybook(ctx, t, s, path, "b", srcB, 2)
	putPlaybook(ctx, t, s, path, "b", srcB, 2)
	putPlaybook(ctx, t, s, path, "a", srcA, 3) // an older source again is a new version
	for _, c := range []struct {
		version, want int
		src           string
	}{{0, 3, srcA}, {1, 1, srcA}, {2, 2, srcB}, {3, 3, srcA}} {
		v := getPlaybook(ctx, t, s, path, c.version)
		if v.Path != path || v.Version != c.want || v.Source != c.src || v.Name != "a" || v.CreatedAt.IsZero() {
			t.Errorf("PlaybookGet(%d) = %+v; want path %s, version %d, source %q, the latest name a, a created_at", c.version, v, path, c.want, c.src)
		}
	}
	if !getPlaybook(ctx, t, s, path, 1).CreatedAt.Before(getPlaybook(ctx, t, s, path, 3).CreatedAt) {
		t.Error("version 1 is not older than version 3")
	}
	for _, c := range []struct {
		path    string
		version int
	}{{path, 4}, {path, -1}, {path + "/x", 0}, {"tests/storetest/unknown-" + uniqueID(t), 1}} {
		if v, err := s.PlaybookGet(ctx, c.path, c.version); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PlaybookGet(%s, %d) = %+v, %v; want ErrNotFound", c.path, c.version, v, err)
		}
	}
}

// testPlaybookList: the catalog lists each path once with its latest
// version and name, sorted by path.
func testPlaybookList(ctx context.Context, t *testing.T, s store.Store) {
	prefix := "tests/storetest/" + uniqueID(t) + "/"
	putPlaybook(ctx, t, s, prefix+"b", "b", "name: b\n", 1)
	putPlaybook(ctx, t, s, prefix+"a", "a1", "name: a1\n", 1)
	putPlaybook(ctx, t, s, prefix+"a", "a2", "name: a2\n", 2)
	all, err := s.PlaybookList(ctx)
	if err != nil {
		t.Fatalf("PlaybookList: %v", err)
	}
	if !sort.SliceIsSorted(all, func(i, j int) bool { return all[i].Path < all[j].Path }) {
		t.Error("PlaybookList is not sorted by path")
	}
	var got []store.PlaybookSummary
	for _, p := range all {
		if len(p.Path) > len(prefix) && p.Path[:len(prefix)] == prefix {
			if p.UpdatedAt.IsZero() {
				t.Errorf("%s: no updated_at", p.Path)
			}
			got = append(got, p)
		}
	}
	if len(got) != 2 || got[0].Path != prefix+"a" || got[0].Latest != 2 || got[0].Name != "a2" ||
		got[1].Path != prefix+"b" || got[1].Latest != 1 || got[1].Name != "b" {
		t.Fatalf("PlaybookList entries under %s = %+v; want a (latest 2, name a2) and b (latest 1)", prefix, got)
	}
}

// testPlaybookConcurrentPut: concurrent registrations of distinct sources
// of one path get distinct versions 1..N.
func testPlaybookConcurrentPut(ctx context.Context, t *testing.T, s store.Store) {
	path := "tests/storetest/" + uniqueID(t)
	versions := make([]int, concurrency)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() {
			versions[i], errs[i] = s.PlaybookPut(ctx, store.PlaybookPutParams{Path: path, Name: "p", Source: fmt.Sprintf("name: p%d\n", i)})
		})
	}
	wg.Wait()
	seen := map[int]int{}
	for i := range concurrency {
		if errs[i] != nil {
			t.Fatalf("PlaybookPut #%d: %v", i, errs[i])
		}
		seen[versions[i]]++
		if v := getPlaybook(ctx, t, s, path, versions[i]); v.Source != fmt.Sprintf("name: p%d\n", i) {
			t.Errorf("version %d holds %q, want the source of put #%d", versions[i], v.Source, i)
		}
	}
	for v := 1; v <= concurrency; v++ {
		if seen[v] != 1 {
			t.Fatalf("versions assigned %v; want 1..%d once each", seen, concurrency)
		}
	}
	if v := getPlaybook(ctx, t, s, path, 0); v.Version != concurrency {
		t.Fatalf("latest version %d, want %d", v.Version, concurrency)
	}
}
