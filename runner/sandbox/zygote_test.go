//go:build linux

package sandbox

import (
	"fmt"
	"testing"
)

// TestZygoteConformance runs the sandbox's containment tests with every
// command forked from a zygote (Zygote.Command) instead of exec'd by the
// helper: a zygote's child must be contained exactly as a command the
// helper starts (identity, environment, namespaces, root, network,
// control group, limits, seccomp filter, descriptors).
func TestZygoteConformance(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"EngineEnvironIsPrivate", TestEngineEnvironIsPrivate},
		{"IdentityAndEnvironment", TestIdentityAndEnvironment},
		{"DescendantsDieWithTheCommand", TestDescendantsDieWithTheCommand},
		{"MemoryLimit", TestMemoryLimit},
		{"CPULimit", TestCPULimit},
		{"OpenFilesAndProcessLimits", TestOpenFilesAndProcessLimits},
		{"PoolWaitsForAFreeIdentity", TestPoolWaitsForAFreeIdentity},
		{"WorkingDirectoryTakenBackBeforeUIDReuse", TestWorkingDirectoryTakenBackBeforeUIDReuse},
		{"IsolatedRoot", TestIsolatedRoot},
		{"NetworkNamespace", TestNetworkNamespace},
		{"CgroupLimits", TestCgroupLimits},
		{"FileSizeLimit", TestFileSizeLimit},
		{"SeccompFilter", TestSeccompFilter},
		{"LeakedDescriptorsAreClosed", TestLeakedDescriptorsAreClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			zygoteMode = true
			t.Cleanup(func() { zygoteMode = false })
			c.fn(t)
		})
	}
}

// TestZygoteOutOfReach: a zygote's child cannot reach the zygote (root,
// and the parent of every later task): not by its socket (the child's
// descriptors are exactly its command's), not by a signal (the zygote's
// pid is outside the child's PID namespace), not through /proc (the
// child's shows its own processes only).
func TestZygoteOutOfReach(t *testing.T) {
	requireRoot(t)
	zygoteMode = true
	t.Cleanup(func() { zygoteMode = false })
	s := newSandbox(t, Options{Isolate: true, ControlDir: workdir(t)})
	dir := workdir(t)
	_, _, out := runIn(t, s, dir, "pass") // starts the sandbox's zygote
	z := zygotes[s]
	if z == nil {
		t.Fatalf("no zygote: %s", out)
	}
	m, _, out := runIn(t, s, dir, fmt.Sprintf(`
import os, json, signal
r = {"fds": sorted(int(f) for f in os.listdir("/proc/self/fd")), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
for sig in (0, signal.SIGKILL):
    try:
        os.kill(%d, sig); r["kill_%%d" %% sig] = "sent"
    except OSError as e:
        r["kill_%%d" %% sig] = type(e).__name__
print(json.dumps(r))
`, z.cmd.Process.Pid))
	if m == nil {
		t.Fatalf("no result: %s", out)
	}
	if fmt.Sprint(m["pids"]) != "[1]" {
		t.Errorf("the child sees processes %v, want only itself [1]", m["pids"])
	}
	if fds := fmt.Sprint(m["fds"]); fds != "[0 1 2 3]" {
		t.Errorf("the child holds descriptors %s, want its stdin, stdout, stderr (and the listing's own)", fds)
	}
	if m["kill_0"] == "sent" || m["kill_9"] == "sent" {
		t.Errorf("the child signalled the zygote: %v", m)
	}
	if !z.Alive() {
		t.Fatal("the zygote died")
	}
}
