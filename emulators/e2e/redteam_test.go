package e2e

// The red-team suite of the runner boundary (README "Security", table
// "Attacks and the tests that refuse them"): every attack is a playbook
// submitted through POST /executions, as an author would, on the local
// stack, and must get the refusal written next to it. Network attacks
// never send traffic to the real metadata server or to a link-local or
// private address: the egress policy refuses them before any packet is
// sent (http, postgres, nats, gcs, subscription, transfer), and python
// and shell run in a network namespace with nothing but loopback, where
// such an address has no route.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// probe is the outcome of an attack's execution: its status and, for its
// one step "probe", the result or the error.
type probe struct {
	ID     string
	Status string
	Result any
	Kind   string // the step's error kind
	Error  string // the step's error message
}

// attack runs a one-step playbook whose task is tool and waits for it.
func attack(t *testing.T, name string, tool map[string]any, workload map[string]any) probe {
	t.Helper()
	pb := map[string]any{
		"apiVersion": "noetl.io/v2", "kind": "Playbook",
		"metadata": map[string]any{"name": "redteam_" + name, "path": "tests/redteam/" + name},
		"workflow": []any{map[string]any{"step": "probe", "tool": tool}},
	}
	src, err := yaml.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	id := startInline(t, string(src), workload)
	st := waitStatus(t, id, 4*time.Minute)
	p := probe{ID: id}
	p.Status, _ = st["status"].(string)
	if steps, ok := st["steps"].(map[string]any); ok {
		if s, ok := steps["probe"].(map[string]any); ok {
			if e, ok := s["error"].(map[string]any); ok {
				p.Kind, _ = e["kind"].(string)
				p.Error, _ = e["message"].(string)
			}
		}
	}
	if res, ok := st["results"].(map[string]any); ok {
		p.Result = res["probe"]
	}
	t.Logf("%s: %s %s %.160s %.300s", name, p.Status, p.Kind, p.Error, MustJSON(p.Result))
	return p
}

// refused fails unless the attack failed with error kind kind (and, when
// given, a message containing text).
func refused(t *testing.T, what string, p probe, kind, text string) {
	t.Helper()
	if p.Status != "failed" || p.Kind != kind || !strings.Contains(p.Error, text) {
		t.Errorf("%s: execution %s %s, error %s %q; want refused with kind %s (%q)", what, p.ID, p.Status, p.Kind, p.Error, kind, text)
	}
}

// engineSecrets are values no task may ever see: the stack's signing key
// and api token.
func engineSecrets(t *testing.T) map[string]string {
	t.Helper()
	s := map[string]string{}
	for _, k := range []string{"NOETL_SIGNING_KEY", "NOETL_API_TOKEN"} {
		if v := os.Getenv(k); len(v) >= 16 {
			s[k] = v
		}
	}
	if len(s) != 2 {
		t.Fatal("the stack's signing key and api token are not in the environment (source .stack/env)")
	}
	return s
}

// noSecret fails if any engine secret appears in v.
func noSecret(t *testing.T, what string, v any) {
	t.Helper()
	text := MustJSON(v)
	for k, s := range engineSecrets(t) {
		if strings.Contains(text, s) {
			t.Errorf("%s: the task saw %s", what, k)
		}
	}
}

func stackFile(name string) string {
	return filepath.Join(os.Getenv("NOETL_STACK_DIR"), name)
}

// keyFiles are the engine's key and environment files of the stack.
func keyFiles() []string {
	return []string{stackFile("signing.key"), stackFile("api.token"), stackFile("env"), stackFile("oidc/key.pem"), stackFile("runner-auth/key.pem")}
}

// Every runner kind is denied the engine's environment and key files;
// python and shell see only their own clean environment.
func TestRedTeamEngineSecrets(t *testing.T) {
	RequireStack(t)
	files := keyFiles()
	var wg sync.WaitGroup
	run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	run(func() {
		p := attack(t, "python_environ", map[string]any{"kind": "python", "args": map[string]any{"files": files}, "code": `
import os, glob
out = {"environ": os.environ.copy(), "procs": {}, "files": []}
for f in ["/proc/self/environ", "/proc/1/environ"] + glob.glob("/proc/[0-9]*/environ"):
    try:
        out["procs"][f] = open(f, "rb").read().decode("latin-1")
    except OSError as e:
        out["procs"][f] = type(e).__name__
for f in files:
    try:
        out["files"].append([f, open(f).read()])
    except OSError as e:
        out["files"].append([f, type(e).__name__])
result = out
`}, nil)
		if p.Status != "ok" {
			t.Fatalf("python probe: %s %s", p.Status, p.Error)
		}
		noSecret(t, "python", p.Result)
		r := p.Result.(map[string]any)
		for k := range r["environ"].(map[string]any) {
			if strings.HasPrefix(k, "NOETL_") || strings.HasPrefix(k, "GOOGLE_") || strings.HasSuffix(k, "_EMULATOR_HOST") {
				t.Errorf("python task environment has %s", k)
			}
		}
		for _, fv := range r["files"].([]any) {
			if fv := fv.([]any); fv[1] != "FileNotFoundError" {
				t.Errorf("python read %s: %v (want FileNotFoundError: not in its root)", fv[0], fv[1])
			}
		}
		if n := len(r["procs"].(map[string]any)); n > 3 { // self, 1 and its own pid
			t.Errorf("python sees %d process environments", n)
		}
	})
	run(func() {
		p := attack(t, "shell_environ", map[string]any{"kind": "shell", "cmds": []any{
			"env; cat /proc/self/environ; for f in /proc/[0-9]*/environ; do cat $f; done; echo",
			"for f in " + strings.Join(files, " ") + "; do cat $f 2>&1 || true; done",
		}}, nil)
		if p.Status != "ok" {
			t.Fatalf("shell probe: %s %s", p.Status, p.Error)
		}
		noSecret(t, "shell", p.Result)
		out := MustJSON(p.Result)
		if strings.Contains(out, "NOETL_SIGNING_KEY") || strings.Contains(out, "NOETL_API_TOKEN") {
			t.Error("shell task environment names an engine secret")
		}
		if strings.Count(out, "No such file or directory") < len(files) {
			t.Errorf("shell read a key file: %.600s", out)
		}
	})
	for i, q := range []string{
		"SELECT * FROM read_csv('/proc/self/environ', header=false, sep='\\0')",
		"SELECT * FROM read_text(['.stack/signing.key', '.stack/api.token'])",
		"SELECT * FROM read_text('" + files[0] + "')",
	} {
		run(func() {
			p := attack(t, fmt.Sprintf("duckdb_secret_%d", i), map[string]any{"kind": "duckdb", "query": q}, nil)
			if strings.Contains(q, "'.stack/") {
				// Relative paths resolve in the task's workspace (its
				// worker's working directory, inside its room), where the
				// stack's files do not exist: nothing is read.
				noSecret(t, "duckdb "+q, p.Result)
				if p.Status != "ok" || !strings.Contains(MustJSON(p.Result), `"row_count":0`) {
					t.Errorf("duckdb %s: %s %s %v, want no rows (no such file in the task's root)", q, p.Status, p.Error, p.Result)
				}
				return
			}
			refused(t, "duckdb "+q, p, "forbidden_path", "file system operations are disabled")
		})
	}
	run(func() {
		// The stack's PostgreSQL: tasks connect as the noetl role, which may
		// neither read the server's files nor run programs on its host.
		for q, text := range map[string]string{
			"SELECT pg_read_file('/proc/self/environ')":       "permission denied",
			"SELECT pg_read_file('" + files[0] + "')":         "permission denied",
			"COPY (SELECT 1) TO PROGRAM 'env > /tmp/redteam'": "pg_execute_server_program",
		} {
			p := attack(t, "postgres_file", map[string]any{"kind": "postgres", "command": q}, map[string]any{"pg_dsn": os.Getenv("NOETL_PG_DSN")})
			refused(t, "postgres "+q, p, "postgres", text)
		}
		// As the superuser over TCP: refused by the server.
		super := strings.Replace(os.Getenv("NOETL_PG_DSN"), "//noetl@", "//postgres@", 1)
		p := attack(t, "postgres_superuser", map[string]any{"kind": "postgres", "connection": super, "command": "SELECT 1"}, nil)
		if p.Status != "failed" || !strings.Contains(p.Error, "pg_hba.conf rejects") {
			t.Errorf("postgres as the superuser: %s %q, want pg_hba.conf rejects", p.Status, p.Error)
		}
	})
	run(func() {
		p := attack(t, "gcs_upload_key", map[string]any{"kind": "gcs", "action": "upload", "source": files[0],
			"destination": "gs://redteam/key", "auth": map[string]any{"endpoint": os.Getenv("NOETL_DATA_GCS_URL")}}, nil)
		refused(t, "gcs upload of the signing key", p, "config", "outside the directories gcs tasks may use")
	})
	run(func() {
		for _, path := range []string{files[0], "../.stack/signing.key", ".stack/signing.key"} {
			p := attack(t, "script_file", map[string]any{"kind": "python", "script": map[string]any{"uri": path, "source": map[string]any{"type": "file"}}}, nil)
			if p.Status != "failed" || p.Kind != "config" || strings.Contains(p.Error, os.Getenv("NOETL_SIGNING_KEY")) {
				t.Errorf("script file %s: %s %s %q", path, p.Status, p.Kind, p.Error)
			}
		}
	})
	wg.Wait()
}

// Tasks of other executions are invisible: their files, /tmp, processes,
// argv and environment; a shell program's text is in no process's argv on
// the host either.
func TestRedTeamOtherTasks(t *testing.T) {
	RequireStack(t)
	secret := "redteam-" + randSuffix()
	tasksDir := stackFile("runner/work/tasks")
	before := map[string]bool{}
	if ents, err := os.ReadDir(tasksDir); err == nil {
		for _, e := range ents {
			before[e.Name()] = true
		}
	}
	// The victim: a shell task holding a secret in a file of its
	// workspace, in /tmp, in its environment and in its program text,
	// alive for a while.
	victimDone := make(chan probe, 1)
	go func() {
		// The secret is written literally in the program's text (as
		// PGPASSWORD=... psql would be): the engine must not put that text
		// in an argv.
		victimDone <- attack(t, "victim", map[string]any{"kind": "shell", "env": map[string]any{"VICTIM_SECRET": secret},
			"command": "export PGPASSWORD=" + secret + "\necho " + secret + " > secret.txt\necho " + secret + " > /tmp/secret.txt\nsleep 12"}, nil)
	}()
	var victimWS string
	deadline := time.Now().Add(60 * time.Second)
	for victimWS == "" && time.Now().Before(deadline) {
		ents, _ := os.ReadDir(tasksDir)
		for _, e := range ents {
			if !before[e.Name()] {
				victimWS = filepath.Join(tasksDir, e.Name())
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if victimWS == "" {
		t.Fatal("the victim's workspace did not appear")
	}
	time.Sleep(1500 * time.Millisecond)
	// The host's view: no process has the secret in its argv.
	for _, pid := range procs() {
		if b, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("process %s has the victim's secret in its argv: %q", pid, b)
		}
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		p := attack(t, "spy_python", map[string]any{"kind": "python", "args": map[string]any{"ws": victimWS}, "code": `
import os, glob
seen = []
for f in glob.glob("/proc/[0-9]*/cmdline") + glob.glob("/proc/[0-9]*/environ"):
    try:
        seen.append(open(f, "rb").read().decode("latin-1"))
    except OSError:
        pass
files = {}
for f in [ws + "/home/secret.txt", ws + "/secret.txt", "/tmp/secret.txt", os.path.dirname(os.getcwd())]:
    try:
        files[f] = open(f).read() if not os.path.isdir(f) else os.listdir(f)
    except OSError as e:
        files[f] = type(e).__name__
result = {"seen": seen, "files": files, "tmp": os.listdir("/tmp"), "pids": len(glob.glob("/proc/[0-9]*"))}
`}, nil)
		if p.Status != "ok" {
			t.Errorf("python spy: %s %s", p.Status, p.Error)
			return
		}
		if strings.Contains(MustJSON(p.Result), secret) {
			t.Errorf("a python task of another execution saw the victim's secret: %.800s", MustJSON(p.Result))
		}
		if n := p.Result.(map[string]any)["pids"]; n != int64(1) {
			t.Errorf("the python spy sees %v processes, want only itself", n)
		}
	}()
	go func() {
		defer wg.Done()
		p := attack(t, "spy_shell", map[string]any{"kind": "shell", "command": "cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ " + victimWS + "/home/secret.txt /tmp/secret.txt 2>&1; ls -la /tmp; ps -ef 2>&1 || true"}, nil)
		if strings.Contains(MustJSON(p.Result), secret) {
			t.Errorf("a shell task of another execution saw the victim's secret: %.800s", MustJSON(p.Result))
		}
	}()
	go func() {
		defer wg.Done()
		p := attack(t, "spy_duckdb", map[string]any{"kind": "duckdb", "query": "SELECT * FROM read_text('" + victimWS + "/home/secret.txt')"}, nil)
		refused(t, "duckdb reading another task's workspace", p, "forbidden_path", "file system operations are disabled")
	}()
	wg.Wait()
	if v := <-victimDone; v.Status != "ok" {
		t.Errorf("the victim did not finish: %s %s", v.Status, v.Error)
	}
}

func procs() []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
			out = append(out, e.Name())
		}
	}
	return out
}

// A task writes nothing outside its workspace and its private /tmp: not
// the system, not the repository, not the host's /tmp (no squatting of a
// path another task or DuckDB would use).
func TestRedTeamWritesAndTmp(t *testing.T) {
	RequireStack(t)
	marker := "noetl-redteam-" + randSuffix()
	repoFile := filepath.Join(RepoRoot(), marker)
	var wg sync.WaitGroup
	run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	run(func() {
		p := attack(t, "python_writes", map[string]any{"kind": "python", "args": map[string]any{"targets": []any{"/usr/" + marker, "/etc/" + marker, "/" + marker, repoFile, "/tmp/noetl-duckdb/" + marker}}, "code": `
import os
out = {}
os.makedirs("/tmp/noetl-duckdb", exist_ok=True)
os.chmod("/tmp/noetl-duckdb", 0o777)
for p in targets:
    try:
        open(p, "w").write("x"); out[p] = "written"
    except OSError as e:
        out[p] = type(e).__name__
result = out
`}, nil)
		if p.Status != "ok" {
			t.Fatalf("python writes: %s %s", p.Status, p.Error)
		}
		for path, v := range p.Result.(map[string]any) {
			if strings.HasPrefix(path, "/tmp/") {
				continue // its own /tmp: private, checked below
			}
			if v == "written" {
				t.Errorf("python wrote %s", path)
			}
		}
	})
	run(func() {
		p := attack(t, "shell_writes", map[string]any{"kind": "shell", "command": "touch /usr/" + marker + " /" + marker + " " + repoFile + " 2>&1; mkdir -p /tmp/noetl-duckdb && chmod 777 /tmp/noetl-duckdb && touch /tmp/noetl-duckdb/" + marker + "; echo done"}, nil)
		if p.Status != "ok" {
			t.Errorf("shell writes: %s %s", p.Status, p.Error)
		}
	})
	for i, q := range []string{
		"COPY (SELECT 1 AS x) TO '/tmp/" + marker + ".csv'",
		"COPY (SELECT 1 AS x) TO '" + repoFile + "'",
		"ATTACH '/tmp/" + marker + ".duckdb' AS evil",
	} {
		run(func() {
			p := attack(t, fmt.Sprintf("duckdb_write_%d", i), map[string]any{"kind": "duckdb", "query": q}, nil)
			refused(t, "duckdb "+q, p, "forbidden_path", "file system operations are disabled")
		})
	}
	run(func() {
		p := attack(t, "duckdb_database_path", map[string]any{"kind": "duckdb", "database": "/tmp/" + marker + ".duckdb", "query": "SELECT 1"}, nil)
		refused(t, "duckdb database outside the workspace", p, "forbidden_path", "outside the task's workspace")
	})
	wg.Wait()
	// After a squatter, a duckdb task spills in its own workspace.
	p := attack(t, "duckdb_after_squat", map[string]any{"kind": "duckdb", "query": "SELECT current_setting('temp_directory') AS tmp"}, nil)
	if p.Status != "ok" || !strings.Contains(MustJSON(p.Result), "/runner/work/tasks/task-") {
		t.Errorf("duckdb spill directory: %s %s %v, want inside its workspace", p.Status, p.Error, p.Result)
	}
	for _, f := range []string{"/usr/" + marker, "/" + marker, repoFile, "/tmp/" + marker + ".csv", "/tmp/" + marker + ".duckdb", "/tmp/noetl-duckdb/" + marker} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s exists on the host", f)
			_ = os.Remove(f)
		}
	}
}

// Addresses no task may reach, and the stack's engine endpoints.
func forbiddenTargets() map[string]string {
	host := func(env string) string { return "127.0.0.1:" + os.Getenv(env) }
	return map[string]string{
		"metadata server":         "169.254.169.254:80",
		"metadata name":           "metadata.google.internal:80",
		"metadata IPv6":           "[fd20:ce::254]:80",
		"metadata NAT64":          "[64:ff9b::a9fe:a9fe]:80",
		"metadata IPv4-mapped":    "[::ffff:169.254.169.254]:80",
		"link-local":              "169.254.10.10:80",
		"Firestore emulator":      host("NOETL_FIRESTORE_PORT"),
		"Pub/Sub emulator":        host("NOETL_PUBSUB_PORT"),
		"engine GCS (results)":    host("NOETL_GCS_PORT"),
		"Cloud Tasks emulator":    host("NOETL_TASKS_PORT"),
		"functions host (api...)": host("NOETL_FUNCTIONS_PORT"),
		"the runner itself":       host("NOETL_RUNNER_PORT"),
		"unspecified address":     "0.0.0.0:" + os.Getenv("NOETL_FIRESTORE_PORT"),
		"loopback alias":          "127.0.0.2:" + os.Getenv("NOETL_FIRESTORE_PORT"),
		"localhost name":          "localhost:" + os.Getenv("NOETL_FIRESTORE_PORT"),
	}
}

// Every kind that makes connections is refused the metadata server,
// link-local addresses and the engine's own endpoints by the egress
// policy before it connects; python and shell find no route or nothing
// listening in their namespace, and the proxy refuses them too.
func TestRedTeamNetwork(t *testing.T) {
	RequireStack(t)
	targets := forbiddenTargets()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // executions at once
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); sem <- struct{}{}; defer func() { <-sem }(); f() }()
	}
	// Every runner kind against the metadata server in its forms, a
	// link-local address and the engine's endpoints; http against all.
	runnerTargets := map[string]bool{"metadata server": true, "metadata name": true, "metadata NAT64": true, "link-local": true,
		"Firestore emulator": true, "functions host (api...)": true}
	for name, hp := range targets {
		url := "http://" + hp + "/computeMetadata/v1/instance/service-accounts/default/token"
		run(func() {
			p := attack(t, "http_"+slug(name), map[string]any{"kind": "http", "url": url, "headers": map[string]any{"Metadata-Flavor": "Google"}, "timeout": 5}, nil)
			refused(t, "http → "+name, p, "forbidden_address", "refused by the network policy")
		})
		if !runnerTargets[name] {
			continue
		}
		run(func() {
			h, port := splitHP(hp)
			p := attack(t, "postgres_"+slug(name), map[string]any{"kind": "postgres", "auth": map[string]any{"host": h, "port": port, "user": "noetl", "database": "noetl"}, "command": "SELECT 1"}, nil)
			refused(t, "postgres → "+name, p, "forbidden_address", "refused by the network policy")
		})
		run(func() {
			p := attack(t, "nats_"+slug(name), map[string]any{"kind": "nats", "url": "nats://" + hp, "operation": "kv_get", "bucket": "b", "key": "k"}, nil)
			refused(t, "nats → "+name, p, "forbidden_address", "refused by the network policy")
		})
		run(func() {
			// Not the results bucket: that one is refused before any
			// connection whatever the endpoint (TestRedTeamResultOwnership).
			p := attack(t, "gcs_"+slug(name), map[string]any{"kind": "gcs", "action": "download", "source": "gs://redteam/any.json",
				"destination": "out.json", "auth": map[string]any{"endpoint": "http://" + hp}}, nil)
			refused(t, "gcs → "+name, p, "forbidden_address", "refused by the network policy")
		})
		run(func() {
			p := attack(t, "subscription_"+slug(name), map[string]any{"kind": "subscription", "source": "pubsub", "operation": "poll",
				"auth": map[string]any{"endpoint": hp}, "subscription": "projects/noetl-local/subscriptions/route", "timeout_ms": 2000}, nil)
			refused(t, "subscription → "+name, p, "forbidden_address", "refused by the network policy")
		})
		run(func() {
			p := attack(t, "transfer_"+slug(name), map[string]any{"kind": "transfer", "source": map[string]any{"type": "http", "url": url},
				"target": map[string]any{"type": "postgres", "table": "redteam_transfer", "auth": map[string]any{"dsn": os.Getenv("NOETL_PG_DSN")}}}, nil)
			refused(t, "transfer → "+name, p, "forbidden_address", "refused by the network policy")
		})
	}
	run(func() {
		// No httpfs extension can be loaded, and the duckdb worker has no
		// network at all (an empty network namespace).
		p := attack(t, "duckdb_http", map[string]any{"kind": "duckdb", "query": "SELECT * FROM read_csv('http://169.254.169.254/computeMetadata/v1/')"}, nil)
		refused(t, "duckdb → metadata server", p, "config", "requires the extension httpfs")
	})
	var hps []any
	for _, hp := range targets {
		hps = append(hps, hp)
	}
	run(func() {
		p := attack(t, "python_network", map[string]any{"kind": "python", "args": map[string]any{"targets": hps}, "code": `
import socket, urllib.request, urllib.error
out = {}
for hp in targets:
    host, port = hp.rsplit(":", 1)
    host = host.strip("[]")
    r = {}
    try:
        s = socket.create_connection((host, int(port)), timeout=3); s.close(); r["direct"] = "connected"
    except OSError as e:
        r["direct"] = "errno %s" % getattr(e, "errno", e)
    try:
        urllib.request.urlopen("http://" + hp + "/", timeout=5); r["proxy"] = "reached"
    except urllib.error.HTTPError as e:
        r["proxy"] = "HTTP %d %s" % (e.code, e.read().decode()[:120])
    except Exception as e:
        r["proxy"] = type(e).__name__ + " " + str(e)[:120]
    out[hp] = r
result = out
`}, nil)
		if p.Status != "ok" {
			t.Fatalf("python network probe: %s %s", p.Status, p.Error)
		}
		for hp, v := range p.Result.(map[string]any) {
			r := v.(map[string]any)
			if r["direct"] == "connected" {
				t.Errorf("python connected to %s", hp)
			}
			if px := fmt.Sprint(r["proxy"]); !strings.HasPrefix(px, "HTTP 403") || !strings.Contains(px, "network policy") {
				t.Errorf("python through the proxy to %s: %s, want the proxy's 403", hp, px)
			}
		}
	})
	run(func() {
		var cmds []string
		for _, hp := range targets {
			cmds = append(cmds, "curl -s -m 5 -o /dev/null -w '"+hp+" %{http_code}\\n' http://"+hp+"/ || echo '"+hp+" failed'")
		}
		p := attack(t, "shell_network", map[string]any{"kind": "shell", "command": strings.Join(cmds, "\n")}, nil)
		if p.Status != "ok" {
			t.Fatalf("shell network probe: %s %s", p.Status, p.Error)
		}
		out := p.Result.(map[string]any)["stdout"].(string)
		for _, hp := range targets {
			if !strings.Contains(out, hp+" 403") && !strings.Contains(out, hp+" failed") && !strings.Contains(out, hp+" 000") {
				t.Errorf("shell curl %s: %q", hp, out)
			}
			if strings.Contains(out, hp+" 200") {
				t.Errorf("shell reached %s", hp)
			}
		}
	})
	wg.Wait()
	// The allowed destinations stay reachable: the stack's PostgreSQL from
	// python (psycopg through its forwarder) and the fixture API.
	p := attack(t, "python_allowed", map[string]any{"kind": "python", "args": map[string]any{"dsn": os.Getenv("NOETL_PG_DSN"), "api": os.Getenv("NOETL_FIXTURES_URL")}, "code": `
import psycopg, urllib.request
with psycopg.connect(dsn) as c:
    one = c.execute("SELECT 1").fetchone()[0]
result = {"pg": one, "api": urllib.request.urlopen(api + "/health", timeout=5).status}
`}, nil)
	if p.Status != "ok" || MustJSON(p.Result) != `{"api":200,"pg":1}` {
		t.Errorf("allowed destinations from python: %s %s %v", p.Status, p.Error, p.Result)
	}
}

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 32
		}
		return '_'
	}, s)
}

func splitHP(hp string) (string, int) {
	i := strings.LastIndex(hp, ":")
	var port int
	fmt.Sscan(hp[i+1:], &port)
	return strings.Trim(hp[:i], "[]"), port
}

// Hogs fail with kind "limit" naming the limit, and an execution running
// beside them completes.
func TestRedTeamLimits(t *testing.T) {
	RequireStack(t)
	type hog struct {
		name, limit string
		tool        map[string]any
	}
	hogs := []hog{
		{"memory", "memory", map[string]any{"kind": "python", "code": "b = []\nwhile True:\n    b.append(bytearray(64 << 20))\n"}},
		{"processes", "processes", map[string]any{"kind": "shell", "command": "i=0; while [ $i -lt 200 ]; do sleep 5 & i=$((i+1)); done; wait"}},
		{"disk", "disk", map[string]any{"kind": "python", "code": "f = open('big', 'wb')\nwhile True:\n    f.write(b'x' * (16 << 20))\n"}},
	}
	var wg sync.WaitGroup
	for _, h := range hogs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := attack(t, "hog_"+h.name, h.tool, nil)
			refused(t, h.name+" hog", p, "limit", h.limit)
		}()
	}
	// A CPU hog is throttled to its share (NOETL_SANDBOX_CPUS) and ends
	// at its timeout here (its CPU-seconds limit, kind limit cpu, is shown
	// by the sandbox's tool tests: TestCPUHogIsLimited).
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := attack(t, "hog_cpu", map[string]any{"kind": "python", "timeout": 8, "code": "while True:\n    pass\n"}, nil)
		if p.Status != "failed" || p.Kind != "timeout" {
			t.Errorf("cpu hog: %s %s %q", p.Status, p.Kind, p.Error)
		}
	}()
	// Beside them: a normal execution completes.
	time.Sleep(time.Second)
	p := attack(t, "beside_hogs", map[string]any{"kind": "python", "code": "result = sum(range(1000))"}, nil)
	if p.Status != "ok" || MustJSON(p.Result) != "499500" {
		t.Errorf("an execution beside the hogs: %s %s %v", p.Status, p.Error, p.Result)
	}
	wg.Wait()
}
