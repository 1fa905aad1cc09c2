package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestDemoRetriesThroughTheDefaultPolicy: the main job
// (examples/countries_etl.yaml) with its http tasks' own retry policies
// removed, in a copy, still ends ok against the fixture API's injected
// 503s: the default policy (NOETL_RETRIES_PLUGIN_*) retries them, as the
// policy.task.evaluated events of rule -1 with do: retry show.
func TestDemoRetriesThroughTheDefaultPolicy(t *testing.T) {
	RequireStack(t)
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "examples", "countries_etl.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, s := range doc["workflow"].([]any) {
		tasks, _ := s.(map[string]any)["tool"].([]any)
		for _, it := range tasks {
			for _, v := range it.(map[string]any) {
				task, _ := v.(map[string]any)
				if task["kind"] == "http" && task["spec"] != nil {
					delete(task, "spec")
					removed++
				}
			}
		}
	}
	if removed != 2 {
		t.Fatalf("removed the policy of %d http tasks, want the demo's 2", removed)
	}
	meta := doc["metadata"].(map[string]any)
	meta["name"], meta["path"] = "countries_etl_default_policy", "tests/e2e/countries_etl_default_policy"
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "countries_etl_default_policy.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(os.Getenv("NOETL_FIXTURES_URL")+"/inject/reset", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := Run(t, path, MustJSON(map[string]any{"api_url": os.Getenv("NOETL_FIXTURES_URL"), "pg_dsn": os.Getenv("NOETL_PG_DSN")}))
	if r.Code != 0 || r.Status != "ok" {
		t.Fatalf("the demo without its own policies: exit %d, status %q\n%s\n%s", r.Code, r.Status, r.Stdout, r.Stderr)
	}
	retries := 0
	for _, e := range Events(t, r.ExecutionID) {
		if e["event_type"] != "policy.task.evaluated" {
			continue
		}
		p, _ := e["payload"].(map[string]any)
		if p["do"] == "retry" && p["rule"] == int64(-1) || p["do"] == "retry" && p["rule"] == float64(-1) {
			retries++
		}
	}
	if retries == 0 {
		t.Fatal("no retry decided by the default policy: the fixture's 503s were not met or not retried by it")
	}
	t.Logf("%d retries by the default policy", retries)
}
