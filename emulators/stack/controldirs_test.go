package stack

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClearStaleControlDirs: the runner's control directories left by a
// runner of another uid range (another port) are removed, its own kept,
// and anything else in the work directory left alone.
func TestClearStaleControlDirs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root (the stack starts the runner as root)")
	}
	const mine, other = 1610612736 + 495*65536, 1610612736 + 515*65536
	dir := t.TempDir()
	mk := func(name string, uid int) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
		return d
	}
	stale := mk(".uids", other)
	own := mk(".sandbox", mine)
	task := mk("task-1", other)
	removed, err := clearStaleControlDirs(dir, mine)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != stale {
		t.Fatalf("removed %v, want only %s", removed, stale)
	}
	for _, d := range []string{own, task} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it kept", d, err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s still there (%v)", stale, err)
	}
	// Nothing to do the second time.
	if removed, err := clearStaleControlDirs(dir, mine); err != nil || len(removed) != 0 {
		t.Fatalf("second call removed %v, %v", removed, err)
	}
}
