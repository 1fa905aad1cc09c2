package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxNoEffectTest is len(noEffectTest): it may only go down.
const maxNoEffectTest = 0

// testFuncs returns the body text of every function and t.Run subtest in
// the module's _test.go files, keyed "dir.Func" and "dir.Func/sub".
func testFuncs(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != root && (strings.HasPrefix(n, ".") || n == "third_party" || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		dir = filepath.ToSlash(dir)
		text := func(n ast.Node) string {
			return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Recv != nil {
				continue
			}
			key := dir + "." + fd.Name.Name
			out[key] = text(fd.Body)
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 2 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				lit, isLit := call.Args[0].(*ast.BasicLit)
				fn, isFn := call.Args[1].(*ast.FuncLit)
				if !ok || sel.Sel.Name != "Run" || !isLit || lit.Kind != token.STRING || !isFn {
					return true
				}
				if name, err := strconv.Unquote(lit.Value); err == nil {
					out[key+"/"+name] = text(fn.Body)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// names reports whether body names word as a whole identifier or
// variable name.
func names(body, word string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(word) + `($|[^A-Za-z0-9_])`).MatchString(body)
}

// TestEveryKnobHasAnEffectTest is the second half of the rule of settings
// (TestEveryKnobIsRead is the first): every knob names the tests that
// change it and observe the effect, each test exists (parsed, not run) and
// its body names the knob — its variable, an alias or its Config field —
// or the component option it is wired to; knobs without such a test are
// listed in noEffectTest, which may only shrink.
func TestEveryKnobHasAnEffectTest(t *testing.T) {
	funcs := testFuncs(t, "../..")
	paths := knobPaths(t)
	known := map[string]bool{}
	for _, k := range Knobs() {
		known[k.Env] = true
		tests, mapped := effectTests[k.Env]
		reason, listed := noEffectTest[k.Env]
		switch {
		case mapped && listed:
			t.Errorf("%s is both mapped to effect tests and listed in noEffectTest", k.Env)
		case !mapped && !listed:
			t.Errorf("%s has no effect test: add one that changes it and observes the effect, and name it in effectTests", k.Env)
		case listed && strings.TrimSpace(reason) == "":
			t.Errorf("%s: noEffectTest gives no reason", k.Env)
		}
		if !mapped {
			continue
		}
		// The words that name this knob in a test: its variable, its
		// aliases, its Config field (with the field that holds it, for a
		// nested one: Sandbox … CPUSeconds).
		path := paths[k.Env]
		field := func(i int) string { e := path[i]; return e[strings.Index(e, ".")+1:] }
		namesKnob := func(body string) bool {
			for _, v := range append([]string{k.Env}, k.Aliases...) {
				if strings.Contains(body, v) {
					return true
				}
			}
			if len(path) == 1 {
				return names(body, field(0))
			}
			outer := path[len(path)-1]
			return names(body, field(len(path)-1)) && (names(body, field(len(path)-2)) || names(body, outer[:strings.Index(outer, ".")]))
		}
		direct := false
		for _, e := range tests {
			body, ok := funcs[e.Test]
			name := e.Test[strings.LastIndex(e.Test, ".")+1:]
			switch {
			case !ok:
				t.Errorf("%s: effect test %s does not exist", k.Env, e.Test)
				continue
			case !strings.HasPrefix(name, "Test"):
				t.Errorf("%s: %s is not a test", k.Env, e.Test)
			case e.Sets == "" && !namesKnob(body):
				t.Errorf("%s: %s does not name the variable, an alias or its Config field %s", k.Env, e.Test, strings.Join(path, " → "))
			case e.Sets != "" && !names(body, e.Sets):
				t.Errorf("%s: %s does not name %s", k.Env, e.Test, e.Sets)
			}
			direct = direct || e.Sets == ""
		}
		if !direct {
			t.Errorf("%s: no effect test names the setting itself (one with Sets empty shows it reaching the option the others set)", k.Env)
		}
	}
	for env := range effectTests {
		if !known[env] {
			t.Errorf("effectTests names %s, which is not in the registry", env)
		}
	}
	for env := range noEffectTest {
		if !known[env] {
			t.Errorf("noEffectTest names %s, which is not in the registry", env)
		}
	}
	if len(noEffectTest) > maxNoEffectTest {
		t.Errorf("noEffectTest has %d knobs, more than %d: a new knob comes with a test of its effect", len(noEffectTest), maxNoEffectTest)
	}
	if len(noEffectTest) < maxNoEffectTest {
		t.Errorf("noEffectTest has %d knobs: lower maxNoEffectTest to %d so that the list only shrinks", len(noEffectTest), len(noEffectTest))
	}
	t.Logf("%d knobs with effect tests, %d without (noEffectTest)", len(effectTests), len(noEffectTest))
}
