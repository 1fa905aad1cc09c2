package wiring

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/bus/pubsubbus"
	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/deploy"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
	"github.com/noetl/gcpengine/shared/tasks/cloudtasks"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/controlkinds"
)

// recorder is a Builders table that records which builders ran and
// returns inert clients (nothing is dialled).
type recorder struct {
	ran []string
	// fail makes the named builder fail (once per entry).
	fail map[string]int
}

func (r *recorder) hit(name string) error {
	r.ran = append(r.ran, name)
	if r.fail[name] > 0 {
		r.fail[name]--
		return errors.New(name + " unavailable")
	}
	return nil
}

func (r *recorder) builders() Builders {
	return Builders{
		Logger: func(config.Config) slog.Handler { _ = r.hit("logger"); return slog.DiscardHandler },
		Store: func(context.Context, config.Config) (*firestorestore.Firestore, error) {
			return &firestorestore.Firestore{}, r.hit("store")
		},
		Bus: func(context.Context, config.Config, *sign.Signer) (*pubsubbus.PubSub, error) {
			return &pubsubbus.PubSub{}, r.hit("bus")
		},
		Flusher: func(context.Context, *pubsubbus.PubSub, *slog.Logger) { _ = r.hit("flusher") },
		Dispatcher: func(context.Context, config.Config) (*cloudtasks.Dispatcher, error) {
			return &cloudtasks.Dispatcher{}, r.hit("dispatcher")
		},
		Results: func(context.Context, config.Config) (*results.Store, func(), error) {
			return &results.Store{}, nil, r.hit("results")
		},
		Credentials: func(context.Context, config.Config, *firestorestore.Firestore, *sign.Signer) (credentials.Store, func(), error) {
			return credentials.NewMemory(), nil, r.hit("credentials")
		},
		Tools: func(controlkinds.Options) (tools.Registry, func()) {
			_ = r.hit("tools")
			return tools.Registry{}, nil
		},
		Runner: func(config.Config, credentials.Store, *results.Store, *slog.Logger) tools.Registry {
			_ = r.hit("runner")
			return tools.Registry{}
		},
	}
}

func testConfig() config.Config {
	return config.Config{SigningKey: "deps-test-signing-key-0123456789abcdef0123", Project: "p"}
}

// needNames are the Needs constants a function package may name.
var needNames = map[string]Needs{
	"NeedDispatcher": NeedDispatcher, "NeedResults": NeedResults, "NeedCredentials": NeedCredentials, "NeedCatalog": NeedCatalog,
	"NeedControl": NeedControl, "NeedRouter": NeedRouter, "NeedWorker": NeedWorker, "NeedExecutor": NeedExecutor,
}

// memberNeed is the Need behind each Deps member that is not in the base;
// baseMembers are the members every function has (NewDeps).
var (
	memberNeed = map[string]Needs{
		"Dispatcher": NeedDispatcher, "Results": NeedResults, "Credentials": NeedCredentials, "Catalog": NeedCatalog,
		"Control": NeedControl, "Router": NeedRouter, "Worker": NeedWorker, "Executor": NeedExecutor,
		"Tasks": NeedDispatcher, // a method: the Dispatcher behind the latency profile
	}
	baseMembers = []string{"Cfg", "Log", "Signer", "Store", "Bus", "AckPermanent", "AckPermanentUnit", "RedactorOf"}
)

// wantBuilt is what each function's instance constructs: the base
// (logger, store, bus, flusher) and what its code uses. Only execute
// builds tools and the runner client; materialize and emit build nothing
// but the base, dispatch adds the Cloud Tasks client and the results tier
// its large bodies go to.
var wantBuilt = map[string][]string{
	"api":         {"logger", "store", "bus", "flusher", "results", "dispatcher", "credentials"},
	"emit":        {"logger", "store", "bus", "flusher"},
	"execute":     {"logger", "store", "bus", "flusher", "results", "dispatcher", "credentials", "tools", "runner"},
	"route":       {"logger", "store", "bus", "flusher", "results", "dispatcher", "credentials"},
	"materialize": {"logger", "store", "bus", "flusher"},
	"dispatch":    {"logger", "store", "bus", "flusher", "results", "dispatcher"},
	"subscribe":   {"logger", "store", "bus", "flusher", "credentials"},
}

// declaredNeeds reads the Needs constant of the function package in dir
// (const Needs = wiring.NeedA | wiring.NeedB, or 0).
func declaredNeeds(t *testing.T, dir string) Needs {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var eval func(e ast.Expr) Needs
	eval = func(e ast.Expr) Needs {
		switch x := e.(type) {
		case *ast.BinaryExpr:
			if x.Op != token.OR {
				t.Fatalf("%s: Needs uses %s (only |)", dir, x.Op)
			}
			return eval(x.X) | eval(x.Y)
		case *ast.ParenExpr:
			return eval(x.X)
		case *ast.BasicLit:
			if x.Value != "0" {
				t.Fatalf("%s: Needs is the literal %s", dir, x.Value)
			}
			return 0
		case *ast.SelectorExpr:
			n, ok := needNames[x.Sel.Name]
			if !ok {
				t.Fatalf("%s: Needs names %s, unknown to the test", dir, x.Sel.Name)
			}
			return n
		}
		t.Fatalf("%s: Needs is not a constant expression of wiring.Need*: %T", dir, e)
		return 0
	}
	found := false
	var needs Needs
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range af.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name == "Needs" && i < len(vs.Values) {
						needs, found = eval(vs.Values[i]), true
					}
				}
			}
		}
	}
	if !found {
		t.Fatalf("%s declares no const Needs (what the function builds, passed to wiring.Get)", dir)
	}
	return needs
}

// Each function declares exactly what its code uses (the Deps members its
// source reads: no more, no fewer), and its instance constructs only
// that: materialize and dispatch build no tools, no runner client, no
// credential store; only execute builds the tool registry.
func TestFunctionsBuildOnlyWhatTheyUse(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, fn := range deploy.Functions {
		t.Run(fn.Name, func(t *testing.T) {
			dir := filepath.Join(root, strings.TrimPrefix(fn.Package, deploy.Module+"/"))
			declared := declaredNeeds(t, dir)
			_, members := scanDeps(t, dir)
			var used Needs
			for m := range members {
				if n, ok := memberNeed[m]; ok {
					used |= n
				} else if !slices.Contains(baseMembers, m) {
					t.Errorf("the code uses Deps.%s, which the test does not classify (memberNeed or baseMembers)", m)
				}
			}
			if declared != used {
				t.Errorf("Needs = %b, but the code uses %b (%v): declare what it uses, and only that", declared, used, members)
			}
			rec := &recorder{}
			d, err := NewDeps(context.Background(), testConfig(), rec.builders())
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Ensure(context.Background(), declared); err != nil {
				t.Fatal(err)
			}
			if members["Executor"] {
				d.Executor()
			}
			want, ok := wantBuilt[fn.Name]
			if !ok {
				t.Fatalf("no wantBuilt entry for %s", fn.Name)
			}
			got := slices.Clone(rec.ran)
			slices.Sort(got)
			want = slices.Clone(want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("built %v, want %v", got, want)
			}
			// Every member the code uses is there; every member it does not
			// use (nor needs through one it uses) is nil.
			v := reflect.ValueOf(d).Elem()
			for m, n := range memberNeed {
				if m == "Executor" || m == "Tasks" { // methods, not fields
					continue
				}
				have := !v.FieldByName(m).IsNil()
				if need := used.Closure()&n != 0; have != need {
					t.Errorf("Deps.%s built=%v, but the code needs it: %v", m, have, need)
				}
			}
			if tools := d.Worker != nil && d.Worker.Tools != nil; tools != members["Executor"] {
				t.Errorf("tool registry built=%v, code uses the executor: %v", tools, members["Executor"])
			}
		})
	}
}

// Ensure builds each dependency once, with what it is made of; a failed
// build is returned and tried again on the next call, what was built
// stays.
func TestEnsureBuildsOnceAndRetries(t *testing.T) {
	rec := &recorder{fail: map[string]int{"dispatcher": 1}}
	d, err := NewDeps(context.Background(), testConfig(), rec.builders())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Ensure(context.Background(), NeedDispatcher); err == nil || d.Dispatcher != nil {
		t.Fatalf("a failing dispatcher builder: err %v, dispatcher %v", err, d.Dispatcher)
	}
	if d.Built() != NeedResults {
		t.Errorf("built %b after the failure, want the results tier only (%b)", d.Built(), NeedResults)
	}
	for range 2 {
		if err := d.Ensure(context.Background(), NeedDispatcher); err != nil {
			t.Fatal(err)
		}
	}
	if d.Dispatcher == nil || d.Dispatcher.Bodies != d.Results || d.Dispatcher.Signer != d.Signer {
		t.Errorf("dispatcher %+v: want its bodies in the results tier and the deployment's signer", d.Dispatcher)
	}
	want := []string{"logger", "store", "bus", "flusher", "results", "dispatcher", "dispatcher"}
	if !slices.Equal(rec.ran, want) {
		t.Errorf("builders ran %v, want %v", rec.ran, want)
	}
	// The union of what two functions sharing a process declare (the local
	// stack): the router's closure is added, the tools still are not.
	if err := d.Ensure(context.Background(), NeedRouter); err != nil {
		t.Fatal(err)
	}
	if d.Router == nil || d.Worker != nil || slices.Contains(rec.ran, "tools") || rec.ran[len(rec.ran)-1] != "credentials" {
		t.Errorf("after NeedRouter: router %v, worker %v, ran %v", d.Router, d.Worker, rec.ran)
	}
}

// A function without the signing key does not start, and builds no
// client.
func TestNewDepsNeedsTheSigningKey(t *testing.T) {
	rec := &recorder{}
	cfg := testConfig()
	cfg.SigningKey = ""
	if _, err := NewDeps(context.Background(), cfg, rec.builders()); err == nil || !strings.Contains(err.Error(), "NOETL_SIGNING_KEY") {
		t.Fatalf("err %v, want the signing key's", err)
	}
	if !slices.Equal(rec.ran, []string{"logger"}) {
		t.Errorf("built %v without a signing key", rec.ran)
	}
}

func TestNeedsClosure(t *testing.T) {
	for _, c := range []struct{ in, want Needs }{
		{0, 0},
		{NeedResults, NeedResults},
		{NeedDispatcher, NeedDispatcher | NeedResults},
		{NeedCatalog | NeedCredentials, NeedCatalog | NeedCredentials},
		{NeedRouter, NeedRouter | NeedDispatcher | NeedResults | NeedCredentials},
		{NeedExecutor, NeedExecutor | NeedWorker | NeedCatalog | NeedDispatcher | NeedResults | NeedCredentials},
	} {
		if got := c.in.Closure(); got != c.want {
			t.Errorf("Closure(%b) = %b, want %b", c.in, got, c.want)
		}
	}
}
