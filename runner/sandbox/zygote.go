//go:build linux

package sandbox

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/noetl/gcpengine/shared/errs"
)

// zygoteSource is the zygote's program (zygote.py): a fork server run by
// the interpreter.
//
//go:embed zygote.py
var zygoteSource string

// ErrNoZygote is NewZygote's error when the sandbox cannot fork commands
// from a zygote: the engine is not root (a child's namespaces, mounts and
// uid need it), or the kernel refuses the PID namespace. The caller starts
// each command through the helper instead. Code FailedPrecondition.
var ErrNoZygote = errs.Sentinel(errs.FailedPrecondition, "sandbox: no zygote (it needs root and a PID namespace)")

// zygoteReadyTimeout bounds a zygote's start (its imports).
const zygoteReadyTimeout = 30 * time.Second

// ZygoteOptions are what a zygote preloads and runs.
type ZygoteOptions struct {
	// Interpreter is the python interpreter (an absolute path).
	Interpreter string
	// Program is the python source every child runs once in its room, as
	// `python -s -c Program args...` would (Zygote.Command's args).
	Program string
	// Preload are the modules the zygote imports once: every child finds
	// them loaded.
	Preload []string
	// Env is the zygote's environment; fixed, nothing of any task (a
	// child's own is Cmd.Env). It decides what the interpreter reads at
	// start (PYTHONDONTWRITEBYTECODE, PYTHONIOENCODING, ...).
	Env []string
}

// Zygote is a fork server for sandboxed python commands (zygote.py): one
// interpreter, started once with its modules imported, forks a child per
// command, and the child builds the command's room itself before the
// program runs: the same uid, control group, network, namespaces, root,
// limits, no_new_privs and seccomp filter as the helper gives a command
// it execs (Cmd.Start). A command then costs a fork and its room (about
// 4.5 ms of CPU) instead of a helper, an interpreter's start and its
// imports (about 35 ms). The zygote runs as root in the engine's
// namespaces and never runs a program: a child leaves it (its socket,
// its descriptors) before reading its spec, which arrives on a pipe of
// its own, so nothing of one command passes through the zygote to the
// next. Children share the zygote's memory layout (address space layout
// randomisation happens once per zygote); the caller retires a zygote
// after a number of forks (Forks). Safe for concurrent use.
type Zygote struct {
	s    *Sandbox
	cmd  *exec.Cmd
	ctl  *net.UnixConn
	opts ZygoteOptions

	// fork serializes requests: replies arrive in order.
	fork    sync.Mutex
	replies chan forkReply
	forks   atomic.Int64

	filterOnce sync.Once
	filterB64  string
	filterErr  error

	mu     sync.Mutex
	exits  map[int]chan forkExit // by pid: the child's waiter
	early  map[int]forkExit      // exits reported before their waiter registered
	done   chan struct{}         // the zygote's socket closed (it exited)
	closed bool
}

// forkReply is the zygote's answer to a request: the child's pid, or why
// it could not fork.
type forkReply struct {
	pid int
	err error
}

// forkExit is a child's end as the zygote reaped it.
type forkExit struct {
	status syscall.WaitStatus
	cpu    time.Duration // user and system time, the task's process included
	lost   bool          // the zygote exited first: the child was killed with it
}

// NewZygote starts a zygote for s's commands (ErrNoZygote when s cannot
// have one). It returns once the zygote has imported its modules; Close
// ends it.
func (s *Sandbox) NewZygote(opts ZygoteOptions) (*Zygote, error) {
	if os.Geteuid() != 0 || !s.mode.PIDNamespace || s.mode.UserNamespace || s.nsRefused() != nil {
		return nil, ErrNoZygote
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: zygote socket: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "zygote"), os.NewFile(uintptr(pair[1]), "zygote-child")
	defer theirs.Close()
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: zygote socket: %w", err)
	}
	ctl := fc.(*net.UnixConn)
	args := append([]string{"-s", "-c", zygoteSource, opts.Program}, opts.Preload...)
	cmd := exec.Command(opts.Interpreter, args...)
	cmd.Env = opts.Env
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = &logWriter{s: s}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		ctl.Close()
		return nil, fmt.Errorf("sandbox: zygote: %w", err)
	}
	z := &Zygote{s: s, cmd: cmd, ctl: ctl, opts: opts, replies: make(chan forkReply, 1),
		exits: map[int]chan forkExit{}, early: map[int]forkExit{}, done: make(chan struct{})}
	go func() { _ = cmd.Wait() }()
	_ = ctl.SetReadDeadline(time.Now().Add(zygoteReadyTimeout))
	var b [16]byte
	n, err := ctl.Read(b[:])
	if err != nil || string(b[:n]) != "R" {
		_ = cmd.Process.Kill()
		ctl.Close()
		return nil, fmt.Errorf("sandbox: zygote not ready: %v", err)
	}
	_ = ctl.SetReadDeadline(time.Time{})
	go z.read()
	return z, nil
}

// logWriter passes what the zygote and its children write to the engine's
// stderr before a program runs (why a room could not be built) to the
// sandbox's log, a line at a time.
type logWriter struct {
	s   *Sandbox
	mu  sync.Mutex
	buf []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.s.log.Warn("sandbox: zygote", "message", string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 4096 {
		w.s.log.Warn("sandbox: zygote", "message", string(w.buf))
		w.buf = nil
	}
	return len(p), nil
}

// read dispatches the zygote's messages until its socket closes: replies
// to the request under way, children's exits to their waiters.
func (z *Zygote) read() {
	buf := make([]byte, 512)
	for {
		n, _, _, _, err := z.ctl.ReadMsgUnix(buf, nil)
		if err != nil || n == 0 {
			break
		}
		msg := string(buf[:n])
		switch {
		case strings.HasPrefix(msg, "P "):
			pid, _ := strconv.Atoi(msg[2:])
			z.replies <- forkReply{pid: pid}
		case strings.HasPrefix(msg, "E "):
			z.replies <- forkReply{err: fmt.Errorf("sandbox: zygote: %s", msg[2:])}
		case strings.HasPrefix(msg, "X "):
			var pid, status int
			var ut, st int64
			if _, err := fmt.Sscanf(msg, "X %d %d %d %d", &pid, &status, &ut, &st); err != nil {
				continue
			}
			z.deliver(pid, forkExit{status: syscall.WaitStatus(status), cpu: time.Duration(ut+st) * time.Microsecond})
		}
	}
	z.mu.Lock()
	close(z.done)
	for pid, ch := range z.exits {
		ch <- forkExit{status: syscall.WaitStatus(syscall.SIGKILL), lost: true}
		delete(z.exits, pid)
	}
	z.mu.Unlock()
	select {
	case z.replies <- forkReply{err: errors.New("sandbox: the zygote exited")}:
	default:
	}
}

// deliver hands a child's exit to its waiter (or keeps it for one).
func (z *Zygote) deliver(pid int, e forkExit) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if ch, ok := z.exits[pid]; ok {
		ch <- e
		delete(z.exits, pid)
		return
	}
	z.early[pid] = e
}

// Alive reports whether the zygote still serves requests.
func (z *Zygote) Alive() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.closed {
		return false
	}
	select {
	case <-z.done:
		return false
	default:
		return true
	}
}

// Forks returns how many children the zygote has forked.
func (z *Zygote) Forks() int { return int(z.forks.Load()) }

// Close stops the zygote from forking: it exits once its children have
// (commands under way finish undisturbed). Idempotent.
func (z *Zygote) Close() {
	z.mu.Lock()
	if z.closed {
		z.mu.Unlock()
		return
	}
	z.closed = true
	z.mu.Unlock()
	_ = z.ctl.CloseWrite()
}

// Kill ends the zygote and every child of it at once (tests; an engine
// shutting down without waiting).
func (z *Zygote) Kill() {
	z.Close()
	_ = z.cmd.Process.Kill()
	<-z.done
}

// Command returns a command that a child of the zygote runs: the
// zygote's program, with args as its arguments (sys.argv[1:]), in a room
// of its own (Cmd.Start). Stdin, Stdout, Stderr and ExtraFiles must be
// files (*os.File): they are passed to the child as descriptors.
func (z *Zygote) Command(ctx context.Context, args ...string) *Cmd {
	c := z.s.Command(ctx, z.opts.Interpreter, args...)
	c.zygote = z
	return c
}

// forkSpec is what a child of the zygote reads on its spec pipe
// (zygote.py): the helper's spec in the zygote's terms.
type forkSpec struct {
	Args         []string   `json:"args"`
	Env          []string   `json:"env"`
	UID          int        `json:"uid"`
	GID          int        `json:"gid"`
	Limits       forkLimits `json:"limits"`
	Cgroups      []string   `json:"cgroups,omitempty"`
	NetFD        int        `json:"net_fd,omitempty"`
	NoNetwork    bool       `json:"no_network,omitempty"`
	PIDNamespace bool       `json:"pid_namespace"`
	Isolation    *isolation `json:"isolation,omitempty"`
	Dir          string     `json:"dir,omitempty"`
	// Seccomp is the filter's instructions as the kernel takes them
	// (struct sock_filter, little-endian), base64; "": none.
	Seccomp string `json:"seccomp,omitempty"`
	// Sys are the system call numbers of this architecture the child
	// makes without a libc wrapper.
	Sys map[string]int `json:"sys"`
}

// forkLimits are the rlimits a child sets (-1: none).
type forkLimits struct {
	AS     int64 `json:"as"`
	CPU    int64 `json:"cpu"`
	NoFile int64 `json:"nofile"`
	FSize  int64 `json:"fsize"`
	NProc  int64 `json:"nproc"`
}

// forked is a command a child of a zygote runs (Cmd.Start, Cmd.Wait).
type forked struct {
	exit   chan forkExit
	stop   func() bool // ends the context's kill
	status *forkExit   // set by Wait
}

// startForked is Cmd.Start for a command of a zygote: the room prepared
// (sp), the child forked with the command's descriptors.
func (c *Cmd) startForked(sp *spec) error {
	z := c.zygote
	files := []*os.File{}
	for i, f := range []any{c.Stdin, c.Stdout, c.Stderr} {
		of, ok := f.(*os.File)
		if !ok || of == nil {
			return fmt.Errorf("sandbox: a zygote's command needs a file for descriptor %d", i)
		}
		files = append(files, of)
	}
	files = append(files, c.ExtraFiles...)
	fs := forkSpec{Args: append([]string{"-c"}, c.args...), Env: sp.Env, UID: sp.UID, GID: sp.GID,
		Cgroups: sp.Cgroups, NetFD: sp.NetFD, NoNetwork: c.NoNetwork, PIDNamespace: true, Isolation: sp.Isolation,
		Sys: map[string]int{"pivot_root": unix.SYS_PIVOT_ROOT, "seccomp": unix.SYS_SECCOMP}}
	if sp.Isolation == nil {
		fs.Dir = c.Dir
	}
	l := sp.Limits
	fs.Limits = forkLimits{AS: l.AddressSpaceBytes, CPU: l.CPUSeconds, NoFile: l.OpenFiles, FSize: l.FileSizeBytes, NProc: -1}
	if sp.NProc {
		fs.Limits.NProc = l.Processes
	}
	if sp.Seccomp {
		f, err := z.filter()
		if err != nil {
			return err
		}
		fs.Seccomp = f
	}
	b, err := json.Marshal(fs)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if len(b) > maxSpec {
		return fmt.Errorf("sandbox: command line and environment too large (%d bytes)", len(b))
	}
	pid, exit, err := z.forkChild(b, files)
	if err != nil {
		return err
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return fmt.Errorf("sandbox: zygote child %d: %w", pid, err)
	}
	c.Process = p
	c.forked = &forked{exit: exit}
	c.forked.stop = context.AfterFunc(c.ctx, func() { _ = p.Kill() })
	return nil
}

// filter returns the seccomp filter as a child installs it (forkSpec
// Seccomp), assembled once per zygote.
func (z *Zygote) filter() (string, error) {
	z.filterOnce.Do(func() {
		f, err := compileFilter()
		if err != nil {
			z.filterErr = err
			return
		}
		raw := make([]byte, 0, 8*len(f.filters))
		for _, in := range f.filters {
			raw = binary.LittleEndian.AppendUint16(raw, in.Code)
			raw = append(raw, in.Jt, in.Jf)
			raw = binary.LittleEndian.AppendUint32(raw, in.K)
		}
		z.filterB64 = base64.StdEncoding.EncodeToString(raw)
	})
	return z.filterB64, z.filterErr
}

// forkChild asks the zygote for a child that reads spec and gets files as
// its descriptors 0, 1, 2, 3...; it returns the child's pid and the
// channel its exit arrives on.
func (z *Zygote) forkChild(spec []byte, files []*os.File) (int, chan forkExit, error) {
	if !z.Alive() {
		return 0, nil, errors.New("sandbox: the zygote exited")
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		return 0, nil, fmt.Errorf("sandbox: %w", err)
	}
	defer sr.Close()
	// Written beside the request: a spec larger than the pipe's buffer
	// must not block it (the write ends with the child's copy).
	go func() {
		_, _ = sw.Write(spec)
		sw.Close()
	}()
	fds := []int{int(sr.Fd())}
	for _, f := range files {
		fds = append(fds, int(f.Fd()))
	}
	z.fork.Lock()
	defer z.fork.Unlock()
	if _, _, err := z.ctl.WriteMsgUnix([]byte("F"), unix.UnixRights(fds...), nil); err != nil {
		return 0, nil, fmt.Errorf("sandbox: zygote: %w", err)
	}
	var r forkReply
	select {
	case r = <-z.replies:
	case <-z.done:
		select {
		case r = <-z.replies:
		default:
			r = forkReply{err: errors.New("sandbox: the zygote exited")}
		}
	}
	if r.err != nil {
		return 0, nil, r.err
	}
	z.forks.Add(1)
	ch := make(chan forkExit, 1)
	z.mu.Lock()
	if e, ok := z.early[r.pid]; ok {
		delete(z.early, r.pid)
		ch <- e
	} else {
		select {
		case <-z.done:
			ch <- forkExit{status: syscall.WaitStatus(syscall.SIGKILL), lost: true}
		default:
			z.exits[r.pid] = ch
		}
	}
	z.mu.Unlock()
	return r.pid, ch, nil
}

// waitForked is Cmd.Wait for a command of a zygote.
func (c *Cmd) waitForked() error {
	e := <-c.forked.exit
	c.forked.stop()
	c.forked.status = &e
	c.tExited = time.Now()
	c.finish()
	// Its pidfd now, not at the next garbage collection.
	_ = c.Process.Release()
	return e.err()
}

// err is the exit as Cmd.Wait returns it: nil for status 0.
func (e forkExit) err() error {
	if !e.lost && e.status.Exited() && e.status.ExitStatus() == 0 {
		return nil
	}
	return &ExitError{Status: e.status, CPU: e.cpu, Lost: e.lost}
}

// ExitError is the error Cmd.Wait returns for a command a zygote's child
// ran that did not exit with status 0 (an exec'd command's is
// *exec.ExitError). Its text is exec's: "exit status N", "signal: killed".
type ExitError struct {
	// Status is the wait status.
	Status syscall.WaitStatus
	// CPU is the user and system time the command used.
	CPU time.Duration
	// Lost: the zygote exited while the command ran (the command was
	// killed with it).
	Lost bool
}

// Error is exec's text of the status: "exit status N" or "signal: NAME", with
// " (the zygote exited)" when Lost.
func (e *ExitError) Error() string {
	s := "exit status " + strconv.Itoa(e.Status.ExitStatus())
	if e.Status.Signaled() {
		s = "signal: " + e.Status.Signal().String()
	}
	if e.Lost {
		s += " (the zygote exited)"
	}
	return s
}
