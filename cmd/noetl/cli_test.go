package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/noetl/gcpengine/shared/display"
	"github.com/noetl/gcpengine/shared/dsl/schema"
)

const validPlaybook = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: hello, path: examples/hello}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      arcs: [{step: end}]
  - step: end
    tool: {kind: noop}
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// commandPaths lists every command of the tree ("dlq replay", ...).
func commandPaths(c *cobra.Command, prefix []string, out *[][]string) {
	for _, sub := range c.Commands() {
		if sub.Name() == "help" {
			continue
		}
		p := append(append([]string(nil), prefix...), sub.Name())
		*out = append(*out, p)
		commandPaths(sub, p, out)
	}
}

// Every command answers --help on stdout with exit 0, its usage and its
// description; the root help documents the exit codes and global flags.
func TestHelpEveryCommand(t *testing.T) {
	a, _, _ := testApp(nil)
	var paths [][]string
	commandPaths(a.rootCmd(), nil, &paths)
	want := []string{"validate", "lint", "schema", "run", "list", "describe", "events", "cancel", "cost", "trace",
		"dlq", "dlq list", "dlq show", "dlq replay", "dlq discard",
		"catalog", "catalog register", "catalog list", "catalog show",
		"credentials", "credentials set", "credentials list", "credentials show", "credentials delete",
		"subscription", "subscription register", "subscription list", "subscription describe", "subscription delete"}
	var got []string
	for _, p := range paths {
		got = append(got, strings.Join(p, " "))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("command %q missing (have %v)", w, got)
		}
	}
	for _, p := range paths {
		a, so, se := testApp(nil)
		r := execApp(a, so, se, append(p, "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage:") || !strings.Contains(r.stdout, "noetl "+strings.Join(p, " ")) || !strings.Contains(r.stdout, "--api-url") {
			t.Errorf("%v --help: code %d\n%s%s", p, r.code, r.stdout, r.stderr)
		}
	}
	a, so, se := testApp(nil)
	r := execApp(a, so, se, "--help")
	for _, w := range []string{"Exit codes:", "1  the execution failed", "2  invalid input", "3  not found", "4  api unreachable", "--token", "--output", "$NOETL_API_URL", "gcloud auth print-identity-token"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("root help lacks %q", w)
		}
	}
	// status is describe's alias.
	a, so, se = testApp(nil)
	if r := execApp(a, so, se, "status", "--help"); r.code != 0 || !strings.Contains(r.stdout, "describe ID") {
		t.Errorf("status --help: %d %s", r.code, r.stdout)
	}
}

// Usage errors exit 2 with a message on stderr, before any request.
func TestUsageErrors(t *testing.T) {
	f := newFake(t)
	secretData := writeFile(t, "bad.json", `{"password": "hunter2"`)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{nil, "Usage:"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"describe"}, "accepts 1 arg(s), received 0"},
		{[]string{"describe", "a", "b"}, "accepts 1 arg(s), received 2"},
		{[]string{"validate"}, "requires at least 1 arg"},
		{[]string{"list", "--output", "yaml"}, `--output "yaml": want table or json`},
		{[]string{"list", "--status", "bogus"}, `--status "bogus": want one of requested, running, ok, failed, canceled`},
		{[]string{"list", "--limit", "0"}, "--limit 0"},
		{[]string{"list", "--limit", "x"}, `invalid argument "x"`},
		{[]string{"run", "--bogus", "x.yaml"}, "unknown flag: --bogus"},
		{[]string{"dlq"}, "Usage:"},
		{[]string{"dlq", "bogus"}, `unknown command "bogus" for "noetl dlq"`},
		{[]string{"dlq", "list", "--status", "finished"}, `--status "finished": want one of pending, replayed, discarded, done`},
		{[]string{"dlq", "discard", "m1"}, "needs --reason"},
		{[]string{"dlq", "replay", "m1", "--patch", "novalue"}, `--patch "novalue": want key=value`},
		{[]string{"dlq", "replay", "m1", "--patch", "=v"}, `--patch "=v": want key=value`},
		{[]string{"catalog", "show", "p", "--version", "-1"}, "--version -1"},
		{[]string{"credentials", "set", "pg"}, "needs --kind"},
		{[]string{"credentials", "set", "pg", "--kind", "postgres"}, "needs --data"},
		{[]string{"credentials", "set", "pg", "--kind", "postgres", "--data", "[1]"}, "--data is not a JSON object"},
		{[]string{"credentials", "set", "pg", "--kind", "postgres", "--data", "@" + secretData}, "--data is not a JSON object"},
		{[]string{"credentials", "set", "pg", "--kind", "postgres", "--data", "@/nonexistent/x.json"}, "no such file"},
		{[]string{"run", "/nonexistent/x.yaml"}, "no such file"},
	} {
		r := f.cli(c.args...)
		if r.code != ExitInvalid || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%v: code %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.msg)
		}
		if strings.Contains(r.stderr, "hunter2") {
			t.Errorf("%v: a secret value is echoed: %s", c.args, r.stderr)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("usage errors sent %d requests: %+v", n, f.requests())
	}
}

func TestAPIURLSelection(t *testing.T) {
	for _, c := range []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"", nil, DefaultAPIURL},
		{"", map[string]string{"NOETL_FUNCTIONS_URL": "http://127.0.0.1:9280/"}, "http://127.0.0.1:9280/api"},
		{"", map[string]string{"NOETL_FUNCTIONS_URL": "http://127.0.0.1:9280", "NOETL_API_URL": "https://api.example.test/"}, "https://api.example.test"},
		{"https://flag.example.test/api/", map[string]string{"NOETL_API_URL": "https://api.example.test"}, "https://flag.example.test/api"},
	} {
		a, _, _ := testApp(c.env)
		a.apiURL = c.flag
		if got := a.base(); got != c.want {
			t.Errorf("flag %q env %v: base %q, want %q", c.flag, c.env, got, c.want)
		}
	}
	// The flag reaches the wire.
	f := newFake(t)
	f.reply("GET /executions", 200, map[string]any{"executions": []any{}})
	a, so, se := testApp(map[string]string{"NOETL_API_URL": "http://127.0.0.1:1/api"})
	if r := execApp(a, so, se, "list", "--api-url", f.URL()); r.code != 0 || f.count("GET /executions") != 1 {
		t.Errorf("--api-url not used: %+v", r)
	}
}

func TestIsLocal(t *testing.T) {
	for u, want := range map[string]bool{
		"http://127.0.0.1:8680/api": true, "http://localhost:8680/api": true, "http://[::1]:8680": true,
		"http://127.0.0.2/api": true, "http://api.localhost/": true,
		"https://api-abc-uc.a.run.app": false, "http://10.0.0.1:8680/api": false, "https://localhost.example.com": false,
	} {
		if got := isLocal(u); got != want {
			t.Errorf("isLocal(%q) = %v, want %v", u, got, want)
		}
	}
}

// fakeGcloud writes a gcloud script printing token (and recording its
// arguments in argsFile), or failing with msg when token is "".
func fakeGcloud(t *testing.T, token, msg string) (dir, argsFile string) {
	t.Helper()
	dir = t.TempDir()
	argsFile = filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" > '" + argsFile + "'\n"
	if token != "" {
		script += "echo '" + token + "'\n"
	} else {
		script += "echo '" + msg + "' >&2\nexit 1\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "gcloud"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, argsFile
}

// The bearer token: --token, else NOETL_API_TOKEN, else for a non-local
// api an identity token from gcloud with the api URL as audience; none
// for a local api; a missing or failing gcloud is exit 4.
func TestTokenSelection(t *testing.T) {
	f := newFake(t)
	f.reply("GET /executions", 200, map[string]any{"executions": []any{}})
	const remote = "http://api-abc-uc.a.run.app" // not local; the client dials the fake
	good, goodArgs := fakeGcloud(t, "id-token-from-gcloud", "")
	bad, _ := fakeGcloud(t, "", "ERROR: (gcloud.auth.print-identity-token) You do not currently have an active account selected.")
	empty := t.TempDir()
	for _, c := range []struct {
		name     string
		url      string
		flag     string
		env      map[string]string
		wantCode int
		wantAuth string
		wantErr  string
		audience string
	}{
		{name: "local, none", url: "local", wantAuth: ""},
		{name: "local, env", url: "local", env: map[string]string{"NOETL_API_TOKEN": "env-tok"}, wantAuth: "Bearer env-tok"},
		{name: "local, flag beats env", url: "local", flag: "flag-tok", env: map[string]string{"NOETL_API_TOKEN": "env-tok"}, wantAuth: "Bearer flag-tok"},
		{name: "remote, flag (no gcloud needed)", url: remote, flag: "flag-tok", env: map[string]string{"PATH": empty}, wantAuth: "Bearer flag-tok"},
		{name: "remote, env", url: remote, env: map[string]string{"PATH": good, "NOETL_API_TOKEN": "env-tok"}, wantAuth: "Bearer env-tok"},
		{name: "remote, gcloud", url: remote, env: map[string]string{"PATH": empty + string(os.PathListSeparator) + good}, wantAuth: "Bearer id-token-from-gcloud", audience: "auth print-identity-token --audiences=" + remote + " --include-email"},
		{name: "remote, gcloud as the operator", url: remote + "/", env: map[string]string{"PATH": good, "NOETL_IMPERSONATE_SERVICE_ACCOUNT": "noetl-operator@p.iam.gserviceaccount.com"}, wantAuth: "Bearer id-token-from-gcloud",
			audience: "auth print-identity-token --audiences=" + remote + " --include-email --impersonate-service-account=noetl-operator@p.iam.gserviceaccount.com"},
		{name: "remote, no gcloud", url: remote, env: map[string]string{"PATH": empty}, wantCode: ExitUnavailable, wantErr: "gcloud is not on PATH"},
		{name: "remote, gcloud fails", url: remote, env: map[string]string{"PATH": bad}, wantCode: ExitUnavailable, wantErr: "You do not currently have an active account"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range c.env {
				env[k] = v
			}
			a, so, se := testApp(env)
			a.hc = dialTo(f.srv.Listener.Addr().String())
			url := c.url
			if url == "local" {
				url = f.URL()
			}
			env["NOETL_API_URL"] = url
			args := []string{"list"}
			if c.flag != "" {
				args = append(args, "--token", c.flag)
			}
			before := len(f.requests())
			r := execApp(a, so, se, args...)
			if r.code != c.wantCode || !strings.Contains(r.stderr, c.wantErr) {
				t.Fatalf("code %d stderr %q; want %d %q", r.code, r.stderr, c.wantCode, c.wantErr)
			}
			reqs := f.requests()[before:]
			if c.wantCode != 0 {
				if len(reqs) != 0 {
					t.Errorf("a request went out without a token: %+v", reqs)
				}
				return
			}
			if len(reqs) != 1 || reqs[0].Auth != c.wantAuth {
				t.Fatalf("requests %+v; want one with Authorization %q", reqs, c.wantAuth)
			}
			if c.audience != "" {
				b, err := os.ReadFile(goodArgs)
				if err != nil || strings.TrimSpace(string(b)) != c.audience {
					t.Errorf("gcloud called with %q (%v), want %q", b, err, c.audience)
				}
			}
		})
	}
}

// The output format: --output, else NOETL_OUTPUT, else table on a
// terminal and json otherwise.
func TestOutputDefault(t *testing.T) {
	f := newFake(t)
	f.reply("GET /executions", 200, map[string]any{"executions": []any{map[string]any{"execution_id": "e1", "status": "ok", "playbook": "hello", "created_at": "2026-01-02T03:04:05.123Z"}}})
	for _, c := range []struct {
		tty   bool
		env   string
		flag  string
		table bool
	}{
		{tty: false, table: false},
		{tty: true, table: true},
		{tty: true, env: "json", table: false},
		{tty: false, env: "table", table: true},
		{tty: true, env: "table", flag: "json", table: false},
		{tty: false, flag: "table", table: true},
	} {
		a, so, se := testApp(map[string]string{"NOETL_API_URL": f.URL(), "NOETL_OUTPUT": c.env})
		a.isTTY = c.tty
		args := []string{"list"}
		if c.flag != "" {
			args = append(args, "-o", c.flag)
		}
		r := execApp(a, so, se, args...)
		isTable := strings.HasPrefix(r.stdout, "EXECUTION")
		isJSON := json.Valid([]byte(r.stdout))
		if r.code != 0 || isTable != c.table || isJSON == c.table {
			t.Errorf("%+v: code %d table=%v json=%v:\n%s", c, r.code, isTable, isJSON, r.stdout)
		}
	}
}

// Each api failure maps to its exit code with the api's message.
func TestErrorMapping(t *testing.T) {
	for _, c := range []struct {
		code     int
		body     any
		wantCode int
		wantMsg  string
	}{
		{404, map[string]any{"error": "execution e1 not found"}, ExitNotFound, "execution e1 not found (404)"},
		{404, nil, ExitNotFound, "execution e1 not found"},
		{400, map[string]any{"error": "bad id"}, ExitInvalid, "bad id (400)"},
		{401, map[string]any{"error": "missing bearer token"}, ExitUnavailable, "unauthorized (401): missing bearer token"},
		{403, map[string]any{"error": "role viewer may not"}, ExitUnavailable, "unauthorized (403): role viewer may not"},
		{500, map[string]any{"error": "boom"}, ExitUnavailable, "answered 500 to GET /executions/e1: boom"},
		{503, map[string]any{"error": "firestore unavailable"}, ExitUnavailable, "answered 503"},
	} {
		f := newFake(t)
		f.reply("GET /executions/e1", c.code, c.body)
		r := f.cli("describe", "e1")
		if r.code != c.wantCode || !strings.Contains(r.stderr, c.wantMsg) || r.stdout != "" {
			t.Errorf("%d %v: code %d stderr %q stdout %q; want %d %q", c.code, c.body, r.code, r.stderr, r.stdout, c.wantCode, c.wantMsg)
		}
	}
	// A route the api does not have (an older deployment) is not "not found".
	f := newFake(t)
	if r := f.cli("dlq", "list"); r.code != ExitUnavailable || !strings.Contains(r.stderr, "does not serve GET /dlq") {
		t.Errorf("missing route: %+v", r)
	}
	// Unreachable.
	srv := newFake(t)
	url := srv.URL()
	srv.srv.Close()
	a, so, se := testApp(map[string]string{"NOETL_API_URL": url})
	for _, args := range [][]string{{"list"}, {"describe", "e1"}, {"events", "e1"}, {"cancel", "e1"}, {"cost", "e1"}, {"dlq", "show", "m"}, {"catalog", "list"}, {"credentials", "list"}} {
		a, so, se = testApp(map[string]string{"NOETL_API_URL": url})
		r := execApp(a, so, se, args...)
		if r.code != ExitUnavailable || !strings.Contains(r.stderr, "api unreachable at "+url) {
			t.Errorf("%v unreachable: %+v", args, r)
		}
	}
	// A local api that is down hints at scripts/up.
	a, so, se = testApp(map[string]string{"NOETL_API_URL": url})
	if r := execApp(a, so, se, "list"); !strings.Contains(r.stderr, "scripts/up") {
		t.Errorf("no scripts/up hint: %s", r.stderr)
	}
}

func TestValidateAndLint(t *testing.T) {
	good := writeFile(t, "good.yaml", validPlaybook)
	bad := writeFile(t, "bad.yaml", "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkflow:\n  - step: start\n    tool: {kind: nosuchkind}\n")
	f := newFake(t)
	r := f.cli("validate", good)
	if r.code != 0 || r.stdout != good+": ok (2 steps)\n" {
		t.Errorf("validate good: %+v", r)
	}
	r = f.cli("validate", good, bad)
	if r.code != ExitInvalid || !strings.Contains(r.stdout, good+": ok") || !strings.Contains(r.stderr, "bad.yaml:6") {
		t.Errorf("validate bad: %+v", r)
	}
	r = f.cli("lint", good)
	if r.code != 0 || !strings.HasSuffix(r.stdout, good+": 0 finding(s)\n") {
		t.Errorf("lint good: %+v", r)
	}
	r = f.cli("lint", bad)
	if r.code != ExitInvalid || !strings.Contains(r.stderr, "bad.yaml:6") {
		t.Errorf("lint bad: %+v", r)
	}
	if len(f.requests()) != 0 {
		t.Errorf("validate/lint called the api")
	}
}

// TestValidateDirectory: a directory stands for the YAML files under it
// (recursively, lexical order) and the last stdout line counts them — how
// NoETL's fixture sets are measured (README "The DSL").
func TestValidateDirectory(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a/good.yaml":  validPlaybook,
		"b/c/bad.yml":  "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkflow:\n  - step: start\n    tool: {kind: nosuchkind}\n",
		"b/notes.txt":  "not yaml",
		"z/other.yaml": validPlaybook,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := newFake(t)
	r := f.cli("validate", dir)
	want := filepath.Join(dir, "a/good.yaml") + ": ok (2 steps)\n" + filepath.Join(dir, "z/other.yaml") + ": ok (2 steps)\n2 of 3 files valid\n"
	if r.code != ExitInvalid || r.stdout != want || !strings.Contains(r.stderr, "bad.yml:6") {
		t.Errorf("validate DIR: %+v\nwant stdout %q", r, want)
	}
	if r := f.cli("validate", t.TempDir()); r.code != ExitInvalid || !strings.Contains(r.stderr, "no *.yaml or *.yml file under it") {
		t.Errorf("validate empty DIR: %+v", r)
	}
}

// runFake serves POST /executions and a status sequence for id "e1".
func runFake(t *testing.T, statuses ...map[string]any) *fakeAPI {
	f := newFake(t)
	f.reply("POST /executions", 202, map[string]any{"execution_id": "e1", "status": "requested", "warnings": []any{}})
	n := 0
	f.on("GET /executions/e1", func(w http.ResponseWriter, r *http.Request) {
		s := statuses[min(n, len(statuses)-1)]
		n++
		writeFake(w, 200, s)
	})
	return f
}

func TestRun(t *testing.T) {
	pb := writeFile(t, "pb.yaml", validPlaybook)
	running := map[string]any{"execution_id": "e1", "status": "running", "steps": map[string]any{
		"start": map[string]any{"status": "running", "run": 1},
		"loop":  map[string]any{"status": "running", "run": 2, "loop": map[string]any{"done": 3, "total": 10}}}}
	done := func(status string) map[string]any {
		return map[string]any{"execution_id": "e1", "status": status, "duration_ms": 1234,
			"steps":    map[string]any{"start": map[string]any{"status": "ok", "run": 1}},
			"results":  map[string]any{"start": map[string]any{"n": 1}},
			"failures": nil}
	}
	failed := done("failed")
	failed["failures"] = []any{"step start failed: boom"}
	for _, c := range []struct {
		name       string
		statuses   []map[string]any
		args       []string
		wantCode   int
		wantStdout string
		wantStderr []string
	}{
		{"ok", []map[string]any{running, done("ok")}, nil, 0,
			`{"duration_ms":1234,"execution_id":"e1","status":"ok","steps":{"start":{"n":1}}}` + "\n",
			[]string{"execution e1 started (" + pb + ")", "  loop                         running (run 2) loop 3/10", "  start                        ok"}},
		{"failed", []map[string]any{done("failed")}, nil, ExitFailed, "", []string{"execution e1 started"}},
		{"failures listed", []map[string]any{failed}, nil, ExitFailed,
			`{"duration_ms":1234,"execution_id":"e1","failures":["step start failed: boom"],"status":"failed","steps":{"start":{"n":1}}}` + "\n", nil},
		{"canceled", []map[string]any{done("canceled")}, nil, ExitFailed, "", nil},
		{"quiet", []map[string]any{running, done("ok")}, []string{"--quiet"}, 0, "", nil},
		{"timeout", []map[string]any{running}, []string{"--timeout", "50ms"}, ExitFailed, "", []string{"execution e1 still running after 50ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := runFake(t, c.statuses...)
			r := f.cli(append([]string{"run", pb, "--workload", `{"a": 1}`}, c.args...)...)
			if r.code != c.wantCode {
				t.Fatalf("code %d, want %d: %+v", r.code, c.wantCode, r)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if c.wantCode != ExitFailed || c.name != "timeout" {
				var m map[string]any
				if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &m) != nil || m["execution_id"] != "e1" {
					t.Errorf("stdout is not one JSON line: %q", r.stdout)
				}
			}
			if c.wantStdout != "" && r.stdout != c.wantStdout {
				t.Errorf("stdout %q, want %q", r.stdout, c.wantStdout)
			}
			for _, w := range c.wantStderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if c.name == "quiet" && r.stderr != "" {
				t.Errorf("--quiet printed %q", r.stderr)
			}
			post := f.requests()[0]
			if post.Method != "POST" || post.Path != "/executions" || post.Body["playbook"] != validPlaybook ||
				!reflect.DeepEqual(post.Body["workload"], map[string]any{"a": float64(1)}) {
				t.Errorf("POST %+v", post)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	pb := writeFile(t, "pb.yaml", validPlaybook)
	invalid := writeFile(t, "bad.yaml", "apiVersion: noetl.io/v2\nkind: Playbook\nworkflow: 3\n")
	f := newFake(t)
	if r := f.cli("run", invalid); r.code != ExitInvalid || !strings.Contains(r.stderr, "bad.yaml") {
		t.Errorf("invalid playbook: %+v", r)
	}
	if r := f.cli("run", pb, "--workload", "[1]"); r.code != ExitInvalid || !strings.Contains(r.stderr, "--workload is not a JSON object") {
		t.Errorf("bad workload: %+v", r)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("invalid input reached the api: %d requests", n)
	}
	f.reply("POST /executions", 400, map[string]any{"error": "invalid playbook", "problems": []any{map[string]any{"line": 3, "message": "x"}}})
	if r := f.cli("run", pb); r.code != ExitInvalid || !strings.Contains(r.stderr, "rejected:") || !strings.Contains(r.stderr, `"line":3`) {
		t.Errorf("400: %+v", r)
	}
	// The execution vanishes (404) while polling: exit 3 at once.
	f.reply("POST /executions", 202, map[string]any{"execution_id": "gone"})
	f.reply("GET /executions/gone", 404, map[string]any{"error": "execution gone not found"})
	t0 := time.Now()
	if r := f.cli("run", pb); r.code != ExitNotFound || !strings.Contains(r.stderr, "execution gone not found (404)") || time.Since(t0) > 2*time.Second {
		t.Errorf("404 while polling: %+v", r)
	}
	// A credential the playbook is not granted: the request is refused,
	// exit 2 with the api's message (not a token problem).
	refusal := `credential "pg" is not granted to inline playbooks of "token" (its grants are examples/*; grant it with ...)`
	f.reply("POST /executions", 403, map[string]any{"error": refusal})
	if r := f.cli("run", pb); r.code != ExitInvalid || !strings.Contains(r.stderr, refusal+" (403)") || strings.Contains(r.stderr, "--token") {
		t.Errorf("403 not granted: %+v", r)
	}
	// 401 on start.
	f.reply("POST /executions", 401, map[string]any{"error": "no token"})
	if r := f.cli("run", pb); r.code != ExitUnavailable || !strings.Contains(r.stderr, "unauthorized (401)") {
		t.Errorf("401: %+v", r)
	}
	// A 202 without an id.
	f.reply("POST /executions", 202, map[string]any{})
	if r := f.cli("run", pb); r.code != ExitUnavailable || !strings.Contains(r.stderr, "without an execution_id") {
		t.Errorf("no id: %+v", r)
	}
}

// run gives up with exit 4 when the api stops answering (5xx or down)
// for the give-up window, and rides out shorter outages.
func TestRunGivesUpOnDeadAPI(t *testing.T) {
	pb := writeFile(t, "pb.yaml", validPlaybook)
	// A short outage (two 503s) is ridden out.
	f := newFake(t)
	f.reply("POST /executions", 202, map[string]any{"execution_id": "e1"})
	n := 0
	f.on("GET /executions/e1", func(w http.ResponseWriter, r *http.Request) {
		n++
		if n <= 2 {
			writeFake(w, 503, map[string]any{"error": "unavailable"})
			return
		}
		writeFake(w, 200, map[string]any{"execution_id": "e1", "status": "ok", "results": map[string]any{}})
	})
	if r := f.cli("run", pb, "--quiet"); r.code != 0 {
		t.Errorf("short outage: %+v", r)
	}
	// 503 for ever: exit 4 after the window.
	f.reply("GET /executions/e1", 503, map[string]any{"error": "firestore unavailable"})
	t0 := time.Now()
	r := f.cli("run", pb, "--quiet")
	if r.code != ExitUnavailable || !strings.Contains(r.stderr, "has not answered for 400ms") || !strings.Contains(r.stderr, "firestore unavailable") {
		t.Errorf("503 for ever: %+v", r)
	}
	if d := time.Since(t0); d < 400*time.Millisecond || d > 3*time.Second {
		t.Errorf("gave up after %s, want about the 400ms window", d)
	}
	// The api goes away after the start.
	f2 := newFake(t)
	f2.reply("GET /executions/e1", 200, map[string]any{"execution_id": "e1", "status": "running"})
	f2.on("POST /executions", func(w http.ResponseWriter, r *http.Request) {
		writeFake(w, 202, map[string]any{"execution_id": "e1"})
		// Keep-alives off first, then no new connections, then the open
		// ones closed: a poll connection accepted just before the
		// listener closed would otherwise be kept alive and answer
		// "running" for ever (the test hung so, once in a few dozen runs).
		go func() {
			time.Sleep(20 * time.Millisecond)
			f2.srv.Config.SetKeepAlivesEnabled(false)
			f2.srv.Listener.Close()
			f2.srv.CloseClientConnections()
		}()
	})
	r = f2.cli("run", pb, "--quiet")
	if r.code != ExitUnavailable || !strings.Contains(r.stderr, "has not answered") || !strings.Contains(r.stderr, "api unreachable") {
		t.Errorf("api gone: %+v", r)
	}
}

func TestList(t *testing.T) {
	f := newFake(t)
	body := map[string]any{"executions": []any{
		map[string]any{"execution_id": "e2", "status": "running", "playbook": "hello", "created_at": "2026-01-02T03:04:05.123Z", "updated_at": "2026-01-02T03:04:06Z", "rerun_of": "e1"},
		map[string]any{"execution_id": "e1", "parent_id": "e0", "status": "failed", "playbook": "hello", "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:01Z"},
	}}
	f.reply("GET /executions", 200, body)
	r := f.cli("list", "--status", "running", "--playbook", "hello", "--limit", "7", "-o", "table")
	want := "EXECUTION  STATUS   PLAYBOOK  CREATED               UPDATED               PARENT  RERUN OF\n" +
		"e2         running  hello     2026-01-02 03:04:05Z  2026-01-02 03:04:06Z  -       e1\n" +
		"e1         failed   hello     2026-01-01 00:00:00Z  2026-01-01 00:00:01Z  e0      -\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("table:\n%s\nwant:\n%s\n%s", r.stdout, want, r.stderr)
	}
	if q := f.requests()[0].Query; q != "limit=7&playbook=hello&status=running" {
		t.Errorf("query %q", q)
	}
	r = f.cli("list")
	var got map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || len(got["executions"].([]any)) != 2 {
		t.Errorf("json: %+v", r)
	}
	if q := f.requests()[1].Query; q != "limit=50" {
		t.Errorf("default query %q", q)
	}
	f.reply("GET /executions", 200, map[string]any{"executions": []any{}})
	if r := f.cli("list", "-o", "table"); r.code != 0 || !strings.Contains(r.stderr, "no executions match") {
		t.Errorf("empty: %+v", r)
	}
	f.reply("GET /executions", 400, map[string]any{"error": `limit "5000" is not an integer in 1..1000`})
	if r := f.cli("list", "--limit", "5000"); r.code != ExitInvalid || !strings.Contains(r.stderr, "1..1000") {
		t.Errorf("400: %+v", r)
	}
}

// describeFake serves execution e1 with three steps and its events.
func describeFake(t *testing.T) *fakeAPI {
	f := newFake(t)
	f.reply("GET /executions/e1", 200, map[string]any{
		"execution_id": "e1", "playbook": "hello", "status": "failed", "version": 2,
		"created_at": "2026-01-02T03:04:05Z", "started_at": "2026-01-02T03:04:05.5Z", "finished_at": "2026-01-02T03:04:09Z", "duration_ms": 4000,
		"steps": map[string]any{
			"start": map[string]any{"status": "ok", "run": 1, "runs": 1, "duration_ms": 12},
			"fetch": map[string]any{"status": "ok", "run": 1, "runs": 1, "duration_ms": 2500, "loop": map[string]any{"total": 10, "done": 10, "mode": "parallel", "max_in_flight": 4}},
			"load":  map[string]any{"status": "failed", "run": 2, "runs": 2, "duration_ms": 900, "error": map[string]any{"kind": "http", "message": "503\nunavailable"}},
		},
		"failures": []any{"step load failed: 503"},
	})
	ev := func(id, typ, step string) map[string]any {
		return map[string]any{"event_id": id, "event_type": typ, "step": step, "timestamp": "2026-01-02T03:04:05.000Z"}
	}
	f.reply("GET /executions/e1/events", 200, map[string]any{"execution_id": "e1", "count": 12, "events": []any{
		ev("a", "playbook.started", ""),
		ev("b", "step.started", "start"), ev("c", "task.attempt.started", "start"), ev("d", "task.attempt.done", "start"),
		ev("e", "step.started", "fetch"),
		ev("f", "task.attempt.started", "fetch"), ev("g", "task.attempt.failed", "fetch"), ev("h", "task.attempt.started", "fetch"), ev("i", "task.attempt.done", "fetch"),
		ev("i", "task.attempt.done", "fetch"),                                          // a duplicate is counted once
		ev("j", "task.attempt.failed", "load"), ev("k", "task.attempt.failed", "load"), // starts not projected yet
	}})
	return f
}

func TestDescribe(t *testing.T) {
	f := describeFake(t)
	r := f.cli("describe", "e1", "-o", "table")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	for _, w := range []string{
		"execution  e1\n", "playbook   hello\n", "version    2\n", "status     failed\n", "duration   4s\n", "events     12\n",
		"STEP   STATUS  RUN  RUNS  DURATION  ATTEMPTS  FAILED  LOOP                              ERROR\n" +
			"start  ok      1    1     12ms      1         0       -                                 -\n" +
			"fetch  ok      1    1     2.5s      2         1       10/10 parallel (max_in_flight 4)  -\n" +
			`load   failed  2    2     900ms     2         2       -                                 {"kind":"http","message":"503\nunavailable"}` + "\n",
		"failures:\n  - step load failed: 503\n",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("describe table lacks %q:\n%s", w, r.stdout)
		}
	}
	r = f.cli("status", "e1")
	var m map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil {
		t.Fatalf("status json: %+v", r)
	}
	steps := m["steps"].(map[string]any)
	for name, want := range map[string][2]float64{"start": {1, 0}, "fetch": {2, 1}, "load": {2, 2}} {
		s := steps[name].(map[string]any)
		if s["attempts"] != want[0] || s["failed_attempts"] != want[1] {
			t.Errorf("json step %s: attempts %v failed %v, want %v", name, s["attempts"], s["failed_attempts"], want)
		}
	}
	if m["status"] != "failed" || m["playbook"] != "hello" {
		t.Errorf("json lost the status document: %v", m)
	}
	if r := f.cli("describe", "nope"); r.code != ExitNotFound {
		t.Errorf("unknown id: %+v", r)
	}
}

func TestEvents(t *testing.T) {
	f := describeFake(t)
	r := f.cli("events", "e1")
	var m map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil || m["count"] != float64(12) {
		t.Errorf("json: %+v", r)
	}
	f.reply("GET /executions/e2/events", 200, map[string]any{"execution_id": "e2", "count": 2, "events": []any{
		map[string]any{"event_id": "x1", "seq": 1, "event_type": "step.started", "step": "fetch", "step_run": 2, "timestamp": "2026-01-02T03:04:05.120Z", "status": "running"},
		map[string]any{"event_id": "x2", "seq": 2, "event_type": "task.attempt.done", "step": "fetch", "task": "get", "iteration": 3, "attempt": 2, "status": "ok", "duration_ms": 15, "timestamp": "2026-01-02T03:04:05.140Z"},
	}})
	r = f.cli("events", "e2", "-o", "table")
	want := "    1  03:04:05.120  step.started                fetch#2                                              running\n" +
		"    2  03:04:05.140  task.attempt.done           fetch                 get             i=3      a=2   ok        15ms\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("table:\n%q\nwant\n%q", r.stdout, want)
	}
	// The events api answers [] for any id: unknown ids are found out.
	f.reply("GET /executions/nope/events", 200, map[string]any{"execution_id": "nope", "count": 0, "events": []any{}})
	if r := f.cli("events", "nope"); r.code != ExitNotFound {
		t.Errorf("unknown id: %+v", r)
	}
	f.reply("GET /executions/fresh/events", 200, map[string]any{"execution_id": "fresh", "count": 0, "events": []any{}})
	f.reply("GET /executions/fresh", 200, map[string]any{"execution_id": "fresh", "status": "requested"})
	if r := f.cli("events", "fresh"); r.code != 0 || !strings.Contains(r.stdout, `"count": 0`) {
		t.Errorf("known id without events: %+v", r)
	}
}

// events --follow prints every event once, in the api's order of each
// poll, while events arrive out of order and polls repeat them, and
// ends once the execution has ended and the list stopped growing.
func TestEventsFollow(t *testing.T) {
	ev := func(id string, seq int) map[string]any {
		return map[string]any{"event_id": id, "seq": seq, "event_type": "step.done", "step": "s" + id, "timestamp": "2026-01-02T03:04:05.000Z"}
	}
	polls := [][]any{
		{},
		{ev("e1", 1), ev("e3", 3)},
		{ev("e1", 1), ev("e2", 2), ev("e3", 3)},
		{ev("e1", 1), ev("e2", 2), ev("e3", 3), ev("e4", 4), ev("e6", 6)},
		{ev("e1", 1), ev("e2", 2), ev("e3", 3), ev("e4", 4), ev("e5", 5), ev("e6", 6)},
	}
	for _, format := range []string{"json", "table"} {
		t.Run(format, func(t *testing.T) {
			f := newFake(t)
			var mu = make(chan struct{}, 1)
			mu <- struct{}{}
			n := 0
			f.on("GET /executions/e1/events", func(w http.ResponseWriter, r *http.Request) {
				<-mu
				p := polls[min(n, len(polls)-1)]
				n++
				mu <- struct{}{}
				writeFake(w, 200, map[string]any{"execution_id": "e1", "count": len(p), "events": p})
			})
			f.on("GET /executions/e1", func(w http.ResponseWriter, r *http.Request) {
				<-mu
				status := "running"
				if n >= 4 {
					status = "ok"
				}
				mu <- struct{}{}
				writeFake(w, 200, map[string]any{"execution_id": "e1", "status": status})
			})
			r := f.cli("events", "e1", "--follow", "-o", format)
			if r.code != 0 {
				t.Fatalf("%+v", r)
			}
			var ids []string
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if format == "json" {
					var e map[string]any
					if err := json.Unmarshal([]byte(line), &e); err != nil {
						t.Fatalf("line %q: %v", line, err)
					}
					ids = append(ids, e["event_id"].(string))
				} else {
					ids = append(ids, strings.TrimPrefix(strings.Fields(line)[3], "s"))
				}
			}
			if got := strings.Join(ids, ","); got != "e1,e3,e2,e4,e6,e5" {
				t.Errorf("printed %s, want e1,e3,e2,e4,e6,e5 (each once, in arrival order)", got)
			}
			if n < len(polls) {
				t.Errorf("stopped after %d polls, before the list stopped growing", n)
			}
		})
	}
	// Ended, with playbook.finished in the log, but an ok loop's
	// iteration batch lands after more than a settle without growth:
	// still followed, and printed.
	it := func(id, typ string, i int) map[string]any {
		return map[string]any{"event_id": id, "event_type": typ, "step": "fan", "step_run": 1, "iteration": i, "timestamp": "2026-01-02T03:04:05.000Z"}
	}
	early := []any{it("s0", "loop.iteration.started", 0), it("d0", "loop.iteration.done", 0),
		map[string]any{"event_id": "end", "event_type": "playbook.finished", "timestamp": "2026-01-02T03:04:05.000Z"}}
	late := append(append([]any{}, early...), it("s1", "loop.iteration.started", 1), it("d1", "loop.iteration.done", 1))
	f := newFake(t)
	t1 := time.Now()
	f.on("GET /executions/e1/events", func(w http.ResponseWriter, r *http.Request) {
		p := early
		if time.Since(t1) > 5*60*time.Millisecond {
			p = late
		}
		writeFake(w, 200, map[string]any{"execution_id": "e1", "count": len(p), "events": p})
	})
	f.reply("GET /executions/e1", 200, map[string]any{"execution_id": "e1", "status": "ok",
		"steps": map[string]any{"fan": map[string]any{"status": "ok", "run": 1, "loop": map[string]any{"total": 2, "done": 2}}}})
	if r := f.cli("events", "e1", "--follow"); r.code != 0 || !strings.Contains(r.stdout, `"event_id":"d1"`) {
		t.Errorf("stopped before the late iteration's batch: %+v", r)
	}
	// An unknown id is reported at once.
	f = newFake(t)
	f.reply("GET /executions/nope", 404, map[string]any{"error": "execution nope not found"})
	f.reply("GET /executions/nope/events", 200, map[string]any{"events": []any{}})
	t0 := time.Now()
	if r := f.cli("events", "nope", "--follow"); r.code != ExitNotFound || !strings.Contains(r.stderr, "execution nope not found") || time.Since(t0) > time.Second {
		t.Errorf("unknown id: %+v after %s", r, time.Since(t0))
	}
	if n := f.count("GET /executions/nope/events"); n != 0 {
		t.Errorf("polled the events of an unknown id %d times", n)
	}
	// The api dies while following: exit 4 after the window.
	f = newFake(t)
	f.reply("GET /executions/e1", 200, map[string]any{"execution_id": "e1", "status": "running"})
	calls := 0
	f.on("GET /executions/e1/events", func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls > 2 {
			writeFake(w, 502, map[string]any{"error": "bad gateway"})
			return
		}
		writeFake(w, 200, map[string]any{"events": []any{ev("e1", 1)}})
	})
	t0 = time.Now()
	r := f.cli("events", "e1", "--follow")
	if r.code != ExitUnavailable || !strings.Contains(r.stderr, "has not answered for 400ms") || strings.Count(r.stdout, `"event_id":"e1"`) != 1 {
		t.Errorf("dead api: %+v", r)
	}
	if d := time.Since(t0); d < 400*time.Millisecond || d > 3*time.Second {
		t.Errorf("gave up after %s", d)
	}
}

func TestCancel(t *testing.T) {
	f := newFake(t)
	f.reply("POST /executions/e1/cancel", 202, map[string]any{"execution_id": "e1", "status": "canceled"})
	f.reply("POST /executions/done/cancel", 409, map[string]any{"error": "execution done already ended (ok)"})
	f.reply("POST /executions/nope/cancel", 404, map[string]any{"error": "execution nope not found"})
	if r := f.cli("cancel", "e1", "-o", "table"); r.code != 0 || r.stdout != "execution e1: canceled\n" {
		t.Errorf("table: %+v", r)
	}
	if r := f.cli("cancel", "e1"); r.code != 0 || !strings.Contains(r.stdout, `"status": "canceled"`) {
		t.Errorf("json: %+v", r)
	}
	if r := f.cli("cancel", "done"); r.code != ExitInvalid || !strings.Contains(r.stderr, "execution done already ended (ok) (409)") {
		t.Errorf("409: %+v", r)
	}
	if r := f.cli("cancel", "nope"); r.code != ExitNotFound || !strings.Contains(r.stderr, "execution nope not found") {
		t.Errorf("404: %+v", r)
	}
}

func TestCost(t *testing.T) {
	f := newFake(t)
	view := map[string]any{"execution_id": "e1", "steps": 4,
		"operations": map[string]any{"firestore": map[string]any{"read": 10, "write": 6}, "pubsub": map[string]any{"publish_bytes": 4000}},
		"lines": []any{
			map[string]any{"service": "firestore", "kind": "read", "count": 10, "usd": 0.000006},
			map[string]any{"service": "firestore", "kind": "write", "count": 6, "usd": 0.0000108},
			map[string]any{"service": "pubsub", "kind": "publish_bytes", "count": 4000, "usd": 0.00000016},
		},
		"usd_total": 0.00001696, "usd_per_1000_steps": 0.00424, "price_source": "cloud.google.com/pricing", "price_date": "2026-01-01"}
	f.reply("GET /executions/e1/cost", 200, view)
	r := f.cli("cost", "e1", "-o", "table")
	want := "execution e1: 4 steps\n\n" +
		"SERVICE    KIND           COUNT  USD\n" +
		"firestore  read           10     0.00000600\n" +
		"firestore  write          6      0.00001080\n" +
		"pubsub     publish_bytes  4000   0.00000016\n" +
		"total      -              -      0.00001696\n" +
		"\nUSD per 1,000 steps: 0.004240\nprices: cloud.google.com/pricing (2026-01-01)\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("table:\n%s\nwant:\n%s", r.stdout, want)
	}
	for _, args := range [][]string{{"cost", "e1", "--json", "-o", "table"}, {"cost", "e1"}} {
		r = f.cli(args...)
		var m map[string]any
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil || m["steps"] != float64(4) || m["usd_total"] != 0.00001696 || m["operations"].(map[string]any)["firestore"] == nil {
			t.Errorf("%v: %+v", args, r)
		}
	}
	f.reply("GET /executions/nope/cost", 404, map[string]any{"error": "execution nope not found"})
	if r := f.cli("cost", "nope"); r.code != ExitNotFound {
		t.Errorf("unknown: %+v", r)
	}
}

// An identity token the api refuses (expired: they live an hour, run
// may poll longer) is minted again once; a second refusal is exit 4.
func TestTokenRefreshOn401(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "n")
	script := "#!/bin/sh\nn=$(cat '" + counter + "' 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > '" + counter + "'\necho tok-$n\n"
	if err := os.WriteFile(filepath.Join(dir, "gcloud"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	accept := "Bearer tok-2"
	f := newFake(t)
	f.on("GET /executions", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != accept {
			writeFake(w, 401, map[string]any{"error": "token expired"})
			return
		}
		writeFake(w, 200, map[string]any{"executions": []any{}})
	})
	run := func() result {
		a, so, se := testApp(map[string]string{"NOETL_API_URL": "http://api.example.test/api", "PATH": dir})
		a.hc = dialTo(f.srv.Listener.Addr().String())
		return execApp(a, so, se, "list")
	}
	if r := run(); r.code != 0 {
		t.Fatalf("refresh: %+v", r)
	}
	var auths []string
	for _, rq := range f.requests() {
		auths = append(auths, rq.Auth)
	}
	if strings.Join(auths, ",") != "Bearer tok-1,Bearer tok-2" {
		t.Errorf("Authorization sent: %v", auths)
	}
	accept = "never"
	if r := run(); r.code != ExitUnavailable || !strings.Contains(r.stderr, "unauthorized (401): token expired") {
		t.Errorf("refused twice: %+v", r)
	}
	if n := len(f.requests()); n != 4 {
		t.Errorf("%d requests, want 2 + 2 (one retry, no loop)", n)
	}
	// A token given by flag is not retried.
	a, so, se := testApp(map[string]string{"NOETL_API_URL": f.URL()})
	if r := execApp(a, so, se, "list", "--token", "static"); r.code != ExitUnavailable || len(f.requests()) != 5 {
		t.Errorf("static token: %+v, %d requests", r, len(f.requests()))
	}
}

// TestSchemaCommand: noetl schema prints the generated schema (the bytes
// the repository publishes), exit 0, and takes no argument.
func TestSchemaCommand(t *testing.T) {
	a, so, se := testApp(nil)
	r := execApp(a, so, se, "schema")
	want, err := schema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || r.stdout != string(want) {
		t.Fatalf("schema: code %d, stdout %d bytes (want %d)\n%s", r.code, len(r.stdout), len(want), r.stderr)
	}
	pub, err := os.ReadFile("../../schema/playbook.schema.json")
	if err != nil || string(pub) != r.stdout {
		t.Fatalf("noetl schema differs from the published schema/playbook.schema.json (%v)", err)
	}
	a, so, se = testApp(nil)
	if r := execApp(a, so, se, "schema", "extra"); r.code != ExitInvalid {
		t.Fatalf("schema extra: code %d", r.code)
	}
}

// Display safety (docs/security.md "Rooms"): control characters in what the api returns
// (a playbook's name, a step's name and error text, event fields, an
// error message, a result in run's summary) reach the terminal escaped,
// in tables and in JSON, never
// raw: no ESC, BEL, CSI (7- or 8-bit) or bidi override is written.
func TestControlCharactersEscaped(t *testing.T) {
	const evil = "x\x1b[2J\x1b]0;pwned\a\u009b31m\u202egnp.exe"
	f := newFake(t)
	f.reply("GET /executions", 200, map[string]any{"executions": []any{
		map[string]any{"execution_id": "e1", "status": "failed", "playbook": evil, "created_at": "2026-01-01T00:00:00Z"},
	}})
	f.reply("GET /executions/e1", 200, map[string]any{
		"execution_id": "e1", "playbook": evil, "status": "failed",
		"steps": map[string]any{
			evil:   map[string]any{"status": "failed", "error": map[string]any{"kind": "python", "message": evil}},
			"load": map[string]any{"status": "ok", "runs": 1, "finished_at": "2026-01-02T03:04:04.000Z"},
		},
		"result":   map[string]any{evil: evil},
		"failures": []any{"step failed: " + evil},
	})
	f.reply("GET /executions/e1/events", 200, map[string]any{"execution_id": "e1", "count": 3, "events": []any{
		map[string]any{"event_id": "a", "seq": 1, "event_type": "task.attempt.failed", "step": evil, "task": evil, "status": "failed", "timestamp": "2026-01-02T03:04:05.000Z"},
		map[string]any{"event_id": "b", "seq": 2, "event_type": "step.done", "step": "load", "status": "ok", "timestamp": "2026-01-02T03:04:04.000Z"},
		map[string]any{"event_id": "c", "seq": 3, "event_type": "playbook.finished", "status": "failed", "timestamp": "2026-01-02T03:04:06.000Z"},
	}})
	f.reply("GET /executions/e2", 400, map[string]any{"error": "bad: " + evil})
	for _, args := range [][]string{
		{"list", "-o", "table"}, {"list", "-o", "json"},
		{"describe", "e1", "-o", "table"}, {"describe", "e1", "-o", "json"},
		{"events", "e1", "-o", "table"}, {"events", "e1", "-o", "json"},
		{"describe", "e2", "-o", "table"},
		// run's and wait's summary: the headline, the step table, the
		// failures and the last step's result.
		{"wait", "e1", "--quiet", "-o", "table"}, {"wait", "e1", "--quiet", "-o", "json"},
	} {
		r := f.cli(args...)
		both := r.stdout + r.stderr
		if c, bad := display.UnsafeIn(strings.ReplaceAll(strings.ReplaceAll(both, "\n", ""), "\t", "")); bad {
			t.Errorf("%v: wrote %U raw:\n%q", args, c, both)
		}
		if !strings.Contains(both, `\u001b[2J`) || !strings.Contains(both, `\u202egnp.exe`) || !strings.Contains(both, `\u009b31m`) {
			t.Errorf("%v: the escaped text is missing:\n%s", args, both)
		}
		if args[len(args)-1] == "json" {
			var v any
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || !strings.Contains(fmt.Sprint(v), evil) {
				t.Errorf("%v: the JSON does not parse back to the same text: %v", args, err)
			}
		}
	}
}
