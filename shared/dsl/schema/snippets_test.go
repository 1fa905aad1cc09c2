package schema

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
)

// snippetDirs are the packages whose tests write playbooks inline (the
// loader's own tests exercise every form it maps).
var snippetDirs = []string{"..", "../../engine", "../../worker", "../../wiring", "../../../functions", "../../../emulators/e2e", "../../tools"}

// TestSchemaAcceptsTestPlaybooks: every playbook written as a string
// literal in the tests of snippetDirs that the loader accepts conforms to
// the schema (the schema must never reject what the validator accepts).
func TestSchemaAcceptsTestPlaybooks(t *testing.T) {
	accepted, tried, rejected, alsoRejected := 0, 0, 0, 0
	for _, dir := range snippetDirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || d.Name() == "schema") && p != dir {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || !strings.Contains(lit.Value, "step:") && !strings.Contains(lit.Value, "workflow") {
					return true
				}
				text, err := strconv.Unquote(lit.Value)
				if err != nil || dsl.ResourceKind([]byte(text)) == "Subscription" {
					return true
				}
				tried++
				// A literal is a whole playbook, or the rest of one after
				// the tests' header constant (apiVersion, kind, metadata
				// and, for a list of steps, workflow:).
				loaded := false
				for _, src := range []string{text, formsHead + text, formsHead + "workflow:\n" + text} {
					if _, err := dsl.Load([]byte(src), "snippet.yaml"); err != nil {
						continue
					}
					loaded = true
					accepted++
					if err := schemaCheck(t, []byte(src)); err != nil {
						t.Errorf("%s:%d: the loader accepts this playbook, the schema rejects it:\n%s\n---\n%v", p, fset.Position(lit.Pos()).Line, src, err)
					}
					break
				}
				if !loaded {
					// Rejected by the loader: count those the schema
					// rejects too (it may accept what needs the whole
					// playbook to refuse).
					src := text
					switch {
					case strings.Contains(text, "apiVersion"):
					case strings.Contains(text, "workflow:"):
						src = formsHead + text
					default:
						src = formsHead + "workflow:\n" + text
					}
					rejected++
					if schemaCheck(t, []byte(src)) != nil {
						alsoRejected++
					} else if testing.Verbose() {
						_, lerr := dsl.Load([]byte(src), "snippet.yaml")
						t.Logf("%s:%d: schema accepts, loader rejects: %v", p, fset.Position(lit.Pos()).Line, lerr)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d playbook literals: %d accepted by the loader (all conform to the schema unless reported above); of the %d it rejects, the schema rejects %d", tried, accepted, rejected, alsoRejected)
	if accepted < 100 {
		t.Fatalf("only %d accepted playbook literals found: the scan is broken", accepted)
	}
}
