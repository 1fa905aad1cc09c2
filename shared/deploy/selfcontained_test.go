package deploy

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outside matches citations of documents that are not in the repository:
// the design notes by file name or number, the issue tracker by number.
// A rule that comes from one of them is cited by what it is (e.g. "NoETL
// observability spec §8.6") or by the README section that holds it. The
// pattern is assembled so that this file does not match itself.
var outside = regexp.MustCompile(strings.Join([]string{
	`\bseeds? 00\d`, `\b(DSL|ARCHITECTURE|STYLE)\` + `.md\b`, `\bissues? \d+\b`, `\bdesign v2\b`, `\.\./sha` + `red/(seeds|conformance|DSL|ARCHITECTURE|STYLE)`,
}, "|"))

// TestRepositoryIsSelfContained walks the repository's own files (not
// third_party/, .git, .stack or build outputs) and fails on every line that
// cites a document a reader of the repository does not have.
func TestRepositoryIsSelfContained(t *testing.T) {
	root := filepath.Join("..", "..")
	text := regexp.MustCompile(`\.(go|md|sh|tf|ya?ml|json|html|js|css|txt|py|toml|hcl|example)$`)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".stack", "third_party", "node_modules", ".terraform":
				return filepath.SkipDir
			}
			return nil
		}
		dir := filepath.Dir(rel)
		if !text.MatchString(d.Name()) && dir != "scripts" && dir != ".ci" {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for n := 1; sc.Scan(); n++ {
			if m := outside.FindString(sc.Text()); m != "" {
				t.Errorf("%s:%d cites %q, which is not in the repository: name it by what it is or by its README section", rel, n, m)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
