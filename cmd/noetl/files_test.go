package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/launch"
)

// scriptPlaybook is a playbook whose postgres task reads uri.
func scriptPlaybook(t *testing.T, dir, uri string) (string, *dsl.Playbook) {
	t.Helper()
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: files}
workflow:
  - step: start
    tool:
      kind: postgres
      auth: pg_local
      script: {uri: "` + uri + `", source: {type: file}}
`
	f := filepath.Join(dir, "pb.yaml")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	pb, err := dsl.Load([]byte(src), f)
	if err != nil {
		t.Fatal(err)
	}
	return f, pb
}

// TestPlaybookFiles: the script files of a playbook are read from its own
// directory (not the working directory), keyed by the path as written,
// with their sha256; a path that leaves the directory (absolute, `..`, a
// symbolic link out of it) is refused without reading the file.
func TestPlaybookFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	sql := "SELECT 1;\n"
	if err := os.WriteFile(filepath.Join(dir, "scripts", "a.sql"), []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // another working directory
	for _, uri := range []string{"scripts/a.sql", "./scripts/a.sql", filepath.Join(dir, "scripts", "a.sql")} {
		f, pb := scriptPlaybook(t, dir, uri)
		files, err := playbookFiles(f, pb)
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		if got := files[uri]; got.Content != sql || got.SHA256 != launch.Digest(sql) || len(files) != 1 {
			t.Fatalf("%s: %#v", uri, files)
		}
		if err := launch.CheckFiles(pb, files); err != nil {
			t.Fatalf("%s: the api would refuse what the CLI sends: %v", uri, err)
		}
	}
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.sql")
	if err := os.WriteFile(secret, []byte("SELECT 'secret'"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "scripts", "link.sql")); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(dir, secret)
	for _, uri := range []string{secret, rel, "scripts/link.sql"} {
		f, pb := scriptPlaybook(t, dir, uri)
		files, err := playbookFiles(f, pb)
		if err == nil || !strings.Contains(err.Error(), "outside the playbook's directory") || files != nil {
			t.Errorf("%s: %v %v, want refused as outside the directory", uri, files, err)
		}
	}
	f, pb := scriptPlaybook(t, dir, "scripts/missing.sql")
	if _, err := playbookFiles(f, pb); err == nil || !strings.Contains(err.Error(), "missing.sql") {
		t.Errorf("a missing script: %v", err)
	}
}
