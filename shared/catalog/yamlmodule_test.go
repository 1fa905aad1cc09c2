package catalog

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOneYAMLModule keeps the module on one YAML library: go.yaml.in/yaml/v3
// (replaced by the patched copy in third_party/yaml, which reports error
// positions). gopkg.in/yaml.v3 is its archived predecessor; no Go file of
// the module imports it and go.mod does not require it directly.
func TestOneYAMLModule(t *testing.T) {
	const root, archived = "../..", "gopkg.in/yaml.v3"
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "third_party" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			if path, _ := strconv.Unquote(im.Path.Value); path == archived {
				t.Errorf("%s imports %s; use go.yaml.in/yaml/v3", p, archived)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == archived && !strings.Contains(line, "// indirect") {
			t.Errorf("go.mod requires %s directly: %q", archived, strings.TrimSpace(line))
		}
	}
}
