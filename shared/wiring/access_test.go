package wiring

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/deploy"
)

// depsOps says what a function certainly does when its code uses a member
// of Deps ("Field") or calls one of its methods ("Field.Method"): the
// lower bound of its operations that the IAM table (deploy.Access) must
// cover. Every Deps field is classified (TestAccessCoversTheCode fails on
// a new one).
var depsOps = map[string][]deploy.Op{
	"Cfg": nil, "Log": nil, "Signer": nil, "build": nil, "mu": nil, "built": nil, "granted": nil, "closers": nil, "stopFlusher": nil, "latent": nil,
	// The executor hands the runner kinds' attempts to the runner, with
	// the result grants it signs.
	"Executor":    {deploy.OpInvokeRunner, deploy.OpSignGrants},
	"Store":       {deploy.OpFirestore},
	"Catalog":     {deploy.OpFirestore},
	"Credentials": {deploy.OpFirestore}, // the Firestore credential store (credfirestore.NewFirestore)
	"Bus":         {deploy.OpPublishEvents},
	// A DLQ replay republishes a message on its topic: events, or
	// commands for dispatch's entries.
	"Bus.Republish": {deploy.OpPublishEvents, deploy.OpPublishCommands},
	// TaskCreate writes a unit over Cloud Tasks' 100 KB to the results
	// tier first (shared/tasks/cloudtasks TestTaskCreateLargeBody).
	"Dispatcher": {deploy.OpCreateTasks, deploy.OpWriteResults},
	// Deps.Tasks is the Dispatcher (behind the latency profile).
	"Tasks":   {deploy.OpCreateTasks, deploy.OpWriteResults},
	"Results": {deploy.OpReadResults},
	// Transitions: events, next units (tasks, or bulk fan-out on the
	// commands topic), loop plans and loop.done results in the tier.
	"Router":  {deploy.OpFirestore, deploy.OpPublishEvents, deploy.OpPublishCommands, deploy.OpCreateTasks, deploy.OpReadResults, deploy.OpWriteResults},
	"Control": {deploy.OpFirestore, deploy.OpPublishEvents, deploy.OpPublishCommands, deploy.OpCreateTasks, deploy.OpReadResults, deploy.OpWriteResults},
	// Stop lists and deletes the execution's pending tasks.
	"Control.Stop": {deploy.OpDeleteTasks},
	// The worker's control stops executions past their deadline.
	"Worker": {deploy.OpFirestore, deploy.OpPublishEvents, deploy.OpPublishCommands, deploy.OpCreateTasks, deploy.OpDeleteTasks, deploy.OpReadResults, deploy.OpWriteResults},
}

// constructOps says what a function does when its package builds one of
// these (a composite literal or a call): the clients it opens besides
// Deps.
var constructOps = map[string][]deploy.Op{
	"github.com/noetl/gcpengine/shared/subscribe.Registrar":         {deploy.OpRewireSubscriptions},
	"github.com/noetl/gcpengine/shared/subscribe/pubsubpull.Puller": {deploy.OpPullSubscriptions},
	"github.com/noetl/gcpengine/shared/subscribe/gcsspool.Buckets":  {deploy.OpSpool},
	// `noetl rebuild`: seek, pull and acknowledge the replay subscription.
	"github.com/noetl/gcpengine/shared/replay.OpenPubSub": {deploy.OpReplayEvents},
	// `noetl gc`: list and delete result objects.
	"github.com/noetl/gcpengine/shared/operations/gc.Collector": {deploy.OpReadResults, deploy.OpWriteResults},
}

// runtimeOps are what every function does through Get, with the call of
// NewDeps or DefaultBuilders (deps.go) that shows it.
var runtimeOps = map[string]deploy.Op{
	"firestorestore.OpenFirestore": deploy.OpFirestore,      // DLQ entries of AckPermanent
	"telemetry.Setup":              deploy.OpTelemetry,      // logs, metrics, traces
	"sign.Parse":                   deploy.OpReadSigningKey, // NOETL_SIGNING_KEY
	"bus.RunFlusher":               deploy.OpPublishEvents,  // operation counts on the events topic
}

// TestAccessCoversTheCode reads each function's source and checks that
// the IAM table (deploy.Access, which terraform/ grants) covers what the
// code does: the Deps members it uses (depsOps), the clients it builds
// (constructOps), and what every function does through the runtime
// (runtimeOps, shown by open's calls). A dispatch without results-tier
// access (large units), or a function without the events topic (the
// operation-count flusher), fails here.
func TestAccessCoversTheCode(t *testing.T) {
	for _, f := range reflect.VisibleFields(reflect.TypeOf(Deps{})) {
		if _, ok := depsOps[f.Name]; !ok {
			t.Errorf("Deps.%s is not classified in depsOps (what a function using it does)", f.Name)
		}
	}
	src, err := os.ReadFile("deps.go")
	if err != nil {
		t.Fatal(err)
	}
	for call, op := range runtimeOps {
		if !strings.Contains(string(src), call+"(") {
			t.Errorf("deps.go no longer calls %s: revisit runtimeOps (%s)", call, op)
		}
	}
	root := filepath.Join("..", "..")
	for _, fn := range deploy.Functions {
		dir := filepath.Join(root, strings.TrimPrefix(fn.Package, deploy.Module+"/"))
		used := usedOps(t, dir)
		for _, op := range runtimeOps {
			used[op] = "the runtime (Get)"
		}
		have := deploy.Ops(fn.Name)
		if have == nil {
			t.Errorf("%s: no entry in deploy.Access", fn.Name)
			continue
		}
		for op, why := range used {
			if !slices.Contains(have, op) {
				t.Errorf("%s does %s (%s) but deploy.Access does not list it: Terraform would not grant it", fn.Name, op, why)
			}
		}
	}
}

// usedOps parses the non-test Go files of the package in dir and returns
// the operations its use of Deps and of the constructOps shows, with the
// evidence.
func usedOps(t *testing.T, dir string) map[deploy.Op]string {
	t.Helper()
	ops, _ := scanDeps(t, dir)
	return ops
}

// scanDeps returns what usedOps returns and the names of the Deps members
// (fields and methods) the package's code uses.
func scanDeps(t *testing.T, dir string) (map[deploy.Op]string, map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, af)
	}
	// Names bound to *wiring.Deps: wiring.Get's first result, and
	// parameters, results and variables of that type (also through a
	// package function returning it).
	isDeps := func(e ast.Expr, runtimeName string) bool {
		st, ok := e.(*ast.StarExpr)
		if !ok {
			return false
		}
		sel, ok := st.X.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && id.Name == runtimeName && sel.Sel.Name == "Deps"
	}
	names := map[string]bool{}
	returns := map[string]int{} // package function → index of its *Deps result
	ops := map[deploy.Op]string{}
	members := map[string]bool{}
	for _, af := range parsed {
		imports := map[string]string{} // local name → path
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := filepath.Base(p)
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = p
		}
		rt := ""
		for name, p := range imports {
			if p == deploy.Module+"/shared/wiring" {
				rt = name
			}
		}
		fields := func(fl *ast.FieldList) {
			if fl == nil {
				return
			}
			for _, f := range fl.List {
				if isDeps(f.Type, rt) {
					for _, n := range f.Names {
						names[n.Name] = true
					}
				}
			}
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				fields(x.Type.Params)
				fields(x.Type.Results)
				if x.Type.Results != nil {
					i := 0
					for _, f := range x.Type.Results.List {
						k := max(1, len(f.Names))
						if isDeps(f.Type, rt) {
							returns[x.Name.Name] = i
						}
						i += k
					}
				}
			case *ast.FuncLit:
				fields(x.Type.Params)
			case *ast.ValueSpec:
				if isDeps(x.Type, rt) {
					for _, n := range x.Names {
						names[n.Name] = true
					}
				}
			case *ast.CompositeLit:
				if sel, ok := x.Type.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok {
						key := imports[id.Name] + "." + sel.Sel.Name
						for _, op := range constructOps[key] {
							ops[op] = "builds " + key
						}
					}
				}
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok {
						key := imports[id.Name] + "." + sel.Sel.Name
						for _, op := range constructOps[key] {
							ops[op] = "calls " + key
						}
					}
				}
			}
			return true
		})
		// wiring.Get's results, and those of package functions that
		// return *wiring.Deps.
		ast.Inspect(af, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Rhs) != 1 {
				return true
			}
			call, ok := as.Rhs[0].(*ast.CallExpr)
			if !ok {
				return true
			}
			idx := -1
			switch fun := call.Fun.(type) {
			case *ast.SelectorExpr:
				if id, ok := fun.X.(*ast.Ident); ok && id.Name == rt && fun.Sel.Name == "Get" {
					idx = 0
				}
			case *ast.Ident:
				if i, ok := returns[fun.Name]; ok {
					idx = i
				}
			}
			if idx >= 0 && idx < len(as.Lhs) {
				if id, ok := as.Lhs[idx].(*ast.Ident); ok && id.Name != "_" {
					names[id.Name] = true
				}
			}
			return true
		})
	}
	if len(names) == 0 {
		t.Fatalf("%s: found no *wiring.Deps in the function's code", dir)
	}
	for _, af := range parsed {
		ast.Inspect(af, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			// <deps>.Field
			if id, ok := sel.X.(*ast.Ident); ok && names[id.Name] {
				members[sel.Sel.Name] = true
				for _, op := range depsOps[sel.Sel.Name] {
					ops[op] = "uses Deps." + sel.Sel.Name
				}
			}
			// <deps>.Field.Method
			if inner, ok := sel.X.(*ast.SelectorExpr); ok {
				if id, ok := inner.X.(*ast.Ident); ok && names[id.Name] {
					key := inner.Sel.Name + "." + sel.Sel.Name
					for _, op := range depsOps[key] {
						ops[op] = "calls Deps." + key
					}
				}
			}
			return true
		})
	}
	return ops, members
}
