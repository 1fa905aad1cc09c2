package stack

import (
	"os"
	"path/filepath"
	"testing"
)

// A checkout under a private directory (mktemp -d: 0700) is made
// traversable, and only there: the runner's uid must reach its binary.
func TestOpenAncestors(t *testing.T) {
	base := t.TempDir()
	priv := filepath.Join(base, "private")
	deep := filepath.Join(priv, "repo", ".stack", "bin")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	changed, err := openAncestors(filepath.Join(deep, "runner"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(priv)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o701 {
		t.Errorf("%s has mode %o, want 0701 (traversable, not listable)", priv, fi.Mode().Perm())
	}
	found := false
	for _, d := range changed {
		if d == priv {
			found = true
		}
		if d == deep || d == filepath.Dir(deep) {
			t.Errorf("%s was already traversable but is reported changed", d)
		}
	}
	if !found {
		t.Errorf("changed %v lacks %s", changed, priv)
	}
	if again, err := openAncestors(filepath.Join(deep, "runner")); err != nil || len(again) != 0 {
		t.Errorf("a second call changed %v (%v)", again, err)
	}
}
