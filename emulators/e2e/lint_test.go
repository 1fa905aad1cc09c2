package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts/noetl lint reports the Petri-net findings with their lines and
// exits 0 on warnings only; validate rejects non-canonical constructs with
// the canonical rewrite in the message and exits 2.
func TestLintAndValidateCLI(t *testing.T) {
	dir := t.TempDir()
	cyc := filepath.Join(dir, "cycle.yaml")
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: lintme}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      arcs: [{step: a}]
  - step: a
    tool:
      - fetch: {kind: noop}
      - again:
          kind: noop
          spec:
            policy:
              rules:
                - else: {then: {do: jump, to: fetch}}
    next:
      arcs: [{step: b}]
  - step: b
    tool: {kind: noop}
    next:
      arcs: [{step: a}]
  - step: orphan
    tool: {kind: noop}
`
	if err := os.WriteFile(cyc, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "noetl"), "lint", cyc).CombinedOutput()
	if err != nil {
		t.Fatalf("lint: %v\n%s", err, out)
	}
	for _, want := range []string{"cycle.yaml:24: warning", "unreachable", "unguarded-cycle", "no-terminal", "jump"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("lint output lacks %q:\n%s", want, out)
		}
	}
	bad := filepath.Join(dir, "noncanonical.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: x}\nworkflow:\n  - step: start\n    when: \"{{ true }}\"\n    tool: {kind: noop}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "noetl"), "validate", bad)
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "noncanonical.yaml:6") || !strings.Contains(string(out), "next.arcs[].when") {
		t.Fatalf("validate output lacks the line or the rewrite:\n%s", out)
	}
}
