package sandbox

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// The sandbox options the runner's settings give (FromConfig, shown by
// TestFromConfig) that the other tests of this package do not exercise.

// TestFileSizeLimit: Limits.FileSizeBytes (NOETL_SANDBOX_DISK_MB) stops
// a command writing a file past it; a file under it is written.
func TestFileSizeLimit(t *testing.T) {
	s := newSandbox(t, Options{Limits: Limits{FileSizeBytes: 1 << 20}})
	const write = `
import errno
try:
    with open("big", "wb") as f:
        f.write(b"x" * SIZE)
    print("wrote")
except OSError as e:
    print("refused", e.errno == errno.EFBIG)
`
	if out, _ := run(t, s, context.Background(), strings.Replace(write, "SIZE", "(2 << 20)", 1)); strings.TrimSpace(out) != "refused True" {
		t.Errorf("2 MiB under a 1 MiB file size limit: %q, want refused with EFBIG", out)
	}
	if out, err := run(t, s, context.Background(), strings.Replace(write, "SIZE", "(512 << 10)", 1)); err != nil || strings.TrimSpace(out) != "wrote" {
		t.Errorf("512 KiB under a 1 MiB limit: %q, %v", out, err)
	}
}

// TestBaseUIDAndNamespace: a command runs as a uid of the pool starting
// at BaseUID (NOETL_SANDBOX_BASE_UID), in a PID namespace of its own
// unless NoNamespace (NOETL_SANDBOX_NO_NAMESPACE).
func TestBaseUIDAndNamespace(t *testing.T) {
	requireRoot(t)
	const probe = "import os; print(os.getuid(), os.getpid())"
	for _, noNS := range []bool{false, true} {
		s := newSandbox(t, Options{BaseUID: 300000, PoolSize: 2, NoNamespace: noNS})
		out, err := run(t, s, context.Background(), probe)
		f := strings.Fields(out)
		if err != nil || len(f) != 2 {
			t.Fatalf("NoNamespace %v: %q, %v", noNS, out, err)
		}
		uid, _ := strconv.Atoi(f[0])
		pid, _ := strconv.Atoi(f[1])
		if uid < 300000 || uid >= 300002 {
			t.Errorf("NoNamespace %v: uid %d, want one of the pool at BaseUID 300000", noNS, uid)
		}
		if inNS := pid <= 2; inNS == noNS {
			t.Errorf("NoNamespace %v: the command's pid is %d (in a PID namespace of its own: %v)", noNS, pid, inNS)
		}
	}
}
