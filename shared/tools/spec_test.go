package tools_test

import (
	"go/ast"
	"go/types"
	"reflect"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/noetl/gcpengine/shared/toolspec"
)

// specTools maps each kind whose tool reads its configuration through its
// typed spec (toolspec) to the tool's package.
var specTools = map[string]string{
	"noop":         "github.com/noetl/gcpengine/shared/tools/noop",
	"postgres":     "github.com/noetl/gcpengine/runner/kinds/postgres",
	"gcs":          "github.com/noetl/gcpengine/runner/kinds/gcs",
	"s3":           "github.com/noetl/gcpengine/runner/kinds/s3",
	"secrets":      "github.com/noetl/gcpengine/shared/tools/secrets",
	"shell":        "github.com/noetl/gcpengine/runner/kinds/shell",
	"http":         "github.com/noetl/gcpengine/shared/tools/http",
	"python":       "github.com/noetl/gcpengine/runner/kinds/python",
	"artifact":     "github.com/noetl/gcpengine/shared/tools/artifact",
	"result_fetch": "github.com/noetl/gcpengine/shared/tools/artifact",
	"nats":         "github.com/noetl/gcpengine/runner/kinds/nats",
	"subscription": "github.com/noetl/gcpengine/runner/kinds/subscription",
	"transfer":     "github.com/noetl/gcpengine/runner/kinds/transfer",
	"duckdb":       "github.com/noetl/gcpengine/runner/kinds/duckdb",
}

// mapTools are the kinds whose tool still reads its configuration map by
// key (their spec is the validator's and the schema's only). playbook and
// workbook are run by the worker, not by a tool package.
var mapTools = []string{"playbook", "workbook"}

// TestSpecFieldsRead ties each kind's typed spec to its tool (the
// validator's list of keys and the tool's reads had drifted): for
// every kind of specTools,
//
//   - every field of the spec is read by the tool package (a selection of
//     the field on a value of the spec's type), unless its ignored tag
//     says why it is accepted without being used;
//   - the tool's configuration map (the config parameter of Exec,
//     ExecBarrier, ExecContext) is used only as the argument of
//     toolspec.Decode: no key is looked up by string;
//
// and every kind is either in specTools or in mapTools. A field read but
// not declared does not compile.
func TestSpecFieldsRead(t *testing.T) {
	all := map[string]bool{}
	for _, k := range toolspec.Kinds() {
		all[k] = true
	}
	for _, k := range mapTools {
		if _, dup := specTools[k]; dup {
			t.Errorf("kind %s is both in specTools and mapTools", k)
		}
		delete(all, k)
	}
	for k := range specTools {
		delete(all, k)
	}
	if len(all) > 0 {
		t.Errorf("kinds neither in specTools nor in mapTools: %v", all)
	}

	var paths []string
	for _, p := range specTools {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax | packages.NeedImports | packages.NeedDeps}
	pkgs, err := packages.Load(cfg, paths...)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]*packages.Package{}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
		byPath[p.PkgPath] = p
	}
	specs := toolspec.Specs()
	for kind, path := range specTools {
		p := byPath[path]
		if p == nil {
			t.Errorf("%s: package %s not loaded", kind, path)
			continue
		}
		specName := reflect.TypeOf(specs[kind]).Name()
		read := fieldsRead(p, specName)
		for _, f := range toolspec.Fields(kind) {
			switch {
			case f.Ignored != "" && read[f.GoName]:
				t.Errorf("%s: field %s (%s) is read by the tool but tagged ignored", kind, f.GoName, f.Key)
			case f.Ignored == "" && !read[f.GoName]:
				t.Errorf("%s: field %s (key %s) is declared but never read by %s", kind, f.GoName, f.Key, path)
			}
		}
		for _, use := range configUses(p) {
			t.Errorf("%s: %s", kind, use)
		}
	}
}

// fieldsRead returns the fields of toolspec.<specName> that package p
// selects (reads or writes) on a value of that type.
func fieldsRead(p *packages.Package, specName string) map[string]bool {
	out := map[string]bool{}
	for sel, s := range p.TypesInfo.Selections {
		if s.Kind() != types.FieldVal {
			continue
		}
		recv := s.Recv()
		if ptr, ok := recv.(*types.Pointer); ok {
			recv = ptr.Elem()
		}
		n, ok := recv.(*types.Named)
		if !ok || n.Obj().Name() != specName || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != "github.com/noetl/gcpengine/shared/toolspec" {
			continue
		}
		if len(s.Index()) == 1 && !isAssignedOnly(p, sel) {
			out[sel.Sel.Name] = true
		}
	}
	return out
}

// isAssignedOnly reports whether sel is only the left-hand side of an
// assignment (a write, not a read).
func isAssignedOnly(p *packages.Package, sel *ast.SelectorExpr) bool {
	for _, f := range p.Syntax {
		found := false
		ast.Inspect(f, func(n ast.Node) bool {
			if found {
				return false
			}
			if as, ok := n.(*ast.AssignStmt); ok {
				for _, l := range as.Lhs {
					if l == sel {
						found = true
						return false
					}
				}
			}
			return true
		})
		if found {
			return true
		}
	}
	return false
}

// configUses returns, for every use of an Exec-family method's config
// parameter that is not the argument of toolspec.Decode, a description.
func configUses(p *packages.Package) []string {
	params := map[types.Object]bool{}
	for _, f := range p.Syntax {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !strings.HasPrefix(fd.Name.Name, "Exec") {
				continue
			}
			for _, field := range fd.Type.Params.List {
				for _, name := range field.Names {
					obj := p.TypesInfo.Defs[name]
					if obj == nil {
						continue
					}
					if m, ok := obj.Type().Underlying().(*types.Map); ok && m.Key().String() == "string" && (name.Name == "config" || name.Name == "cfg") {
						params[obj] = true
					}
				}
			}
		}
	}
	allowed := map[*ast.Ident]bool{}
	var out []string
	for _, f := range p.Syntax {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "toolspec" && strings.HasPrefix(sel.Sel.Name, "Decode") && len(call.Args) > 0 {
					if id, ok := call.Args[0].(*ast.Ident); ok {
						allowed[id] = true
					}
				}
			}
			// An Exec that hands its config to its sibling (Exec →
			// ExecBarrier / ExecContext) passes it on unread.
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Exec") {
				for _, a := range call.Args {
					if id, ok := a.(*ast.Ident); ok {
						allowed[id] = true
					}
				}
			}
			return true
		})
	}
	for id, obj := range p.TypesInfo.Uses {
		if params[obj] && !allowed[id] {
			out = append(out, p.Fset.Position(id.Pos()).String()+": the config map is read directly (use the kind's toolspec struct)")
		}
	}
	sort.Strings(out)
	return out
}
