package script

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Script files are read only inside the playbook root: absolute paths
// elsewhere, `..` and symbolic links out of it are refused without the
// file's content in the message.
func TestLoadFileConfinedToRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "signing.key")
	if err := os.WriteFile(secret, []byte("SECRET-CONTENT"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sql"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sql", "ok.sql"), []byte("SELECT 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "sql", "link.sql")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sql/ok.sql", filepath.Join(root, "sql", "ok.sql"), "file://sql/ok.sql"} {
		b, err := loadFile(p, "t", root, 1<<20)
		if err != nil || string(b) != "SELECT 1" {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	for _, p := range []string{secret, "../" + filepath.Base(outside) + "/signing.key", "sql/../../x", "sql/link.sql", "out/signing.key",
		"/proc/self/environ", "/etc/passwd", "file:///etc/passwd"} {
		b, err := loadFile(p, "t", root, 1<<20)
		if err == nil {
			t.Errorf("%s: read %q", p, b)
			continue
		}
		if err.Outcome.Error.Kind != "config" || strings.Contains(err.Outcome.Error.Message, "SECRET") {
			t.Errorf("%s: %+v", p, err.Outcome.Error)
		}
	}
}
