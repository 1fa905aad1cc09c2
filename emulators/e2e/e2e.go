// Package e2e holds the end-to-end tests of the engine on the local
// emulator stack: the NoETL conformance playbooks run unchanged through
// scripts/run, the control loop's idempotency under duplicate delivery, and
// invalid input. The tests need the stack (scripts/up) and its environment
// (.stack/env); scripts/test provides both and sets NOETL_STACK=1, which
// turns a missing stack into a failure instead of a skip.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/bus/pubsubbus"
	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/types"
)

func init() {
	// The api and emit refuse anonymous calls: every request of the tests
	// to the functions host carries the stack's token (NOETL_API_TOKEN in
	// .stack/env), as the CLI's do.
	http.DefaultClient.Transport = stackAuth{base: http.DefaultTransport}
}

// stackAuth adds "Authorization: Bearer $NOETL_API_TOKEN" to requests for
// the api and emit of the functions host ($NOETL_FUNCTIONS_URL) that carry
// none (execute takes the Cloud Tasks OIDC token instead: oidc.go).
type stackAuth struct{ base http.RoundTripper }

func (a stackAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, base := os.Getenv("NOETL_API_TOKEN"), os.Getenv("NOETL_FUNCTIONS_URL")
	u := r.URL.String()
	if tok == "" || base == "" || r.Header.Get("Authorization") != "" || !(strings.HasPrefix(u, base+"/api") || strings.HasPrefix(u, base+"/emit")) {
		return a.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return a.base.RoundTrip(r)
}

// Anonymous is an HTTP client that sends no token (for tests of the
// api's refusals).
var Anonymous = &http.Client{Transport: http.DefaultTransport}

// RepoRoot returns the repository root (two levels above this file).
func RepoRoot() string {
	_, f, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(f), "..", ".."))
}

// ConformanceDir returns the directory of the vendored conformance
// playbooks, emulators/e2e/testdata/conformance: NoETL's fixture playbooks
// copied byte for byte, the older set under noetl/ and the DSL v2 set under
// noetl-v2/ (origin, commits and licence in its SOURCE.md; the outcomes in
// its READMEs).
func ConformanceDir() string {
	return filepath.Join(RepoRoot(), "emulators", "e2e", "testdata", "conformance")
}

// Conformance returns the path of one vendored conformance playbook: set is
// "noetl" or "noetl-v2", name the path inside it (e.g.
// "playbooks/hello_world/hello_world.yaml" for noetl-v2).
func Conformance(set, name string) string {
	return filepath.Join(ConformanceDir(), set, filepath.FromSlash(name))
}

// RequireStack skips the test when the stack is not up, or fails it when
// NOETL_STACK=1 (set by scripts/test) says the stack must be there.
func RequireStack(t testing.TB) {
	t.Helper()
	url := os.Getenv("NOETL_FUNCTIONS_URL")
	if url == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatal("NOETL_STACK=1 but NOETL_FUNCTIONS_URL is unset: source .stack/env")
		}
		t.Skip("local stack not configured (run scripts/test, or scripts/up and source .stack/env)")
	}
	// The functions host may be restarting after an injected crash.
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/api/healthz")
		if err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			return
		}
		if err == nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("stack not healthy at %s: %v", url, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// RunResult is the outcome of scripts/run.
type RunResult struct {
	Code        int
	Stdout      string
	Stderr      string
	ExecutionID string         `json:"execution_id"`
	Status      string         `json:"status"`
	DurationMS  float64        `json:"duration_ms"`
	Steps       map[string]any `json:"steps"`
}

// Run runs scripts/run on a playbook with an optional workload JSON.
func Run(t testing.TB, playbook string, workload string) RunResult {
	t.Helper()
	args := []string{filepath.Join(RepoRoot(), "scripts", "run"), playbook, "--quiet", "--timeout", "10m", "-o", "json"}
	if workload != "" {
		args = append(args, "--workload", workload)
	}
	cmd := exec.Command("bash", args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := RunResult{Stdout: so.String(), Stderr: se.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("scripts/run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if last := lines[len(lines)-1]; strings.HasPrefix(last, "{") {
		var m map[string]any
		if err := jsonx.Unmarshal([]byte(last), &m); err == nil {
			r.ExecutionID, _ = m["execution_id"].(string)
			r.Status, _ = m["status"].(string)
			r.Steps, _ = m["steps"].(map[string]any)
			switch d := m["duration_ms"].(type) {
			case int64:
				r.DurationMS = float64(d)
			case float64:
				r.DurationMS = d
			}
		}
	}
	return r
}

// Events fetches an execution's projected events once they are all
// projected: it waits until the log is complete (inspect.LogComplete:
// playbook.finished, every started unit's end, an ok loop's every
// iteration), then until the list stops growing (batches are projected
// in any order, and under delivery chaos some arrive after the final
// one).
func Events(t testing.TB, id string) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	settle := 300 * time.Millisecond
	if os.Getenv("NOETL_DELIVERY_CHAOS") != "" {
		settle = 1500 * time.Millisecond
	}
	var finishedAt time.Time
	last := -1
	for {
		evs := fetchEvents(t, id)
		ended := false
		for _, e := range evs {
			if e["event_type"] == "playbook.finished" {
				ended = true
			}
		}
		finished := ended && logComplete(t, id, evs)
		if finished && finishedAt.IsZero() {
			finishedAt = time.Now()
		}
		if finished && len(evs) == last && time.Since(finishedAt) >= settle {
			recordEvents(t, id)
			return evs
		}
		last = len(evs)
		if time.Now().After(deadline) {
			if finished {
				return evs
			}
			if ended {
				t.Fatalf("the log of %s holds playbook.finished but is not complete after 60 s (a started unit without its end, or an ok loop without an iteration's end; %d events)", id, len(evs))
			}
			t.Fatalf("playbook.finished of %s never projected (%d events)", id, len(evs))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// recordEvents appends the execution's events, as the events API returns
// them (one compact JSON object per line), to the file named by
// NOETL_E2E_RECORD_EVENTS when it is set: the recordings the typed
// payloads' round-trip test is curated from (shared/history
// TestRecordedEvents -update).
func recordEvents(t testing.TB, id string) {
	path := os.Getenv("NOETL_E2E_RECORD_EVENTS")
	if path == "" {
		return
	}
	resp, err := http.Get(os.Getenv("NOETL_FUNCTIONS_URL") + "/api/executions/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("record events: %v", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, e := range body.Events {
		var line bytes.Buffer
		if err := json.Compact(&line, e); err != nil {
			t.Fatal(err)
		}
		line.WriteByte('\n')
		if _, err := f.Write(line.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
}

// fetchEvents reads the events API once.
func fetchEvents(t testing.TB, id string) []map[string]any {
	t.Helper()
	resp, err := http.Get(os.Getenv("NOETL_FUNCTIONS_URL") + "/api/executions/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var body map[string]any
	if err := jsonx.Unmarshal(b, &body); err != nil {
		t.Fatalf("events: %v: %s", err, b)
	}
	list, _ := body["events"].([]any)
	evs := make([]map[string]any, 0, len(list))
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			evs = append(evs, m)
		}
	}
	return evs
}

// logComplete reports inspect.LogComplete of the execution's status and
// evs (false when either does not decode).
func logComplete(t testing.TB, id string, evs []map[string]any) bool {
	t.Helper()
	resp, err := http.Get(os.Getenv("NOETL_FUNCTIONS_URL") + "/api/executions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st inspect.Status
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &st) != nil {
		return false
	}
	raw, err := json.Marshal(evs)
	if err != nil {
		return false
	}
	var typed []types.Event
	if json.Unmarshal(raw, &typed) != nil {
		return false
	}
	return inspect.LogComplete(&st, typed)
}

// Count counts events matching type and step ("" = any).
func Count(evs []map[string]any, typ, step string) int {
	n := 0
	for _, e := range evs {
		if e["event_type"] == typ && (step == "" || e["step"] == step) {
			n++
		}
	}
	return n
}

// MustJSON encodes v.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return string(b)
}

func jsonUnmarshal(s string, v any) error { return jsonx.Unmarshal([]byte(s), v) }

func randSuffix() string { return fmt.Sprintf("%d", time.Now().UnixNano()) }

// waitDone polls GET /executions/{id} until the execution finishes.
func waitDone(t testing.TB, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(os.Getenv("NOETL_FUNCTIONS_URL") + "/api/executions/" + id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var m map[string]any
		if err := jsonx.Unmarshal(b, &m); err == nil {
			if s := m["status"]; s == "ok" || s == "failed" {
				return m
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("execution %s did not finish", id)
	return nil
}

// Signer returns the stack's signer (NOETL_SIGNING_KEY from .stack/env):
// tests that play the engine's part (re-deliveries) sign with it.
func Signer(t testing.TB) *sign.Signer {
	t.Helper()
	s, err := sign.Parse(os.Getenv("NOETL_SIGNING_KEY"))
	if err != nil {
		t.Fatalf("NOETL_SIGNING_KEY: %v (source .stack/env)", err)
	}
	return s
}

// PostUnit posts a command to execute as Cloud Tasks would — with the
// stack's OIDC token — signed with sig ("" = unsigned), and returns the
// status and body.
func PostUnit(t testing.TB, body []byte, sig string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, os.Getenv("NOETL_FUNCTIONS_URL")+"/execute", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CloudTasks-TaskName", "e2e-"+randSuffix())
	if sig != "" {
		req.Header.Set(sign.Header, sig)
	}
	req.Header.Set("Authorization", ExecuteAuthorization(t))
	resp, err := Anonymous.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// PublishBatch publishes an event batch on the stack's events topic with
// signer (nil: unsigned), as a function would.
func PublishBatch(t testing.TB, signer *sign.Signer, b types.Batch) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := pubsubbus.Open(ctx, os.Getenv("GOOGLE_CLOUD_PROJECT"), "events", "commands", signer)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.PublishBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
}
