package config

import (
	"go/ast"
	"go/types"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/go/packages"
)

// readOutsideGo are the knobs whose consumer is not Go code of the
// module outside shared/config, with the file that reads them (the test
// checks the file names the variable or its field).
var readOutsideGo = map[string]string{
	// The base of the derived defaults of NOETL_EXECUTE_URL and
	// NOETL_SUBSCRIBE_URL (derive); the CLI and scripts/lib.sh read the
	// variable too.
	"NOETL_FUNCTIONS_URL": "shared/config/config.go",
}

// knobPaths returns each knob's field path in Config as "Type.Field"
// elements, e.g. NOETL_RETRIES_PLUGIN_MAX_ATTEMPTS →
// [Config.Retries RetriesConfig.Plugin Backoff.MaxAttempts].
func knobPaths(t *testing.T) map[string][]string {
	var c Config
	at := map[uintptr][]string{}
	var walk func(v reflect.Value, path []string)
	walk = func(v reflect.Value, path []string) {
		if v.Kind() == reflect.Struct && v.Type() != reflect.TypeOf(time.Duration(0)) {
			for i := 0; i < v.NumField(); i++ {
				walk(v.Field(i), append(append([]string(nil), path...), v.Type().Name()+"."+v.Type().Field(i).Name))
			}
			return
		}
		at[v.Addr().Pointer()] = path
	}
	walk(reflect.ValueOf(&c).Elem(), nil)
	out := map[string][]string{}
	for _, k := range Knobs() {
		p, ok := at[reflect.ValueOf(k.field(&c)).Pointer()]
		if !ok {
			t.Fatalf("%s: its field is not in Config", k.Env)
		}
		out[k.Env] = p
	}
	return out
}

// TestEveryKnobIsRead is the rule of settings (README "Configuration"): a
// knob of the registry that nothing reads is a defect — an operator who
// sets it believes something changes. Every knob's Config field must be
// read by the module's Go code outside shared/config and outside tests
// (a selection of the field on a value of its type: cfg.DLQ.Enabled; the
// chain of selections must end at the knob's own field, and a chain that
// starts from a value of an inner type — b.MaxAttempts on a
// config.Backoff — counts for every knob of that type), or be listed in
// readOutsideGo with the file that reads it.
func TestEveryKnobIsRead(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the whole module")
	}
	paths := knobPaths(t)
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax, Dir: "../.."}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	const self = "github.com/noetl/gcpengine/shared/config"
	var uses [][]string
	where := map[string]string{}
	methods := map[string][][]string{}
	var called []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
		if p.TypesInfo == nil {
			continue
		}
		if p.PkgPath == self {
			// A method of Config reads for its callers (QueuePath reads
			// Project and Location, Retention RetentionDays).
			for _, f := range p.Syntax {
				for _, d := range f.Decls {
					fd, ok := d.(*ast.FuncDecl)
					if !ok || fd.Recv == nil || fd.Body == nil || !strings.Contains(types.ExprString(fd.Recv.List[0].Type), "Config") {
						continue
					}
					ast.Inspect(fd.Body, func(n ast.Node) bool {
						if sel, ok := n.(*ast.SelectorExpr); ok {
							if chain := configChain(p.TypesInfo, sel, self); len(chain) > 0 {
								methods[fd.Name.Name] = append(methods[fd.Name.Name], chain)
							}
						}
						return true
					})
				}
			}
			continue
		}
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if m, ok := p.TypesInfo.Selections[sel]; ok && m.Kind() == types.MethodVal && m.Obj().Pkg() != nil && m.Obj().Pkg().Path() == self {
					called = append(called, m.Obj().Name())
				}
				chain := configChain(p.TypesInfo, sel, self)
				if len(chain) > 0 {
					uses = append(uses, chain)
					key := strings.Join(chain, "/")
					if _, seen := where[key]; !seen {
						where[key] = p.Fset.Position(sel.Pos()).String()
					}
				}
				return true
			})
		}
	}
	for _, m := range called {
		for _, c := range methods[m] {
			uses = append(uses, c)
			if key := strings.Join(c, "/"); where[key] == "" {
				where[key] = "Config." + m + " (shared/config)"
			}
		}
	}
	for _, k := range Knobs() {
		if file, ok := readOutsideGo[k.Env]; ok {
			b, err := os.ReadFile("../../" + file)
			field := paths[k.Env][len(paths[k.Env])-1]
			if err != nil || !strings.Contains(string(b), k.Env) && !strings.Contains(string(b), "c."+field[strings.Index(field, ".")+1:]) {
				t.Errorf("%s: readOutsideGo names %s, which does not read it", k.Env, file)
			}
			continue
		}
		path := paths[k.Env]
		read := false
		for _, u := range uses {
			if isSuffix(u, path) {
				read = true
				t.Logf("%s is read at %s", k.Env, where[strings.Join(u, "/")])
				break
			}
		}
		if !read {
			t.Errorf("%s (Config field %s) is read nowhere outside shared/config: wire it to what it configures, or remove it from the registry and the docs", k.Env, strings.Join(path, " → "))
		}
	}
}

// configChain returns the chain of field selections on types of package
// self that ends at sel ("Type.Field" elements, outermost first), or nil
// when sel selects no field of such a type.
func configChain(info *types.Info, sel *ast.SelectorExpr, self string) []string {
	var chain []string
	var x ast.Expr = sel
	for {
		s, ok := x.(*ast.SelectorExpr)
		if !ok {
			break
		}
		selection, ok := info.Selections[s]
		if !ok || selection.Kind() != types.FieldVal || len(selection.Index()) != 1 {
			break
		}
		recv := selection.Recv()
		if ptr, ok := recv.(*types.Pointer); ok {
			recv = ptr.Elem()
		}
		named, ok := recv.(*types.Named)
		if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != self {
			break
		}
		chain = append([]string{named.Obj().Name() + "." + s.Sel.Name}, chain...)
		x = ast.Unparen(s.X)
	}
	if len(chain) == 0 || !strings.HasSuffix(chain[len(chain)-1], "."+sel.Sel.Name) {
		return nil
	}
	return chain
}

// isSuffix reports whether use is a suffix of path (the read ends at the
// knob's field).
func isSuffix(use, path []string) bool {
	if len(use) > len(path) {
		return false
	}
	off := len(path) - len(use)
	for i := range use {
		if use[i] != path[off+i] {
			return false
		}
	}
	return true
}
