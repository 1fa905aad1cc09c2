package e2e

// The red-team suite of executions against each other, the process and
// kernel half (docs/security.md, "Rooms"): every attack is a
// playbook submitted through POST /executions, as an author would, on the
// local stack. Each case passes only on positive evidence that the attack
// ran and was refused: the task itself reports the errno the kernel gave
// it, the descriptors it found, the answer it got; a bare failed step is
// never enough.
//
//	class                      attack                                          test
//	shared process             duckdb repeat() and lpad() past memory_limit;  TestRedTeamRoomsSharedProcess
//	                           a string_agg blow-up; a python fork bomb —
//	                           each beside bystanders of other executions
//	inherited descriptors      python, shell and duckdb list and read every    TestRedTeamRoomsDescriptors
//	                           descriptor they inherited while other
//	                           executions' duckdb and python tasks hold files
//	kernel surface             unshare -Ur, nested user+net namespace          TestRedTeamRoomsKernelSurface
//	                           (CAP_NET_ADMIN), clone with namespace flags,
//	                           clone3, setns, mount, ptrace of a sibling, bpf,
//	                           keyctl, perf_event_open, io_uring, userfaultfd
//	display                    control characters in metadata.name/path, a    TestRedTeamRoomsDisplay
//	                           task label, a step's error text through
//	                           describe, list and events
//	root oracle                shell cwd/shell that exist on the host outside TestRedTeamRoomsRootOracle
//	                           the task's root vs paths that exist nowhere

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/display"
)

// runnerPID finds the stack's runner process (by its --listen address).
func runnerPID(t *testing.T) int {
	t.Helper()
	u, err := url.Parse(os.Getenv("NOETL_RUNNER_URL"))
	if err != nil || u.Host == "" {
		t.Fatalf("NOETL_RUNNER_URL %q", os.Getenv("NOETL_RUNNER_URL"))
	}
	for _, pid := range procs() {
		b, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) >= 3 && strings.HasSuffix(args[0], "/runner") && args[1] == "--listen" && args[2] == u.Host {
			n, _ := strconv.Atoi(pid)
			return n
		}
	}
	t.Fatalf("no runner process listens on %s", u.Host)
	return 0
}

// vmHWM is a process's peak resident set in MiB.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb >> 10
		}
	}
	return -1
}

// Shared process: a task that blows up memory (DuckDB strings built by
// repeat() live outside DuckDB's memory manager; string_agg; a python
// fork bomb) fails alone with kind limit, killed by its own room's
// control group, while tasks of other executions in flight beside it
// complete; the runner is the same process afterwards and never held the
// attacker's memory.
func TestRedTeamRoomsSharedProcess(t *testing.T) {
	RequireStack(t)
	pid := runnerPID(t)
	var wg sync.WaitGroup
	run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	// Bystanders, started first, alive while the attacks run.
	run(func() {
		p := attack(t, "rooms_bystander_python", map[string]any{"kind": "python", "code": "import time\nt = time.time()\ntime.sleep(6)\nresult = {'slept': round(time.time() - t)}"}, nil)
		if p.Status != "ok" || MustJSON(p.Result) != `{"slept":6}` {
			t.Errorf("python bystander: %s %s %v", p.Status, p.Error, p.Result)
		}
	})
	run(func() {
		p := attack(t, "rooms_bystander_duckdb", map[string]any{"kind": "duckdb",
			"query": "SELECT count(*) AS n FROM range(60000000) t(i) WHERE i % 7 = 0"}, nil)
		if p.Status != "ok" || !strings.Contains(MustJSON(p.Result), `"n":8571429`) {
			t.Errorf("duckdb bystander: %s %s %v", p.Status, p.Error, p.Result)
		}
	})
	time.Sleep(1500 * time.Millisecond)
	run(func() {
		// 1.5 GB in one string: DuckDB's memory_limit does not count it.
		p := attack(t, "rooms_duckdb_repeat", map[string]any{"kind": "duckdb", "query": "SELECT length(repeat(repeat('x', 1000000), 1500)) AS n"}, nil)
		refused(t, "duckdb repeat() blow-up", p, "limit", "limit memory")
		if !strings.Contains(p.Error, "worker was killed") {
			t.Errorf("duckdb repeat(): %q, want the worker killed by its room", p.Error)
		}
	})
	run(func() {
		// Another function whose result lives outside the memory
		// manager: lpad to 1.5 GB.
		p := attack(t, "rooms_duckdb_lpad", map[string]any{"kind": "duckdb", "query": "SELECT length(lpad('x', 1500000000, 'z')) AS n"}, nil)
		refused(t, "duckdb lpad() blow-up", p, "limit", "limit memory")
	})
	run(func() {
		// Many 10 MB strings aggregated into one.
		p := attack(t, "rooms_duckdb_string_agg", map[string]any{"kind": "duckdb",
			"query": "SELECT length(string_agg(repeat('y', 10000000), '')) AS n FROM range(300)"}, nil)
		refused(t, "duckdb string_agg blow-up", p, "limit", "memory")
	})
	run(func() {
		// A fork bomb: the room's pids limit refuses it, its children die
		// with it, and the python task reports how far it got.
		p := attack(t, "rooms_fork_bomb", map[string]any{"kind": "python", "code": `
import os, time
n = 0
err = ""
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    err = "fork failed after %d: %s" % (n, e)
raise SystemExit(err)
`}, nil)
		refused(t, "python fork bomb", p, "limit", "limit processes")
	})
	wg.Wait()
	if got := runnerPID(t); got != pid {
		t.Errorf("the runner was replaced (pid %d, then %d): an attack killed it", pid, got)
	}
	if hwm := vmHWM(t, pid); hwm > 700 {
		t.Errorf("the runner's peak RSS is %d MiB: an attacker's memory was in its process", hwm)
	}
}

// descriptorProbe lists the descriptors a python task holds beyond its
// own (0, 1, 2, the result pipe 3, the listing's, its stdin's /dev/null),
// reading each one.
const descriptorProbe = `
import os, time
found = {}
for _ in range(rounds):
    for fd in os.listdir("/proc/self/fd"):
        fd = int(fd)
        try:
            target = os.readlink("/proc/self/fd/%d" % fd)
        except OSError:
            continue
        # 0-3 and the listing are the probe's own, and so is the
        # /dev/null the python kind's runner reopens stdin on.
        if fd <= 3 or target == "/dev/null" or target.startswith("/proc/") and target.endswith("/fd"):
            continue
        try:
            found[str(fd)] = [target, os.pread(fd, 64, 0).decode("latin-1")]
        except OSError as e:
            found[str(fd)] = [target, type(e).__name__]
    time.sleep(0.2)
result = {"own": sorted(int(x) for x in os.listdir("/proc/self/fd"))[:4], "found": found}
`

// Inherited descriptors: while duckdb tasks of other executions hold
// files of their workspaces open (a slow scan of a CSV, a COPY) and a
// python task holds an inheritable file, new python, shell and duckdb
// tasks look at every descriptor they hold: none is another task's.
func TestRedTeamRoomsDescriptors(t *testing.T) {
	RequireStack(t)
	secret := "fd-secret-" + randSuffix()
	var wg sync.WaitGroup
	run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	// Victims: a duckdb scan of a CSV in its workspace holding the secret,
	// a duckdb COPY writing one, a python task with an inheritable file.
	run(func() {
		p := attack(t, "rooms_fd_victim_scan", map[string]any{"kind": "duckdb", "query": "COPY (SELECT '" + secret + "' AS s, i FROM range(3000000) t(i)) TO 'victim.csv'; " +
			"SELECT count(*) AS n FROM read_csv('victim.csv') a, range(8) r WHERE a.s = '" + secret + "'"}, nil)
		if p.Status != "ok" {
			t.Errorf("duckdb victim: %s %s", p.Status, p.Error)
		}
	})
	run(func() {
		p := attack(t, "rooms_fd_victim_copy", map[string]any{"kind": "duckdb", "query": "COPY (SELECT '" + secret + "' AS s, i FROM range(12000000) t(i)) TO 'victim2.csv'"}, nil)
		if p.Status != "ok" {
			t.Errorf("duckdb copy victim: %s %s", p.Status, p.Error)
		}
	})
	run(func() {
		p := attack(t, "rooms_fd_victim_python", map[string]any{"kind": "python", "args": map[string]any{"secret": secret}, "code": `
import os, time
fd = os.open("victim.txt", os.O_RDWR | os.O_CREAT, 0o600)
os.write(fd, secret.encode())
os.set_inheritable(fd, True)
time.sleep(5)
result = {"held": fd}
`}, nil)
		if p.Status != "ok" {
			t.Errorf("python victim: %s %s", p.Status, p.Error)
		}
	})
	time.Sleep(800 * time.Millisecond)
	// Spies of other executions, several rounds each while the victims
	// hold their files.
	for i := 0; i < 3; i++ {
		run(func() {
			p := attack(t, fmt.Sprintf("rooms_fd_spy_python_%d", i), map[string]any{"kind": "python", "args": map[string]any{"rounds": 15}, "code": descriptorProbe}, nil)
			if p.Status != "ok" {
				t.Errorf("python spy: %s %s", p.Status, p.Error)
				return
			}
			r := p.Result.(map[string]any)
			if MustJSON(r["own"]) != "[0,1,2,3]" {
				t.Errorf("python spy: own descriptors %v, want 0-3 (the probe did not run as written)", r["own"])
			}
			if found := r["found"].(map[string]any); len(found) > 0 || strings.Contains(MustJSON(r), secret) {
				t.Errorf("python spy inherited descriptors: %v", found)
			}
		})
	}
	run(func() {
		p := attack(t, "rooms_fd_spy_shell", map[string]any{"kind": "shell", "command": "for i in 1 2 3 4 5 6 7 8 9 10; do ls /proc/self/fd | tr '\\n' ' '; echo; for f in /proc/self/fd/*; do n=${f##*/}; [ \"$n\" -gt 2 ] && head -c 64 \"$f\" 2>/dev/null; done; sleep 0.3; done"}, nil)
		if p.Status != "ok" {
			t.Errorf("shell spy: %s %s", p.Status, p.Error)
			return
		}
		out := p.Result.(map[string]any)["stdout"].(string)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		// Each round lists 0 1 2 and the descriptor ls itself reads
		// the directory with (3).
		if len(lines) < 10 || strings.Contains(out, secret) {
			t.Errorf("shell spy: %q", out)
		}
		for _, l := range lines {
			if strings.TrimSpace(l) != "0 1 2 3" {
				t.Errorf("shell spy holds descriptors %q, want 0 1 2 and ls's own", l)
				break
			}
		}
	})
	run(func() {
		// DuckDB's own view: its worker's descriptors are its own (it may
		// not even read /proc), and the victim's workspace is out of its
		// reach.
		p := attack(t, "rooms_fd_spy_duckdb", map[string]any{"kind": "duckdb", "query": "SELECT * FROM read_text('/proc/self/fd/*')"}, nil)
		refused(t, "duckdb reading its descriptors", p, "forbidden_path", "file system operations are disabled")
	})
	// The runner's own descriptors, while all of the above run: every one
	// above 2 is close-on-exec (no C code of DuckDB opens files in its
	// process any more; Go opens everything O_CLOEXEC).
	time.Sleep(1500 * time.Millisecond)
	pid := runnerPID(t)
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range ents {
		fd, _ := strconv.Atoi(e.Name())
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if fd <= 2 || err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, _ := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
				checked++
				if flags&0o2000000 == 0 {
					target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
					t.Errorf("the runner holds descriptor %d (%s) without close-on-exec", fd, target)
				}
			}
		}
	}
	if checked < 3 {
		t.Errorf("checked %d descriptors of the runner: the audit did not run", checked)
	}
	wg.Wait()
}

// kernelAttack calls the refused system calls from a python task and
// reports each errno (or "ok"): positive evidence of the refusal.
const kernelAttack = `
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(nr, *args)
    return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x40000000, 0x20000, 17
out = {}
out["unshare(user)"] = call(272, CLONE_NEWUSER)
out["unshare(user+net)"] = call(272, CLONE_NEWUSER | CLONE_NEWNET)
# A child in new user and network namespaces would hold CAP_NET_ADMIN there.
r = libc.syscall(56, CLONE_NEWUSER | CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0)
if r == 0:
    os._exit(0)
out["clone(user+net)"] = "ok" if r > 0 else errno.errorcode.get(ctypes.get_errno())
if r > 0:
    os.waitpid(r, 0)
out["clone3"] = call(435, 0, 0)
out["setns"] = call(308, 0, CLONE_NEWNET)
out["mount"] = call(165, b"none", b"/tmp", b"tmpfs", 0, 0)
child = os.fork()
if child == 0:
    import time
    time.sleep(5)
    os._exit(0)
out["ptrace(attach sibling)"] = call(101, 16, child, 0, 0)
os.kill(child, 9)
os.waitpid(child, 0)
out["bpf"] = call(321, 0xffff, 0, 0)
out["keyctl"] = call(250, 0, ctypes.c_long(-3), 0)
out["add_key"] = call(248, b"user", b"k", b"v", 1, ctypes.c_long(-3))
out["perf_event_open"] = call(298, 0, 0, -1, -1, 0)
out["io_uring_setup"] = call(425, 1, 0)
out["userfaultfd"] = call(323, 0)
result = out
`

// Kernel surface: a python task tries to leave its room through the
// kernel (new user and network namespaces, mounts, tracing a sibling,
// bpf, keyrings...) and reports the errno of every call: EPERM from the
// seccomp filter (ENOSYS for clone3); a shell task's `unshare -Ur` (uid 0
// in a new user namespace) and `unshare -rn` (CAP_NET_ADMIN) are refused
// the same way.
func TestRedTeamRoomsKernelSurface(t *testing.T) {
	RequireStack(t)
	var wg sync.WaitGroup
	run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	run(func() {
		p := attack(t, "rooms_kernel_python", map[string]any{"kind": "python", "code": kernelAttack}, nil)
		if p.Status != "ok" {
			t.Fatalf("python kernel probe: %s %s", p.Status, p.Error)
		}
		got := p.Result.(map[string]any)
		for call, want := range map[string]string{
			"unshare(user)": "EPERM", "unshare(user+net)": "EPERM", "clone(user+net)": "EPERM", "clone3": "ENOSYS", "setns": "EPERM",
			"mount": "EPERM", "ptrace(attach sibling)": "EPERM", "bpf": "EPERM", "keyctl": "EPERM", "add_key": "EPERM",
			"perf_event_open": "EPERM", "io_uring_setup": "EPERM", "userfaultfd": "EPERM",
		} {
			if got[call] != want {
				t.Errorf("python %s: %v, want %s (refused by the seccomp filter)", call, got[call], want)
			}
		}
	})
	run(func() {
		p := attack(t, "rooms_kernel_shell", map[string]any{"kind": "shell", "cmds": []any{
			"unshare -Ur id -u 2>&1; echo \"rc=$?\"",
			"unshare -rn ip link add dummy0 type dummy 2>&1; echo \"rc=$?\"",
			"unshare -rm mount -t tmpfs none /tmp 2>&1; echo \"rc=$?\"",
		}}, nil)
		if p.Status != "ok" {
			t.Fatalf("shell kernel probe: %s %s", p.Status, p.Error)
		}
		for i, c := range p.Result.(map[string]any)["commands"].([]any) {
			out := c.(map[string]any)["stdout"].(string)
			if !strings.Contains(out, "unshare failed: Operation not permitted") || strings.Contains(out, "rc=0") {
				t.Errorf("shell command %d: %q, want unshare refused (EPERM)", i, out)
			}
		}
	})
	wg.Wait()
}

// Display safety: names holding terminal control sequences or a
// right-to-left override are refused at submit time naming the field;
// control characters in a step's error text (which no one can refuse: an
// exception's message) reach the operator escaped through describe, list
// and events, in tables and in JSON.
func TestRedTeamRoomsDisplay(t *testing.T) {
	RequireStack(t)
	const evil = "x\x1b[2J\x1b]0;pwned\a\u009b31m\u202egnp.exe"
	for field, pb := range map[string]string{
		"metadata.name": "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: \"evil\\e[2J\\a\"}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n",
		"metadata.path": "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: ok, path: \"tests/\\u202Egnp.exe\"}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n",
	} {
		code, m := apiDo(t, http.MethodPost, "/executions", map[string]any{"playbook": pb})
		msg := MustJSON(m)
		if code != http.StatusBadRequest && code != http.StatusUnprocessableEntity || !strings.Contains(msg, field) || !strings.Contains(msg, "control character") {
			t.Errorf("%s with control characters: %d %s, want refused naming %s", field, code, msg, field)
		}
	}
	// The error text of a step carries them: the api keeps the text
	// (evidence the attack reached the engine), the CLI escapes it.
	name := "redteam_rooms_display_" + randSuffix()
	src := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: " + name + "}\nworkflow:\n  - step: start\n    tool:\n      kind: python\n      args: {evil: " + strconv.Quote(evil) + "}\n      code: \"raise ValueError(evil)\"\n"
	id := startInline(t, src, nil)
	st := waitStatus(t, id, 2*time.Minute)
	if _, msg := stepError(t, st, "start"); !strings.Contains(msg, evil) {
		t.Fatalf("the step's error %q does not carry the attack's text", msg)
	}
	for _, args := range [][]string{
		{"describe", id, "-o", "table"}, {"describe", id, "-o", "json"},
		{"list", "--playbook", name, "-o", "table"},
		{"events", id, "-o", "table"}, {"events", id, "-o", "json"},
	} {
		r := noetlCLI(t, args...)
		out := r.stdout + r.stderr
		if c, bad := display.UnsafeIn(strings.NewReplacer("\n", "", "\t", "").Replace(out)); bad {
			t.Errorf("noetl %v wrote %U raw: %q", args, c, out)
		}
		// The events table shows no error text; every other view does.
		if args[0] != "list" && !(args[0] == "events" && args[3] == "table") && (!strings.Contains(out, `\u001b[2J`) || !strings.Contains(out, `\u202egnp.exe`)) {
			t.Errorf("noetl %v: the escaped error text is missing:\n%.2000s", args, out)
		}
		if args[0] == "list" && !strings.Contains(out, name) {
			t.Errorf("noetl list: %q", out)
		}
	}
}

// No oracle across the root: a shell task's cwd and shell that exist on
// the runner's host but outside the task's root get exactly the answer of
// paths that exist nowhere; the root's own paths work.
func TestRedTeamRoomsRootOracle(t *testing.T) {
	RequireStack(t)
	// Paths that exist on the host and are in no task's root (the
	// repository; not an ancestor of the workspaces, whose directories a
	// root holds, empty, to reach the workspace).
	hostDir := filepath.Join(RepoRoot(), "shared")
	hostFile := stackFile("env")
	if _, err := os.Stat(hostFile); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(RepoRoot(), "no-such-dir-"+randSuffix())
	answer := func(name, key, path string) string {
		p := attack(t, name, map[string]any{"kind": "shell", "command": "pwd", key: path}, nil)
		if p.Status != "failed" {
			t.Errorf("%s %s=%s: %s %v, want refused", name, key, path, p.Status, p.Result)
		}
		return p.Kind + ": " + strings.ReplaceAll(p.Error, path, "PATH")
	}
	for _, c := range []struct{ key, host string }{
		{"cwd", hostDir}, {"cwd", filepath.Join(RepoRoot(), "scripts")}, {"shell", hostFile}, {"shell", filepath.Join(RepoRoot(), "scripts", "noetl")},
	} {
		a := answer("rooms_oracle_host", c.key, c.host)
		b := answer("rooms_oracle_missing", c.key, missing)
		if a != b || !strings.HasPrefix(a, "config: ") {
			t.Errorf("%s: a host path outside the root answers %q, a missing one %q: want the same", c.key, a, b)
		}
	}
	p := attack(t, "rooms_oracle_root", map[string]any{"kind": "shell", "command": "pwd", "cwd": "/usr/bin", "shell": "sh"}, nil)
	if p.Status != "ok" || !bytes.Contains([]byte(MustJSON(p.Result)), []byte(`"stdout":"/usr/bin\n"`)) {
		t.Errorf("cwd inside the root: %s %s %v", p.Status, p.Error, p.Result)
	}
}
