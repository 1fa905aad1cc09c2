package deploy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	// The generated main imports funcframework; importing it here keeps
	// its dependencies in go.sum (go mod tidy), as the buildpack's own
	// `go mod tidy` would add them at build time.
	_ "github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
)

// buildpackMain is the main package the Go functions buildpack
// (GoogleCloudPlatform/buildpacks, cmd/go/functions_framework,
// declarative template) writes to serverless_function_source_code/
// functions.local/app/main.go when the function package imports
// functions-framework-go/functions.
const buildpackMain = `// Binary main file implements an HTTP server that loads and runs user's code
// on incoming HTTP requests.
package main

import (
	"log"
	"net/http"
	"os"

	_ "%s"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
)

func main() {
	http.HandleFunc("/robots.txt", http.NotFound)
	http.HandleFunc("/favicon.ico", http.NotFound)

	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if err := funcframework.Start(port); err != nil {
		log.Fatalf("Function failed to start: %%v\n", err)
	}
}
`

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// TestRootPackageForBuildpack checks what the buildpack derives from the
// module root: exactly one package (test files included, as its
// get_package converter parses them), no directory named like it (else
// the buildpack would import <module>/<name>), and a direct import of
// functions-framework-go/functions (the declarative template).
func TestRootPackageForBuildpack(t *testing.T) {
	root := moduleRoot(t)
	pkgs, err := parser.ParseDir(token.NewFileSet(), root, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 {
		t.Fatalf("module root has %d packages, the buildpack needs exactly one", len(pkgs))
	}
	for name, p := range pkgs {
		if fi, err := os.Stat(filepath.Join(root, name)); err == nil && fi.IsDir() {
			t.Errorf("a directory %s/ exists at the root: the buildpack would import %s/%s", name, Module, name)
		}
		imports := map[string]bool{}
		for _, f := range p.Files {
			for _, is := range f.Imports {
				imports[strings.Trim(is.Path.Value, `"`)] = true
			}
		}
		if !imports["github.com/GoogleCloudPlatform/functions-framework-go/functions"] {
			t.Error("the root package must import functions-framework-go/functions (declarative template)")
		}
		for _, f := range Functions {
			if !imports[f.Package] {
				t.Errorf("the root package does not import %s (function %s)", f.Package, f.Name)
			}
		}
	}
}

var (
	buildOnce sync.Once
	buildDir  string // removed by TestMain when the package's tests end
	buildBin  string
	buildErr  error
)

// TestMain removes the directory of the binary buildFunctions built (148
// MB, shared by the package's tests) once they have all run.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// buildFunctions builds the generated main at the path the buildpack uses
// (<root>/functions.local/app, through a go build overlay so the tree is
// not written to) and returns the binary.
func buildFunctions(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root := moduleRoot(t)
		dir, err := os.MkdirTemp("", "noetl-buildpack-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		main := filepath.Join(dir, "main.go")
		if buildErr = os.WriteFile(main, fmt.Appendf(nil, buildpackMain, Module), 0o644); buildErr != nil {
			return
		}
		overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(root, "functions.local", "app", "main.go"): main}})
		ov := filepath.Join(dir, "overlay.json")
		if buildErr = os.WriteFile(ov, overlay, 0o644); buildErr != nil {
			return
		}
		buildBin = filepath.Join(dir, "functions")
		cmd := exec.Command("go", "build", "-overlay", ov, "-o", buildBin, "./functions.local/app")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build (as the buildpack does): %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// instance is one running function process.
type instance struct {
	url    string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs the binary as Cloud Run would (PORT, FUNCTION_TARGET,
// K_SERVICE) with env and waits until it accepts connections.
func start(t *testing.T, bin, target string, env []string) *instance {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(bin)
	cmd.Env = append(env, "PORT="+strconv.Itoa(port), "FUNCTION_TARGET="+target, "K_SERVICE=noetl-"+target)
	in := &instance{url: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = io.Discard, &syncWriter{w: in.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { in.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-in.done })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-in.done:
			in.done <- err
			t.Fatalf("%s exited before serving: %v\n%s", target, err, in.logs())
		default:
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond); err == nil {
			c.Close()
			return in
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not listen within 20s\n%s", target, in.logs())
	return nil
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (in *instance) logs() string {
	if sw, ok := in.cmd.Stderr.(*syncWriter); ok {
		sw.mu.Lock()
		defer sw.mu.Unlock()
	}
	return in.stderr.String()
}

// waitLog waits up to 5s for s to appear on the process's stderr (the
// framework logs a function's error after answering).
func (in *instance) waitLog(s string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(in.logs(), s) {
			return true
		}
	}
	return false
}

func (in *instance) do(t *testing.T, method, path, contentType, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, in.url+path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if tok := os.Getenv("NOETL_API_TOKEN"); tok != "" {
		// The stack's token (api and emit refuse anonymous callers).
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", method, path, err, in.logs())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// pushBody is a Pub/Sub push request body as a push subscription sends it.
func pushBody(data []byte, attrs map[string]string) string {
	b, _ := json.Marshal(map[string]any{
		"message": map[string]any{
			"data": base64.StdEncoding.EncodeToString(data), "attributes": attrs,
			"messageId": "buildpack-test-" + strconv.FormatInt(time.Now().UnixNano(), 10), "publishTime": time.Now().UTC().Format(time.RFC3339Nano),
		},
		"subscription": "projects/noetl-local/subscriptions/test",
	})
	return string(b)
}

// offlineEnv is a process environment with no emulator and no Google
// credentials: the functions must still start and answer.
func offlineEnv(t *testing.T) []string {
	home := t.TempDir()
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GOOGLE_CLOUD_PROJECT=noetl-buildpack-test"}
}

// TestBuildpackServesEachFunction builds the module root the way the Go
// buildpack does and serves each function with FUNCTION_TARGET, without
// emulators or credentials: HTTP functions answer from their own handler,
// and the CloudEvent functions accept a Pub/Sub push body (the framework
// converts it to a CloudEvent and calls the function, which fails only
// because there is no backend), while a body that is not a push envelope
// is refused by the framework.
func TestBuildpackServesEachFunction(t *testing.T) {
	bin := buildFunctions(t)
	env := offlineEnv(t)
	for _, f := range Functions {
		t.Run(f.Name, func(t *testing.T) {
			in := start(t, bin, f.Name, env)
			switch f.Name {
			case "api":
				// K_SERVICE makes the profile cloud: without roles the
				// api serves no one, health check included (README "Security"
				// item 8: roles default closed).
				if code, body := in.do(t, "GET", "/healthz", "", ""); code != 503 || !strings.Contains(body, "NOETL_API_ROLES") {
					t.Errorf("GET /healthz without roles = %d %s, want 503 naming NOETL_API_ROLES", code, body)
				}
				if code, body := in.do(t, "GET", "/no/such/route", "", ""); code != 500 || !strings.Contains(body, "the cloud profile (NOETL_PROFILE=cloud) needs roles") {
					t.Errorf("GET /no/such/route without roles = %d %s, want the refusal (500)", code, body)
				}
				in = start(t, bin, f.Name, append(slices.Clone(env), "NOETL_API_ROLES=admin: [ops@example.com]"))
				if code, body := in.do(t, "GET", "/healthz", "", ""); code != 200 || !strings.Contains(body, `"ok":true`) {
					t.Errorf("GET /healthz = %d %s", code, body)
				}
				// Every other route needs a caller identity: the api's
				// own guard answers, without a backend.
				if code, body := in.do(t, "GET", "/no/such/route", "", ""); code != 401 || !strings.Contains(body, "NOETL_API_TOKEN") {
					t.Errorf("GET /no/such/route = %d %s (want the api's own 401)", code, body)
				}
			case "emit":
				if code, body := in.do(t, "GET", "/", "", ""); code != 405 || !strings.Contains(body, "POST only") {
					t.Errorf("GET / = %d %s (want emit's 405)", code, body)
				}
			case "execute":
				code, body := in.do(t, "POST", "/", "application/json", `{"execution_id":"x"}`)
				if code < 400 || code == 404 || strings.TrimSpace(body) == "" {
					t.Errorf("POST / without a backend = %d %q, want execute's own error", code, body)
				}
			case "subscribe":
				if code, body := in.do(t, "GET", "/healthz", "", ""); code != 200 || !strings.Contains(body, `"ok":true`) {
					t.Errorf("GET /healthz = %d %s", code, body)
				}
				if code, body := in.do(t, "POST", "/push/x", "application/json", pushBody([]byte(`{}`), nil)); code != 503 || strings.TrimSpace(body) == "" {
					t.Errorf("POST /push/x without a backend = %d %q, want subscribe's own 503 (Pub/Sub redelivers)", code, body)
				}
				if code, body := in.do(t, "GET", "/no/such/route", "", ""); code != 404 || !strings.Contains(body, "no route for GET") {
					t.Errorf("GET /no/such/route = %d %s (want subscribe's own 404)", code, body)
				}
			default: // push functions
				if f.Trigger != TriggerPush {
					t.Fatalf("no check for %s", f.Name)
				}
				code, body := in.do(t, "POST", "/projects/noetl-local/topics/events", "application/json", pushBody([]byte(`{}`), map[string]string{AttrRoute: "1"}))
				if code != 500 || !in.waitLog("Function error:") {
					t.Errorf("push body: %d %q, want the function's own error (500, logged) without a backend\n%s", code, body, in.logs())
				}
				if code, body := in.do(t, "POST", "/", "application/json", "not a push envelope"); code != 400 {
					t.Errorf("non-push body = %d %q, want the framework's 400", code, body)
				}
			}
			if t.Failed() {
				t.Logf("stderr of %s:\n%s", f.Name, in.logs())
			}
			select {
			case err := <-in.done:
				t.Errorf("%s exited while serving: %v", f.Name, err)
			default:
			}
		})
	}
	t.Run("unknown target", func(t *testing.T) {
		cmd := exec.Command(bin)
		cmd.Env = append(env, "PORT="+strconv.Itoa(freePort(t)), "FUNCTION_TARGET=nope")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), `no matching function found with name: "nope"`) {
			t.Errorf("FUNCTION_TARGET=nope: err %v, output %s", err, out)
		}
	})
}

// helloPlaybook is a one-step playbook (a noop task with a templated result).
const helloPlaybook = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: hello, path: tests/buildpack/hello}
workload: {name: buildpack}
workflow:
  - step: start
    tool: {kind: noop, result: {greeting: "hello {{ name }}"}}
`

// TestBuildpackFunctionsOnStack serves each function from the buildpack
// binary against the local emulator stack (scripts/up; source .stack/env)
// and checks the path GCP uses end to end: an execution started through
// the buildpack-built api runs to the end, emit answers with its backends
// open, and a poison Pub/Sub push (data that is not an event or command)
// is acked (2xx) and dead-lettered instead of retried.
func TestBuildpackFunctionsOnStack(t *testing.T) {
	if os.Getenv("NOETL_FUNCTIONS_URL") == "" || os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatal("NOETL_STACK=1 but the stack environment is not set: source .stack/env")
		}
		t.Skip("local stack not configured (scripts/up, then source .stack/env)")
	}
	bin := buildFunctions(t)
	env := os.Environ()
	for _, f := range Functions {
		t.Run(f.Name, func(t *testing.T) {
			in := start(t, bin, f.Name, env)
			switch f.Name {
			case "api":
				if code, body := in.do(t, "GET", "/executions/buildpack-test-no-such-execution", "", ""); code != 404 {
					t.Errorf("GET unknown execution = %d %s, want 404 from Firestore", code, body)
				}
				// An execution started through the buildpack-built api runs
				// to the end on the stack.
				req, _ := json.Marshal(map[string]string{"playbook": helloPlaybook})
				code, body := in.do(t, "POST", "/executions", "application/json", string(req))
				var started struct {
					ExecutionID string `json:"execution_id"`
				}
				if code != 202 || json.Unmarshal([]byte(body), &started) != nil || started.ExecutionID == "" {
					t.Fatalf("POST /executions = %d %s, want 202 with an execution_id", code, body)
				}
				var st struct {
					Status string         `json:"status"`
					Result map[string]any `json:"result"`
				}
				for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
					_, body = in.do(t, "GET", "/executions/"+started.ExecutionID, "", "")
					if json.Unmarshal([]byte(body), &st) == nil && st.Status != "" && st.Status != "requested" && st.Status != "running" {
						break
					}
				}
				if st.Status != "ok" || st.Result["greeting"] != "hello buildpack" {
					t.Errorf("execution %s ended %q with result %v, want ok and the greeting\n%s", started.ExecutionID, st.Status, st.Result, body)
				}
			case "emit":
				if code, body := in.do(t, "POST", "/", "application/json", `{}`); code != 400 || !strings.Contains(body, "execution_id") {
					t.Errorf("POST {} = %d %s, want 400 naming execution_id", code, body)
				}
			case "execute":
				// Cloud Tasks calls carry an OIDC token once execute
				// verifies it; without one the call is refused, else the
				// poison command is acked and dead-lettered.
				code, body := in.do(t, "POST", "/", "application/json", `not json`)
				if code != 200 && code != 401 && code != 403 {
					t.Errorf("POST poison = %d %s, want 200 (acked) or 401/403 (no OIDC token)", code, body)
				}
			case "subscribe":
				// A body that is not a push body is acked and filed; a push
				// for an unregistered name is refused (Pub/Sub keeps it).
				if code, body := in.do(t, "POST", "/push/buildpack-test-none", "application/json", "not json"); code != 200 || !strings.Contains(body, "dead_lettered") {
					t.Errorf("POST /push/x not json = %d %s, want 200 dead_lettered", code, body)
				}
				if code, body := in.do(t, "POST", "/push/buildpack-test-none", "application/json", pushBody([]byte(`{}`), nil)); code != 404 {
					t.Errorf("push for an unregistered subscription = %d %s, want 404", code, body)
				}
				if code, body := in.do(t, "POST", "/tick", "", ""); code != 200 || !strings.Contains(body, `"subscriptions"`) {
					t.Errorf("POST /tick = %d %s", code, body)
				}
			default:
				code, body := in.do(t, "POST", "/projects/noetl-local/topics/events", "application/json", pushBody([]byte("not json"), nil))
				if code < 200 || code > 299 {
					t.Errorf("poison push = %d %s, want 2xx (acked, dead-lettered)\n%s", code, body, in.logs())
				}
			}
		})
	}
}
