package stack

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClearStale: what a runner of another uid range (another port) left
// in the runner's directory — its control directories, its tasks'
// workspaces — is removed; what this runner's uid owns is kept.
func TestClearStale(t *testing.T) {
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
	uids := mk(".uids", other)
	tasks := mk("tasks", other)
	own := mk(".sandbox", mine)
	removed, err := clearStale(dir, mine)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Fatalf("removed %v, want %s and %s", removed, uids, tasks)
	}
	for _, d := range []string{uids, tasks} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", d, err)
		}
	}
	if _, err := os.Stat(own); err != nil {
		t.Errorf("%s: %v, want it kept", own, err)
	}
	if removed, err := clearStale(dir, mine); err != nil || len(removed) != 0 {
		t.Fatalf("second call removed %v, %v", removed, err)
	}
	if removed, err := clearStale(filepath.Join(dir, "absent"), mine); err != nil || removed != nil {
		t.Fatalf("a directory not there: %v, %v", removed, err)
	}
}
