package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/telemetry/tracetree"
)

func TestDLQ(t *testing.T) {
	f := newFake(t)
	entry := map[string]any{"message_id": "m1", "execution_id": "e1", "step_id": "fetch", "loop_index": 3, "tool_kind": "http",
		"attempts": 5, "last_error": "HTTP 503: Service\nUnavailable", "first_seen": "2026-01-02T03:04:05Z", "last_seen": "2026-01-02T03:05:05Z",
		"payload": `{"spec":{"url":"https://x/y","headers":{"Authorization":"[REDACTED]"}}}`, "context_excerpt": "country=FR page=2", "status": "pending"}
	f.reply("GET /dlq", 200, map[string]any{"entries": []any{entry}})
	f.reply("GET /dlq/m1", 200, entry)
	f.reply("GET /dlq/nope", 404, map[string]any{"error": "dlq entry nope not found"})
	f.reply("POST /dlq/m1/replay", 202, map[string]any{"id": "m1", "status": "replayed"})
	f.reply("POST /dlq/m1/discard", 200, map[string]any{"id": "m1", "status": "discarded"})
	f.reply("POST /dlq/nope/replay", 404, map[string]any{"error": "dlq entry nope not found"})
	f.reply("POST /dlq/nope/discard", 404, map[string]any{"error": "dlq entry nope not found"})

	r := f.cli("dlq", "list", "--status", "pending", "--limit", "10", "-o", "table")
	want := "ID  STATUS   EXECUTION  STEP   ITERATION  KIND  ATTEMPTS  LAST_SEEN             LAST_ERROR\n" +
		"m1  pending  e1         fetch  3          http  5         2026-01-02 03:05:05Z  HTTP 503: Service Unavailable\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("list table:\n%s\nwant:\n%s", r.stdout, want)
	}
	if q := f.requests()[0].Query; q != "limit=10&status=pending" {
		t.Errorf("list query %q", q)
	}
	n0 := len(f.requests())
	if r := f.cli("dlq", "list", "--execution", "e1", "--kind", "http"); r.code != 0 {
		t.Errorf("list --execution --kind: %+v", r)
	}
	if q := f.requests()[n0].Query; q != "execution_id=e1&limit=50&tool_kind=http" {
		t.Errorf("list --execution --kind query %q", q)
	}
	r = f.cli("dlq", "list")
	var lm map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &lm) != nil || len(lm["entries"].([]any)) != 1 {
		t.Errorf("list json: %+v", r)
	}

	r = f.cli("dlq", "show", "m1", "-o", "table")
	for _, w := range []string{"id            m1\n", "execution_id  e1\n", "loop_index    3\n", "attempts      5\n",
		"last_error    HTTP 503: Service Unavailable\n", "payload:\n  {\n    \"spec\": {", `"Authorization": "[REDACTED]"`, "context_excerpt:\n  country=FR page=2\n"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("show lacks %q:\n%s", w, r.stdout)
		}
	}
	r = f.cli("dlq", "show", "m1")
	var sm map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &sm) != nil || sm["message_id"] != "m1" {
		t.Errorf("show json: %+v", r)
	}

	n := len(f.requests())
	r = f.cli("dlq", "replay", "m1", "--patch", "spec.url=https://new.example.com/a=b", "--patch", "spec.timeout=30", "-o", "table")
	if r.code != 0 || r.stdout != "DLQ entry m1: replayed\n" {
		t.Errorf("replay: %+v", r)
	}
	if body := f.requests()[n].Body; !reflect.DeepEqual(body, map[string]any{"patch": map[string]any{"spec.url": "https://new.example.com/a=b", "spec.timeout": "30"}}) {
		t.Errorf("replay body %v", body)
	}
	r = f.cli("dlq", "replay", "m1")
	if body := f.requests()[n+1].Body; r.code != 0 || !reflect.DeepEqual(body, map[string]any{"patch": map[string]any{}}) || !strings.Contains(r.stdout, `"status": "replayed"`) {
		t.Errorf("replay without patch: %+v body %v", r, body)
	}
	r = f.cli("dlq", "discard", "m1", "--reason", "Invalid payload format", "-o", "table")
	if body := f.requests()[n+2].Body; r.code != 0 || r.stdout != "DLQ entry m1: discarded\n" || body["reason"] != "Invalid payload format" {
		t.Errorf("discard: %+v body %v", r, body)
	}
	for _, args := range [][]string{{"dlq", "show", "nope"}, {"dlq", "replay", "nope"}, {"dlq", "discard", "nope", "--reason", "x"}} {
		if r := f.cli(args...); r.code != ExitNotFound || !strings.Contains(r.stderr, "dlq entry nope not found") {
			t.Errorf("%v: %+v", args, r)
		}
	}
}

func TestCatalog(t *testing.T) {
	f := newFake(t)
	pb := writeFile(t, "hello.yaml", validPlaybook)
	bad := writeFile(t, "bad.yaml", "apiVersion: noetl.io/v2\nkind: Playbook\nworkflow: 3\n")
	f.reply("POST /playbooks", 201, map[string]any{"path": "examples/hello", "name": "hello", "version": 3})
	f.reply("GET /playbooks", 200, map[string]any{"playbooks": []any{map[string]any{"path": "examples/hello", "name": "hello", "latest": 3, "updated_at": "2026-01-02T03:04:05Z"}}})
	f.reply("GET /playbooks/examples/hello", 200, map[string]any{"path": "examples/hello", "name": "hello", "version": 2, "source": validPlaybook, "created_at": "2026-01-02T03:04:05Z"})
	f.reply("GET /playbooks/nope", 404, map[string]any{"error": "playbook nope not in the catalog"})

	if r := f.cli("catalog", "register", bad); r.code != ExitInvalid || !strings.Contains(r.stderr, "bad.yaml") || f.count("POST /playbooks") != 0 {
		t.Errorf("invalid file: %+v", r)
	}
	r := f.cli("catalog", "register", pb, "--path", "examples/hello", "-o", "table")
	if r.code != 0 || r.stdout != "registered examples/hello version 3 (hello)\n" {
		t.Errorf("register: %+v", r)
	}
	if body := f.requests()[0].Body; body["playbook"] != validPlaybook || body["path"] != "examples/hello" {
		t.Errorf("register body %v", body)
	}
	r = f.cli("catalog", "list", "-o", "table")
	if want := "PATH            NAME   LATEST  UPDATED\nexamples/hello  hello  3       2026-01-02 03:04:05Z\n"; r.code != 0 || r.stdout != want {
		t.Errorf("list:\n%s", r.stdout)
	}
	r = f.cli("catalog", "show", "examples/hello", "--version", "2", "-o", "table")
	if r.code != 0 || !strings.Contains(r.stdout, "version  2\n") || !strings.HasSuffix(r.stdout, "---\n"+validPlaybook) {
		t.Errorf("show:\n%s", r.stdout)
	}
	last := f.requests()[len(f.requests())-1]
	if last.Path != "/playbooks/examples/hello" || last.Query != "version=2" {
		t.Errorf("show request %+v", last)
	}
	r = f.cli("catalog", "show", "examples/hello")
	var m map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil || m["source"] != validPlaybook {
		t.Errorf("show json: %+v", r)
	}
	if last := f.requests()[len(f.requests())-1]; last.Query != "" {
		t.Errorf("show latest sent %q", last.Query)
	}
	if r := f.cli("catalog", "show", "nope"); r.code != ExitNotFound || !strings.Contains(r.stderr, "playbook nope not in the catalog") {
		t.Errorf("unknown: %+v", r)
	}
}

func TestCredentials(t *testing.T) {
	f := newFake(t)
	f.reply("POST /credentials", 201, map[string]any{"name": "pg", "kind": "postgres", "grants": []any{"examples/*", "inline:token"}})
	f.reply("GET /credentials", 200, map[string]any{"credentials": []any{map[string]any{"name": "pg", "kind": "postgres", "description": "local db", "grants": []any{"examples/*", "inline:token"}, "created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:04:06Z"}}})
	f.reply("GET /credentials/pg", 200, map[string]any{"name": "pg", "kind": "postgres", "description": "local db", "keys": []any{"host", "password"}, "grants": []any{"examples/*", "inline:token"}, "created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:04:06Z"})
	f.on("DELETE /credentials/pg", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	f.reply("DELETE /credentials/nope", 404, map[string]any{"error": "credential nope not found"})
	f.reply("GET /credentials/nope", 404, map[string]any{"error": "credential nope not found"})

	data := `{"host": "127.0.0.1", "password": "s3cret"}`
	file := writeFile(t, "cred.json", data)
	for _, c := range []struct {
		args  []string
		stdin string
	}{
		{args: []string{"--data", data}},
		{args: []string{"--data", "@" + file}},
		{args: []string{"--data", "-"}, stdin: data},
	} {
		a, so, se := testApp(map[string]string{"NOETL_API_URL": f.URL()})
		a.stdin = strings.NewReader(c.stdin)
		n := len(f.requests())
		r := execApp(a, so, se, append([]string{"credentials", "set", "pg", "--kind", "postgres_credential", "--description", "local db", "--grant", "examples/*", "--grant", "inline:token", "-o", "table"}, c.args...)...)
		if r.code != 0 || r.stdout != "credential pg stored (kind postgres; granted to examples/*, inline:token)\n" {
			t.Errorf("%v: %+v", c.args, r)
			continue
		}
		want := map[string]any{"name": "pg", "kind": "postgres_credential", "description": "local db", "grants": []any{"examples/*", "inline:token"},
			"data": map[string]any{"host": "127.0.0.1", "password": "s3cret"}}
		if body := f.requests()[n].Body; !reflect.DeepEqual(body, want) {
			t.Errorf("%v: body %v", c.args, body)
		}
		if strings.Contains(r.stdout+r.stderr, "s3cret") {
			t.Errorf("the secret is printed")
		}
	}
	f.reply("POST /credentials", 400, map[string]any{"error": "invalid credential: kind \"pg\" unknown", "problems": []any{"kind \"pg\" unknown"}})
	if r := f.cli("credentials", "set", "x", "--kind", "pg", "--data", "{}"); r.code != ExitInvalid || !strings.Contains(r.stderr, `kind "pg" unknown`) {
		t.Errorf("400: %+v", r)
	}
	r := f.cli("credentials", "list", "-o", "table")
	if want := "NAME  KIND      GRANTS                    DESCRIPTION  UPDATED\npg    postgres  examples/*, inline:token  local db     2026-01-02 03:04:06Z\n"; r.code != 0 || r.stdout != want {
		t.Errorf("list:\n%s", r.stdout)
	}
	r = f.cli("credentials", "show", "pg", "-o", "table")
	if r.code != 0 || !strings.Contains(r.stdout, "keys         host, password\n") || !strings.Contains(r.stdout, "kind         postgres\n") || !strings.Contains(r.stdout, "grants       examples/*, inline:token\n") {
		t.Errorf("show:\n%s", r.stdout)
	}
	r = f.cli("credentials", "delete", "pg")
	var m map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil || m["deleted"] != true || f.count("DELETE /credentials/pg") != 1 {
		t.Errorf("delete: %+v", r)
	}
	for _, args := range [][]string{{"credentials", "delete", "nope"}, {"credentials", "show", "nope"}} {
		if r := f.cli(args...); r.code != ExitNotFound || !strings.Contains(r.stderr, "credential nope not found") {
			t.Errorf("%v: %+v", args, r)
		}
	}
}

func TestTrace(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	spans := []tracetree.Span{
		{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "00000000000000r0", Name: "server.execution", Start: t0, End: t0.Add(time.Second), Status: "ok",
			Attributes: map[string]any{"execution_id": "e1", "workflow_ref": "hello"}},
		{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "00000000000000d1", ParentSpanID: "00000000000000r0", Name: "server.dispatch", Start: t0.Add(10 * time.Millisecond), End: t0.Add(500 * time.Millisecond), Status: "ok",
			Attributes: map[string]any{"execution_id": "e1", "step_id": "start"}},
		{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "00000000000000p1", ParentSpanID: "00000000000000d1", Name: "worker.plugin.noop", Start: t0.Add(20 * time.Millisecond), End: t0.Add(30 * time.Millisecond), Status: "error",
			Attributes: map[string]any{"execution_id": "e1", "attempt": 1}},
	}
	var lines []string
	for _, s := range spans {
		b, _ := json.Marshal(s)
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "spans.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(env map[string]string, args ...string) result {
		a, so, se := testApp(env)
		return execApp(a, so, se, args...)
	}
	r := run(map[string]string{"NOETL_TRACE_DIR": dir}, "trace", "e1", "-o", "table")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "execution e1  trace 0af7651916cd43dd8448eb211c80319c  3 spans\n") {
		t.Fatalf("table: %+v", r)
	}
	iExec, iDisp, iPlug := strings.Index(r.stdout, "server.execution"), strings.Index(r.stdout, "server.dispatch"), strings.Index(r.stdout, "worker.plugin.noop")
	if iExec < 0 || iDisp < iExec || iPlug < iDisp {
		t.Errorf("tree out of order:\n%s", r.stdout)
	}
	r = run(nil, "trace", "e1", "--dir", dir)
	var tree tracetree.Tree
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tree) != nil || tree.Spans != 3 || len(tree.Roots) != 1 || len(tree.Roots[0].Children) != 1 || len(tree.Roots[0].Children[0].Children) != 1 {
		t.Errorf("json: %+v", r)
	}
	if r := run(map[string]string{"NOETL_TRACE_DIR": dir}, "trace", "e9"); r.code != ExitNotFound || !strings.Contains(r.stderr, "no spans for this execution") {
		t.Errorf("no spans: %+v", r)
	}
	if r := run(map[string]string{"NOETL_TRACE_DIR": filepath.Join(dir, "missing")}, "trace", "e1"); r.code != ExitInvalid || !strings.Contains(r.stderr, "trace dir") {
		t.Errorf("missing dir: %+v", r)
	}
	// The default is .stack/traces under the working directory.
	wd, _ := os.Getwd()
	t.Cleanup(func() { _ = os.Chdir(wd) })
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".stack", "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "spans.jsonl"))
	_ = os.WriteFile(filepath.Join(root, ".stack", "traces", "a.jsonl"), b, 0o644)
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	if r := run(nil, "trace", "e1", "-o", "table"); r.code != 0 || !strings.Contains(r.stdout, "3 spans") {
		t.Errorf("default dir: %+v", r)
	}
}
