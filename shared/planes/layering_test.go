package planes

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// layer is one level of the layering: the packages whose import path is
// one of prefixes or below one of them. A package belongs to the layer of
// its longest matching prefix.
type layer struct {
	name     string
	prefixes []string
}

// layers is the layering of the module, lowest first. A package may
// import packages of its own layer and of the layers below it, never one
// above it (TestLayering). Every package of the module belongs to a layer:
// place a new package here when the test says it has none.
//
//	0 leaf        the vocabulary and utilities everything uses: types, errs
//	              (standard library only) and errs/googleerr (the Google
//	              clients' error mapping the drivers import), the wire formats, the DSL and its templates, history
//	              payloads, config, telemetry, signing and token checks,
//	              the egress policy
//	1 engine      the pure state machine and its read views
//	2 contracts   the interfaces the engine's I/O goes through and their
//	              types: store, bus, tasks, results, credentials, tools,
//	              the runner protocol, the catalog, replay
//	3 drivers     what implements a contract: the tool kinds and their
//	              registries, the credential drivers, the runner's client
//	              (control plane) and server, sandbox and egress
//	              enforcement (data plane)
//	4 operations  the control loop and what runs beside it: control,
//	              launch, router, worker, dlq, rerun, subscribe, operations
//	5 wiring      the composition root (shared/wiring)
//	6 binaries    the Cloud Functions, the runner, the CLIs, the emulators
//	              and the deployment's tests
var layers = []layer{
	{"leaf", []string{
		"shared/types", "shared/errs", "shared/errs/googleerr", "shared/jsonx", "shared/wire", "shared/display", "shared/suggest",
		"shared/redact", "shared/meter", "shared/faults", "shared/sign", "shared/oidc", "shared/auth",
		"shared/deploy", "shared/config", "shared/egress", "shared/telemetry", "shared/toolspec",
		"shared/history", "shared/template", "shared/dsl",
	}},
	{"engine", []string{"shared/engine", "shared/inspect"}},
	{"contracts", []string{
		"shared/store", "shared/bus", "shared/tasks", "shared/results", "shared/credentials",
		"shared/tools", "shared/runnerproto", "shared/catalog", "shared/replay", "shared/kafkasrc",
	}},
	{"drivers", []string{
		"shared/tools/", // the control plane's kinds below shared/tools (the contract is shared/tools itself); the runner's are under runner/kinds
		"shared/credentials/credfirestore", "shared/credentials/credsecretmanager", "shared/credentials/smfake",
		"shared/store/firestorefault", "shared/store/firestorestore", "shared/store/memstore", "shared/runnerclient",
		"runner/server", "runner/sandbox", "runner/egress", "runner/kinds",
		"shared/bus/pubsubbus", "shared/bus/membus", "shared/tasks/cloudtasks", "shared/tasks/memtasks", "shared/results/gcsresults", "shared/latency",
	}},
	{"operations", []string{
		"shared/control", "shared/launch", "shared/router", "shared/worker", "shared/dlq", "shared/rerun",
		"shared/subscribe", "shared/operations",
	}},
	{"wiring", []string{"shared/wiring"}},
	{"binaries", []string{
		"", // the module root: the function build
		"functions", "runner", "cmd", "emulators", "terraform", "infra", "shared/planes",
	}},
}

// layerOf returns the index of p's layer (p relative to the module, ""
// for its root) and the prefix that placed it, or -1.
func layerOf(ls []layer, p string) (int, string) {
	best, at := -1, ""
	for i, l := range ls {
		for _, pre := range l.prefixes {
			ok := p == pre || (pre == "" && p == "") ||
				(pre != "" && strings.HasSuffix(pre, "/") && strings.HasPrefix(p, pre)) ||
				(pre != "" && strings.HasPrefix(p, pre+"/"))
			// The longest prefix wins; "shared/tools/" (with its slash)
			// outranks "shared/tools".
			if ok && (best < 0 || len(pre) > len(at)) {
				best, at = i, pre
			}
		}
	}
	return best, at
}

// checkLayers returns one message per package of g (relative paths; the
// module's own) that has no layer and per import that goes up a layer,
// and one per prefix that places no package (a stale entry).
func checkLayers(g graph, ls []layer) []string {
	var problems []string
	used := map[string]bool{}
	var pkgs []string
	for p := range g {
		if rel, ok := relative(p); ok {
			pkgs = append(pkgs, rel)
		}
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		li, pre := layerOf(ls, p)
		if li < 0 {
			problems = append(problems, fmt.Sprintf("%s has no layer: add it to the table (layers)", short(abs(p))))
			continue
		}
		used[pre] = true
		for _, imp := range g[abs(p)] {
			rel, ok := relative(imp)
			if !ok {
				continue
			}
			if lj, _ := layerOf(ls, rel); lj > li {
				problems = append(problems, fmt.Sprintf("%s (%s) imports %s (%s), a layer above it",
					short(abs(p)), ls[li].name, short(imp), ls[lj].name))
			}
		}
	}
	for _, l := range ls {
		for _, pre := range l.prefixes {
			if !used[pre] {
				problems = append(problems, fmt.Sprintf("the prefix %q of layer %s places no package: remove it", pre, l.name))
			}
		}
	}
	return problems
}

// relative is p relative to the module ("" for the root) and whether p is
// the module's.
func relative(p string) (string, bool) {
	if p == module {
		return "", true
	}
	if rel, ok := strings.CutPrefix(p, module+"/"); ok {
		return rel, true
	}
	return "", false
}

// abs is the import path of rel.
func abs(rel string) string {
	if rel == "" {
		return module
	}
	return module + "/" + rel
}

// TestLayering reads the import graph of every package of the module
// (`go list -deps -json ./...`: the builds, not the tests) and fails when
// a package imports one of a layer above its own, or belongs to no layer.
func TestLayering(t *testing.T) {
	g := loadGraph(t, module+"/...")
	for _, p := range checkLayers(g, layers) {
		t.Error(p)
	}
	if t.Failed() {
		return
	}
	for i, l := range layers {
		t.Logf("layer %d %-10s %s", i, l.name, strings.Join(l.prefixes, " "))
	}
}

// TestCheckLayersFindsUpwardImport proves the checker on a small graph: an
// import down or across a layer passes, one up a layer is reported, a
// package of no layer is reported, and so is a prefix that places nothing.
func TestCheckLayersFindsUpwardImport(t *testing.T) {
	ls := []layer{
		{"leaf", []string{"shared/types"}},
		{"engine", []string{"shared/engine"}},
		{"drivers", []string{"shared/tools/", "shared/tools"}},
		{"top", []string{"", "cmd", "unused"}},
	}
	g := graph{
		abs(""):                    {abs("cmd/x"), abs("shared/engine")},
		abs("cmd/x"):               {abs("shared/types"), "fmt"},
		abs("shared/engine"):       {abs("shared/types"), abs("shared/tools/python")},
		abs("shared/tools"):        {abs("shared/types")},
		abs("shared/tools/python"): {abs("shared/tools"), abs("shared/engine")},
		abs("shared/types"):        nil,
		abs("stray"):               nil,
	}
	got := checkLayers(g, ls)
	want := []string{
		"shared/engine (engine) imports shared/tools/python (drivers), a layer above it",
		"stray has no layer",
		`the prefix "unused" of layer top places no package`,
	}
	if len(got) != len(want) {
		t.Fatalf("checkLayers = %q, want %d problems like %q", got, len(want), want)
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, w) }) {
			t.Errorf("checkLayers = %q, want one containing %q", got, w)
		}
	}
	if i, _ := layerOf(ls, "shared/tools/python"); i != 2 {
		t.Errorf("shared/tools/python in layer %d, want 2 (drivers)", i)
	}
	if i, _ := layerOf(ls, "shared/typesx"); i != -1 {
		t.Errorf("shared/typesx placed in layer %d: prefixes must respect path boundaries", i)
	}
}
