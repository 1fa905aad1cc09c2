package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An invalid playbook is rejected before anything runs: exit 2, with the
// line of every problem.
func TestRunRejectsInvalidPlaybook(t *testing.T) {
	RequireStack(t)
	dir := t.TempDir()
	syntax := filepath.Join(dir, "syntax.yaml")
	if err := os.WriteFile(syntax, []byte("apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: x\nworkflow:\n  - step: start\n    tool: {kind: noop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, syntax, "")
	if r.Code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "syntax.yaml:") || !strings.Contains(r.Stderr, ":7") && !strings.Contains(r.Stderr, ":8") {
		t.Fatalf("stderr does not name the line: %s", r.Stderr)
	}
	semantic := filepath.Join(dir, "semantic.yaml")
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata:
  name: bad
vars: {a: 1}
workflow:
  - step: start
    when: "{{ true }}"
    tool: {kind: teleport}
    next:
      arcs: [{step: nowhere}]
`
	if err := os.WriteFile(semantic, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r = Run(t, semantic, "")
	if r.Code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.Code, r.Stderr)
	}
	for _, want := range []string{"semantic.yaml:5", "semantic.yaml:8", "semantic.yaml:9", "semantic.yaml:11"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
}
