package errs_test

import (
	"go/ast"
	"go/constant"
	gotypes "go/types"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/noetl/gcpengine/shared/types"
)

const (
	modPath   = "github.com/noetl/gcpengine"
	typesPath = modPath + "/shared/types"
)

// TestOneErrorVocabulary is the rule of the engine's errors: a task
// failure's kind is a constant of types.ErrorKind (never a literal, a
// conversion or a constant declared elsewhere), and an exported error
// sentinel carries an errs code (errs.Sentinel), so the policy table
// decides its retry. It reads the module's production code (tests may
// forge kinds to test their handling) and reports:
//   - an expression of type ErrorKind that is a constant but not a
//     reference to a constant of shared/types ("internal" passed to
//     conf.Fail, TaskError{Kind: "x"}, a local const of the type);
//   - a conversion to ErrorKind outside shared/types (a string made a
//     kind); a constant of the type declared elsewhere is an alias whose
//     value must itself name a constant of shared/types;
//   - an ErrorKind constant of shared/types outside types.ErrorKinds;
//   - an exported package-level var initialized by errors.New or
//     fmt.Errorf (its errs code is Unknown: retried).
func TestOneErrorVocabulary(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the whole module")
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax, Dir: "../.."}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
		if p.TypesInfo == nil {
			continue
		}
		bad = append(bad, vocabularyProblems(p)...)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	if len(bad) > 0 {
		t.Logf("%d problems: use a types.ErrKind* constant (add one to shared/types/errorkind.go, documented, for a new kind) and errs.Sentinel for sentinels", len(bad))
	}
}

// isErrorKind reports whether t is types.ErrorKind.
func isErrorKind(t gotypes.Type) bool {
	n, ok := t.(*gotypes.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == typesPath && n.Obj().Name() == "ErrorKind"
}

func vocabularyProblems(p *packages.Package) []string {
	var bad []string
	info := p.TypesInfo
	pos := func(n ast.Node) string { return p.Fset.Position(n.Pos()).String() }
	known := map[string]bool{}
	for _, k := range types.ErrorKinds() {
		known[string(k)] = true
	}
	for _, f := range p.Syntax {
		if strings.HasSuffix(p.Fset.Position(f.Pos()).Filename, "_test.go") {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				// A conversion to ErrorKind outside its package.
				if tv, ok := info.Types[x.Fun]; ok && tv.IsType() && isErrorKind(tv.Type) && p.PkgPath != typesPath {
					bad = append(bad, pos(x)+": conversion to types.ErrorKind (use a constant of the vocabulary)")
					return false
				}
			case *ast.ValueSpec:
				// Package-level sentinels: exported vars of errors.New/fmt.Errorf.
				for i, name := range x.Names {
					if obj, ok := info.Defs[name].(*gotypes.Const); ok && isErrorKind(obj.Type()) {
						if p.PkgPath == typesPath && !known[strings.Trim(obj.Val().ExactString(), `"`)] {
							bad = append(bad, pos(name)+": "+name.Name+" is missing from types.ErrorKinds")
						}
					}
					v, ok := info.Defs[name].(*gotypes.Var)
					if !ok || !name.IsExported() || v.Parent() != p.Types.Scope() || i >= len(x.Values) {
						continue
					}
					if call, ok := x.Values[i].(*ast.CallExpr); ok {
						if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
							if fn, ok := info.Uses[sel.Sel].(*gotypes.Func); ok && fn.Pkg() != nil &&
								(fn.Pkg().Path() == "errors" && fn.Name() == "New" || fn.Pkg().Path() == "fmt" && fn.Name() == "Errorf") {
								bad = append(bad, pos(name)+": sentinel "+name.Name+" has no errs code (errs.CodeOf is Unknown, retried): declare it with errs.Sentinel")
							}
						}
					}
				}
			case ast.Expr:
				tv, ok := info.Types[x]
				if !ok || tv.Value == nil || tv.Value.Kind() != constant.String || !isErrorKind(tv.Type) || p.PkgPath == typesPath {
					return true
				}
				// A constant kind: it must name a constant of shared/types.
				var id *ast.Ident
				switch e := ast.Unparen(x).(type) {
				case *ast.Ident:
					id = e
				case *ast.SelectorExpr:
					id = e.Sel
				}
				if id != nil {
					if c, ok := info.Uses[id].(*gotypes.Const); ok && c.Pkg() != nil && c.Pkg().Path() == typesPath {
						return false
					}
					if c, ok := info.Uses[id].(*gotypes.Const); ok && c.Pkg() != nil && strings.HasPrefix(c.Pkg().Path(), modPath) && isErrorKind(c.Type()) {
						return false // an alias constant of one (http.KindRateLimit = types.ErrKindRateLimit); its declaration is checked
					}
				}
				bad = append(bad, pos(x)+": kind "+tv.Value.ExactString()+" written as a literal (use a types.ErrKind* constant)")
				return false
			}
			return true
		})
	}
	return bad
}
