//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// kernelProbe calls each refused system call with arguments that, without
// the filter, give a different answer (success, EINVAL or EFAULT), and
// prints {name: errno name or "ok"} as JSON: EPERM (ENOSYS for clone3) is
// the filter's answer.
const kernelProbe = `
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "ptrace": 101,
      "bpf": 321, "keyctl": 250, "add_key": 248, "request_key": 249, "perf_event_open": 298,
      "clone3": 435, "clone": 56, "kcmp": 312, "process_vm_readv": 310, "userfaultfd": 323,
      "io_uring_setup": 425, "fsopen": 430, "open_tree": 428, "init_module": 175, "syslog": 103,
      "personality": 135}
CLONE_NEWUSER, CLONE_NEWNET, SIGCHLD = 0x10000000, 0x40000000, 17
calls = {
  "unshare": (CLONE_NEWUSER,),
  "setns": (0, 0),
  "mount": (0, 0, 0, 0, 0),
  "umount2": (0, 0),
  "pivot_root": (0, 0),
  "ptrace": (0x4206, os.getppid(), 0, 0),  # PTRACE_SEIZE of the parent
  "bpf": (0xffff, 0, 0),
  "keyctl": (0, ctypes.c_long(-3), 0),       # KEYCTL_GET_KEYRING_ID of the session keyring
  "add_key": (0, 0, 0, 0, 0),
  "request_key": (0, 0, 0, 0),
  "perf_event_open": (0, 0, -1, -1, 0),
  "clone3": (0, 0),
  "kcmp": (os.getpid(), os.getpid(), 0, 0, 0),
  "process_vm_readv": (os.getpid(), 0, 0, 0, 0, 0),
  "userfaultfd": (0,),
  "io_uring_setup": (0, 0),
  "fsopen": (0, 0),
  "open_tree": (-100, 0, 0),
  "init_module": (0, 0, 0),
  "syslog": (3, 0, 0),
  "personality": (0x0400000,),               # ADDR_NO_RANDOMIZE: not a value Docker allows
}
out = {}
for name, args in calls.items():
    ctypes.set_errno(0)
    r = libc.syscall(NR[name], *args)
    if r == 0 and name in ("unshare",):
        out[name] = "ok"
        continue
    out[name] = "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
# clone with a namespace flag: a child that would exit at once.
r = libc.syscall(NR["clone"], CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0)
if r == 0:
    os._exit(0)
out["clone(CLONE_NEWNET)"] = "ok" if r > 0 else errno.errorcode.get(ctypes.get_errno())
if r > 0:
    os.waitpid(r, 0)
# a plain fork still works
pid = os.fork()
if pid == 0:
    os._exit(7)
out["fork"] = "ok" if os.waitpid(pid, 0)[1] >> 8 == 7 else "broken"
json.dump(out, sys.stdout)
`

// Every sandboxed command runs under the seccomp filter: new namespaces,
// mounts, tracing, bpf, keyrings, perf, io_uring, modules... are refused
// with EPERM (clone3 with ENOSYS, so libc falls back to clone), and the
// ordinary calls (fork) still work.
func TestSeccompFilter(t *testing.T) {
	requireRoot(t)
	s := newSandbox(t, Options{Isolate: true, ControlDir: t.TempDir(), NoCgroup: true})
	if !s.Mode().Seccomp {
		t.Fatal("the sandbox runs without the seccomp filter")
	}
	out, err := run(t, s, context.Background(), kernelProbe)
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	t.Logf("%v", got)
	for name, want := range map[string]string{
		"unshare": "EPERM", "setns": "EPERM", "mount": "EPERM", "umount2": "EPERM", "pivot_root": "EPERM",
		"ptrace": "EPERM", "bpf": "EPERM", "keyctl": "EPERM", "add_key": "EPERM", "request_key": "EPERM",
		"perf_event_open": "EPERM", "clone3": "ENOSYS", "kcmp": "EPERM", "process_vm_readv": "EPERM",
		"userfaultfd": "EPERM", "io_uring_setup": "EPERM", "fsopen": "EPERM", "open_tree": "EPERM",
		"init_module": "EPERM", "syslog": "EPERM", "personality": "EPERM", "clone(CLONE_NEWNET)": "EPERM", "fork": "ok",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %s", name, got[name], want)
		}
	}
}

// The policy assembles on this architecture and names only calls it has.
func TestSeccompPolicyAssembles(t *testing.T) {
	f, err := filter()
	if err != nil {
		t.Fatal(err)
	}
	if !f.NoNewPrivs || len(f.Policy.Syscalls) < 3 {
		t.Fatalf("filter %+v", f)
	}
}

// A descriptor the engine holds without close-on-exec (as C code or a raw
// system call leaves one) does not reach the command; the descriptors it
// was given (ExtraFiles) do.
func TestLeakedDescriptorsAreClosed(t *testing.T) {
	requireRoot(t)
	s := newSandbox(t, Options{NoCgroup: true, SameUser: true})
	f, err := os.CreateTemp(t.TempDir(), "victim")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A raw open without O_CLOEXEC: inherited by every fork.
	fd, err := unix.Open(f.Name(), unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC != 0 {
		t.Fatal("the test descriptor is close-on-exec")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := t.TempDir()
	c := s.Command(context.Background(), python, "-c", "import os, json; json.dump(sorted(int(x) for x in os.listdir('/proc/self/fd')), os.fdopen(3, 'w'))")
	c.Dir = dir
	c.Env = []string{"PATH=/usr/bin"}
	c.ExtraFiles = []*os.File{w}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var buf strings.Builder
	b := make([]byte, 4096)
	for {
		n, err := r.Read(b)
		buf.Write(b[:n])
		if err != nil {
			break
		}
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("wait: %v", err)
	}
	var fds []int
	if err := json.Unmarshal([]byte(buf.String()), &fds); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	// 0, 1, 2, 3 (given) and the directory listdir opened.
	for _, n := range fds {
		if n == fd {
			t.Errorf("the command inherited descriptor %d (open without O_CLOEXEC in the engine): %v", fd, fds)
		}
	}
	if len(fds) < 4 || fds[3] != 3 {
		t.Errorf("descriptors %v, want 0-3 and listdir's own", fds)
	}
}

// The in-process program of TestProgramInItsRoom: on several threads at
// once it reports its uid and what unshare(CLONE_NEWUSER) answers, and it
// lists its open descriptors (and whether each is close-on-exec).
func init() {
	ServeProgram("test-room", func() int {
		type thread struct {
			UID     int    `json:"uid"`
			Unshare string `json:"unshare"`
		}
		out := struct {
			Threads []thread     `json:"threads"`
			FDs     map[int]bool `json:"fds"` // fd → close-on-exec
			Env     []string     `json:"env"`
		}{FDs: map[int]bool{}, Env: os.Environ()}
		ch := make(chan thread)
		for range 4 {
			go func() {
				runtime.LockOSThread() // a thread of its own, never returned
				err := unix.Unshare(unix.CLONE_NEWUSER)
				ch <- thread{UID: unix.Getuid(), Unshare: fmt.Sprint(err)}
				select {}
			}()
		}
		for range 4 {
			out.Threads = append(out.Threads, <-ch)
		}
		for fd := 0; fd < 256; fd++ {
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
				out.FDs[fd] = flags&unix.FD_CLOEXEC != 0
			}
		}
		f := os.NewFile(3, "out")
		_ = json.NewEncoder(f).Encode(out)
		return 0
	})
}

// An in-process program (Sandbox.Program) runs in the room like an
// exec'd one: every thread under the task's uid and the seccomp filter,
// the environment it was given, and of the descriptors it inherited only
// the ones it was given.
func TestProgramInItsRoom(t *testing.T) {
	requireRoot(t)
	s := newSandbox(t, Options{Isolate: true, ControlDir: t.TempDir(), LockDir: t.TempDir(), NoCgroup: true})
	leak, err := unix.Open("/etc/hostname", unix.O_RDONLY, 0) // inherited by every fork
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := s.Program(context.Background(), "test-room")
	c.Dir = workdir(t)
	c.NoNetwork = true
	c.Env = []string{"PATH=/usr/bin", "ROOM=1"}
	c.ExtraFiles = []*os.File{w}
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var got struct {
		Threads []struct {
			UID     int    `json:"uid"`
			Unshare string `json:"unshare"`
		} `json:"threads"`
		FDs map[string]bool `json:"fds"`
		Env []string        `json:"env"`
	}
	decErr := json.NewDecoder(r).Decode(&got)
	if err := c.Wait(); err != nil || decErr != nil {
		t.Fatalf("program: %v %v: %s", err, decErr, stderr.String())
	}
	for _, th := range got.Threads {
		if th.UID != c.UID() || th.Unshare != "operation not permitted" {
			t.Errorf("a thread of the program: uid %d (want %d), unshare: %s", th.UID, c.UID(), th.Unshare)
		}
	}
	if _, ok := got.FDs[strconv.Itoa(leak)]; ok {
		t.Errorf("the program holds the inherited descriptor %d: %v", leak, got.FDs)
	}
	if _, ok := got.FDs["3"]; !ok {
		t.Errorf("the program lacks its descriptor 3: %v", got.FDs)
	}
	for fd, cloexec := range got.FDs {
		if n, _ := strconv.Atoi(fd); n > 3 && !cloexec {
			t.Errorf("descriptor %s of the program is inheritable", fd)
		}
	}
	if strings.Join(got.Env, " ") != "PATH=/usr/bin ROOM=1" {
		t.Errorf("environment %v", got.Env)
	}
}

// InheritNothing marks the process's inherited descriptors close-on-exec.
func TestInheritNothing(t *testing.T) {
	fd, err := unix.Open("/etc/hostname", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := InheritNothing(); err != nil {
		t.Fatal(err)
	}
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("descriptor %d: flags %d, %v: not close-on-exec", fd, flags, err)
	}
}
