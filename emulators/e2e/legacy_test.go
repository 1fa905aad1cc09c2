package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Legacy forms run after normalisation, with a deprecation warning: a
// seed-001 step retry block retries an endpoint that fails twice, a
// `next:` list routes, and NoETL distributed loop design's retry.on_success pages through all 35
// items into one list.
func TestLegacyFormsRun(t *testing.T) {
	RequireStack(t)
	key := "legacy-" + randSuffix()
	wl := MustJSON(map[string]any{"api_url": os.Getenv("NOETL_FIXTURES_URL"), "flaky_key": key})
	r := Run(t, filepath.Join(RepoRoot(), "examples", "legacy_forms.yaml"), wl)
	ok(t, r)
	for _, w := range []string{"legacy retry is deprecated", "next as a list is deprecated", "retry.on_success is deprecated"} {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("no warning %q", w)
		}
	}
	end := step(t, r, "end")
	if asInt(end["count"]) != 35 || asInt(end["first"]) != 1 || asInt(end["last"]) != 35 {
		t.Fatalf("end = %v", end)
	}
	if _, ran := r.Steps["broken"]; ran {
		t.Fatal("the legacy next list took the wrong branch")
	}
	evs := Events(t, r.ExecutionID)
	if n := Count(evs, "task.attempt.started", "start"); n != 3 {
		t.Fatalf("start made %d attempts, want 3 (two 503s then 200)", n)
	}
	if n := Count(evs, "task.attempt.started", "fetch_all"); n != 5 {
		t.Fatalf("fetch_all made %d attempts, want 4 pages + the collect noop = 5", n)
	}
}
