package planes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the module path of this repository (go.mod).
const module = "github.com/noetl/gcpengine"

// Build roots: the import paths of the builds whose links are checked.
const (
	rootFunctions = module                    // the function build (buildpack: module root package)
	rootRunner    = module + "/runner"        // the runner binary (data plane)
	rootEngine    = module + "/shared/engine" // the pure engine
	rootCLI       = module + "/cmd/noetl"     // the CLI
)

// controlPlane are the packages that hold the control plane's keys, state,
// queues or wiring, and its own kinds (tools.ControlKinds' registry and the
// kinds that read the engine's stores): the runner links none of them.
var controlPlane = []string{
	module + "/functions",
	module + "/shared/auth",
	module + "/shared/bus",
	module + "/shared/catalog",
	module + "/shared/control",
	module + "/shared/deploy",
	module + "/shared/dlq",
	module + "/shared/engine",
	module + "/shared/inspect",
	module + "/shared/launch",
	module + "/shared/replay",
	module + "/shared/rerun",
	module + "/shared/operations",
	module + "/shared/router",
	module + "/shared/runnerclient",
	module + "/shared/wiring",
	module + "/shared/sign",
	module + "/shared/store",
	module + "/shared/subscribe",
	module + "/shared/tasks",
	module + "/shared/tools/allkinds",
	module + "/shared/tools/artifact",
	module + "/shared/tools/controlkinds",
	module + "/shared/tools/secrets",
	module + "/shared/worker",
}

// cloudClients are the Google Cloud client libraries (and their transport).
var cloudClients = []string{"cloud.google.com/go", "google.golang.org/api"}

// rule is one boundary: the build of root links no package matching any of
// forbidden (a pattern matches a path equal to it or below it).
type rule struct {
	root      string
	name      string
	forbidden []string
}

var rules = []rule{
	{rootRunner, "the runner links no control-plane client or package", append([]string{
		"cloud.google.com/go/firestore",
		"cloud.google.com/go/pubsub",
		"cloud.google.com/go/cloudtasks",
		"cloud.google.com/go/secretmanager",
	}, controlPlane...)},
	{rootFunctions, "the functions link no sandbox or author-code kind", []string{
		"github.com/duckdb",
		module + "/runner/kinds/python",
		module + "/runner/kinds/shell",
		module + "/runner/kinds/duckdb",
		module + "/shared/tools/allkinds",
		module + "/runner", // the runner binary, its server, sandbox, egress enforcement and kinds
	}},
	{rootEngine, "the pure engine links no cloud client, Arrow or OpenTelemetry exporter", append([]string{
		"github.com/apache/arrow-go",
		"go.opentelemetry.io/otel/exporters",
	}, cloudClients...)},
	{rootCLI, "the CLI links no cloud client", cloudClients},
}

// knownViolation is a forbidden link that is not yet removed: root links
// packages matching pattern, and every import chain that does goes
// through the package through. The test cuts through out of root's graph
// for that pattern, so any other chain (a new forbidden import) still
// fails, and an entry no chain needs any longer fails as stale (remove it
// when the refactoring lands).
type knownViolation struct {
	root, pattern, through string
	why                    string
}

// knownViolations is empty: the boundary holds with no exception. Keep
// the mechanism for a refactoring that must land in steps, never for a
// link that is meant to stay.
var knownViolations []knownViolation

// pkg is one package of `go list -deps -json`.
type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
	Dir        string
	GoFiles    []string
	CgoFiles   []string
}

// graph maps an import path to its direct imports.
type graph map[string][]string

// loadGraph runs `go list -deps -json` over roots from the module root, for
// the platform the builds ship on (linux/amd64, cgo on: DuckDB links C).
func loadGraph(t *testing.T, roots ...string) graph {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is required: %v", err)
	}
	dir, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json=ImportPath,Imports,Standard,Dir,GoFiles,CgoFiles"}, roots...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	g := graph{}
	var files []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		g[p.ImportPath] = p.Imports
		if p.ImportPath == module || strings.HasPrefix(p.ImportPath, module+"/") {
			files = append(files, p.Dir)
			for _, f := range append(p.GoFiles, p.CgoFiles...) {
				files = append(files, filepath.Join(p.Dir, f))
			}
		}
	}
	// go test caches a passing result keyed on the files the test
	// process itself opens, not those the go command it runs reads: open
	// every directory and source file of the module's packages in the
	// graph (and go.mod, go.sum), so that any edit of an import, a new
	// file or a new dependency version reruns the test instead of
	// replaying a stale pass.
	for _, f := range append(files, filepath.Join(dir, "go.mod"), filepath.Join(dir, "go.sum")) {
		if fh, err := os.Open(f); err == nil {
			if st, err := fh.Stat(); err == nil && st.IsDir() {
				_, _ = fh.Readdirnames(-1)
			} else {
				_, _ = io.Copy(io.Discard, fh)
			}
			_ = fh.Close()
		}
	}
	for _, r := range roots {
		if strings.HasSuffix(r, "/...") {
			continue // a pattern, not a package
		}
		if _, ok := g[r]; !ok {
			t.Fatalf("go list did not return the root %s", r)
		}
	}
	return g
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// matches reports whether path is pattern or a package below it.
func matches(path, pattern string) bool {
	return path == pattern || strings.HasPrefix(path, pattern+"/")
}

// reach walks g breadth-first from root, never entering a package of cut,
// and returns the shortest chain (root first) to each package it reaches
// that matches pattern, in the order reached.
func reach(g graph, root, pattern string, cut []string) [][]string {
	parent := map[string]string{root: ""}
	queue := []string{root}
	var found [][]string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != root && matches(p, pattern) {
			var chain []string
			for q := p; q != ""; q = parent[q] {
				chain = append(chain, q)
			}
			slices.Reverse(chain)
			found = append(found, chain)
			continue
		}
		for _, imp := range g[p] {
			if _, seen := parent[imp]; seen || slices.Contains(cut, imp) {
				continue
			}
			parent[imp] = p
			queue = append(queue, imp)
		}
	}
	return found
}

// short trims the module prefix for messages.
func short(path string) string {
	if path == module {
		return ". (module root)"
	}
	return strings.TrimPrefix(path, module+"/")
}

func chainString(chain []string) string {
	s := make([]string, len(chain))
	for i, p := range chain {
		s[i] = short(p)
	}
	return strings.Join(s, " -> ")
}

// check returns one message per broken rule of rs over g (a forbidden link
// not covered by a known violation) and per stale known violation.
func check(g graph, rs []rule, known []knownViolation) []string {
	var problems []string
	for _, r := range rs {
		for _, pattern := range r.forbidden {
			var cut []string
			for _, k := range known {
				if k.root == r.root && k.pattern == pattern {
					cut = append(cut, k.through)
				}
			}
			if found := reach(g, r.root, pattern, cut); len(found) > 0 {
				problems = append(problems, fmt.Sprintf("%s: %s links %s (entered at %d package(s)), e.g.\n\t%s",
					r.name, short(r.root), pattern, len(found), chainString(found[0])))
			}
		}
	}
	for i, k := range known {
		var others []string
		for j, o := range known {
			if j != i && o.root == k.root && o.pattern == k.pattern {
				others = append(others, o.through)
			}
		}
		if len(reach(g, k.root, k.pattern, others)) == 0 {
			problems = append(problems, fmt.Sprintf("stale known violation: %s no longer links %s through %s: remove the entry",
				short(k.root), k.pattern, short(k.through)))
		}
	}
	return problems
}

// TestPlanesBoundary is the compile-time boundary of docs "Architecture"
// ("the planes are separate at compile time too"): each build links
// nothing of the plane it must not reach. On failure it prints the import
// chain (root first) that brings the forbidden package in.
func TestPlanesBoundary(t *testing.T) {
	g := loadGraph(t, rootFunctions, rootRunner, rootEngine, rootCLI)
	for _, k := range knownViolations {
		if !slices.ContainsFunc(rules, func(r rule) bool { return r.root == k.root && slices.Contains(r.forbidden, k.pattern) }) {
			t.Errorf("known violation %s / %s names no rule's pattern", short(k.root), k.pattern)
		}
	}
	for _, p := range check(g, rules, knownViolations) {
		t.Error(p)
	}
	for _, k := range knownViolations {
		t.Logf("known violation (to remove): %s links %s through %s: %s", short(k.root), k.pattern, short(k.through), k.why)
	}
}

// TestCheckFindsChain proves the checker on a small graph: a forbidden
// package reached through two paths is reported with the shorter chain, a
// known violation cuts only its own path, and an entry no path needs is
// reported stale.
func TestCheckFindsChain(t *testing.T) {
	g := graph{
		"root": {"a", "b"},
		"a":    {"c"},
		"b":    {"bad/x"},
		"c":    {"bad/y"},
	}
	rs := []rule{{"root", "no bad", []string{"bad"}}}
	got := check(g, rs, nil)
	if len(got) != 1 || !strings.Contains(got[0], "root -> b -> bad/x") || !strings.Contains(got[0], "2 package(s)") {
		t.Fatalf("check without known violations = %q, want the chain root -> b -> bad/x of 2 packages", got)
	}
	got = check(g, rs, []knownViolation{{root: "root", pattern: "bad", through: "b"}})
	if len(got) != 1 || !strings.Contains(got[0], "root -> a -> c -> bad/y") {
		t.Fatalf("check with b known = %q, want the other chain root -> a -> c -> bad/y", got)
	}
	if got = check(g, rs, []knownViolation{{root: "root", pattern: "bad", through: "b"}, {root: "root", pattern: "bad", through: "a"}}); len(got) != 0 {
		t.Fatalf("check with both paths known = %q, want none", got)
	}
	got = check(g, rs, []knownViolation{{root: "root", pattern: "bad", through: "b"}, {root: "root", pattern: "bad", through: "a"}, {root: "root", pattern: "bad", through: "zzz"}})
	if len(got) != 1 || !strings.Contains(got[0], "stale known violation") || !strings.Contains(got[0], "zzz") {
		t.Fatalf("check with an unneeded entry = %q, want it reported stale", got)
	}
	if !matches("bad/x", "bad") || matches("badly", "bad") {
		t.Fatal("matches must respect path boundaries")
	}
}
