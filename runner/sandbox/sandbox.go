//go:build linux

// Package sandbox runs user code (python tasks, any subprocess tool) as a
// contained subprocess (README "Security": user code must not borrow the
// engine's identity):
//
//   - identity: when the engine runs as root, every running command gets
//     its own unprivileged uid/gid from a pool (Options.BaseUID, no
//     supplementary groups, no_new_privs), so it can neither read the
//     engine's /proc/<pid>/environ, memory or files, nor signal or trace
//     other tasks. Not as root, the command keeps the engine's uid (logged
//     once at New); the engine then makes itself non-dumpable
//     (PR_SET_DUMPABLE 0), which closes its /proc/<pid>/environ, mem and
//     fd entries to processes of the same uid;
//   - resource limits (Options.Limits): address space, CPU seconds, open
//     files, processes (with a dedicated uid only: RLIMIT_NPROC counts
//     every process of the uid), file size, no core dumps. They are set by
//     a tiny helper (the engine's own executable, re-executed) between fork
//     and the exec of the user's program, so the program never runs
//     without them;
//   - process tree: the command runs in a new PID namespace when the
//     kernel allows it (root, or an unprivileged user namespace), as its
//     init process; when it exits or is killed, the kernel kills every
//     process left in the namespace, including descendants that started a
//     new session or process group. It also gets its own process group, is
//     killed with it on timeout (context) and when the engine dies
//     (PDEATHSIG); with a dedicated uid and no namespace, every process of
//     the uid is killed after the command ends;
//   - environment: exactly Cmd.Env, nothing inherited.
//
// The helper runs inside the engine's executable: a binary that uses this
// package re-enters it through the package's init function when started
// with the helper's argv[0], before main runs.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	enforce "github.com/noetl/gcpengine/runner/egress"
	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/egress"
)

// Limits are the resource limits of a sandboxed command (setrlimit; zero
// means the default of DefaultLimits, a negative value means unlimited).
type Limits struct {
	// AddressSpaceBytes is RLIMIT_AS: allocations beyond it fail (Python
	// raises MemoryError).
	AddressSpaceBytes int64
	// CPUSeconds is RLIMIT_CPU: the command is killed by SIGXCPU after
	// this much CPU time (SIGKILL one second later if it ignores it).
	CPUSeconds int64
	// OpenFiles is RLIMIT_NOFILE.
	OpenFiles int64
	// Processes is RLIMIT_NPROC for the command's dedicated uid (not
	// applied without one: the limit counts every process of the uid).
	Processes int64
	// FileSizeBytes is RLIMIT_FSIZE: the largest file the command may
	// write.
	FileSizeBytes int64
	// MemoryBytes is the memory of the command's processes together (its
	// control group's memory limit, swap included); 0: none. Without a
	// control group it becomes the address-space limit when that is unset.
	MemoryBytes int64
	// CPUs is the command's CPU share (its control group's CPU quota, in
	// CPUs); 0: none.
	CPUs float64
}

// DefaultLimits are the limits used for zero fields: 4 GiB of address
// space (numeric libraries reserve much more than they touch), no CPU
// limit (the task's wall-clock timeout bounds it), 1024 open files, 256
// processes, 1 GiB files.
var DefaultLimits = Limits{
	AddressSpaceBytes: 4 << 30,
	CPUSeconds:        -1,
	OpenFiles:         1024,
	Processes:         256,
	FileSizeBytes:     1 << 30,
}

// Options configures a Sandbox. The zero value is usable.
type Options struct {
	// Limits are the commands' resource limits.
	Limits Limits
	// BaseUID is the first uid (and gid) of the pool of dedicated
	// identities used when the engine runs as root; PoolSize identities
	// follow it. Default 1879048192 (0x70000000), far above any login or
	// system account. The uids need no /etc/passwd entry. A uid in use is
	// reserved across processes (a lock file under
	// os.TempDir()/noetl-sandbox-uids), so engines on one host never share
	// one; the range must belong to no one else (every process of a
	// reserved uid may be killed).
	BaseUID int
	// PoolSize bounds how many commands run at once as root (Start waits
	// for a free identity beyond it). Default 1024.
	PoolSize int
	// NoNamespace disables the PID namespace (commands are then contained
	// by process group and, as root, by uid only).
	NoNamespace bool
	// SameUser keeps the engine's uid even as root (tests, debugging).
	SameUser bool
	// Logger receives the one-line notice of how commands are contained;
	// nil means slog.Default().
	Logger *slog.Logger
	// Isolate gives each command its own mount, IPC and UTS namespaces
	// and a root of its own (isolate.go): DefaultReadOnly and the
	// command's ReadOnly read-only, its Dir (or Workspace) and DataRoots
	// read-write, a private /tmp (a tmpfs of Limits.FileSizeBytes), a
	// /proc of its own PID namespace, a minimal /dev. Nothing else of the
	// host is visible.
	Isolate bool
	// DataRoots are host directories every isolated command may read and
	// write (NOETL_RUNNER_DATA_ROOTS).
	DataRoots []string
	// ControlDir holds the sandbox's per-command files (the new roots'
	// mount points, /etc/hosts files); default os.TempDir()/noetl-sandbox.
	// It must not be visible to commands (it is not, when isolated).
	ControlDir string
	// Network, when set, gives each command a network namespace of its
	// own with only a loopback interface, on which the sandbox offers
	// forwarders to the single destinations the policy allows and an
	// HTTP(S) proxy that applies the policy (netns.go). Needs root (of
	// the process's user namespace).
	Network *egress.Policy
	// Cgroup is where commands get their control groups (cgroup.go: ""
	// detects the process's own, else a v2 directory or comma-separated
	// v1 controller directories); NoCgroup turns them off.
	Cgroup string
	// NoCgroup: rlimits only.
	NoCgroup bool
	// LockDir holds the uid reservation files (default
	// os.TempDir()/noetl-sandbox-uids); it must be the process's own.
	LockDir string
}

// Mode says how a Sandbox contains its commands.
type Mode struct {
	// DedicatedUID: each command runs under its own uid from the pool.
	DedicatedUID bool
	// PIDNamespace: each command runs in a new PID namespace (as root, or
	// in a new user namespace).
	PIDNamespace bool
	// UserNamespace: the PID namespace needs a user namespace (not root).
	UserNamespace bool
	// Seccomp: each command runs under the seccomp filter (seccomp.go);
	// false when the kernel refuses it (New logs why).
	Seccomp bool
}

// Sandbox starts contained commands. It is safe for concurrent use.
type Sandbox struct {
	opts Options
	exe  string
	mode Mode
	log  *slog.Logger

	mu sync.Mutex
	// inUse holds, per uid slot taken by this process, the lock file
	// that reserves the uid across processes (flock; released on close or
	// when the process dies), so two engines on one host never share a
	// uid.
	inUse   map[int]*os.File
	next    int
	lockDir string
	nsErr   error // the kernel refuses the namespace
	seccomp bool  // the kernel accepts the filter
	cg      cgroups
}

// New returns a sandbox configured by opts. It decides the containment
// mode (Mode) once, logs it, and, when commands share the engine's uid,
// makes the engine non-dumpable. Errors: the engine's executable cannot be
// found (the helper runs from it).
func New(opts Options) (*Sandbox, error) {
	asSet := opts.Limits.AddressSpaceBytes != 0
	l := opts.Limits
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.AddressSpaceBytes, DefaultLimits.AddressSpaceBytes)
	def(&l.CPUSeconds, DefaultLimits.CPUSeconds)
	def(&l.OpenFiles, DefaultLimits.OpenFiles)
	def(&l.Processes, DefaultLimits.Processes)
	def(&l.FileSizeBytes, DefaultLimits.FileSizeBytes)
	opts.Limits = l
	if opts.BaseUID <= 0 {
		opts.BaseUID = 0x70000000
	}
	if opts.PoolSize <= 0 {
		opts.PoolSize = 1024
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: cannot find the engine's executable for the helper: %w", err)
	}
	s := &Sandbox{opts: opts, exe: exe, log: log, inUse: map[int]*os.File{}}
	root := os.Geteuid() == 0
	s.mode.DedicatedUID = root && !opts.SameUser
	s.mode.PIDNamespace = !opts.NoNamespace
	s.mode.UserNamespace = s.mode.PIDNamespace && !root
	if s.mode.DedicatedUID {
		dir, err := lockDir(opts.LockDir)
		if err != nil {
			return nil, err
		}
		s.lockDir = dir
	} else {
		// Same uid as the engine: close the engine's /proc entries
		// (environ, mem, fd) to it.
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			log.Warn("sandbox: cannot make the engine non-dumpable; same-uid user code may read its environment", "error", err)
		}
	}
	if opts.Network != nil && os.Geteuid() != 0 {
		return nil, fmt.Errorf("sandbox: a network namespace per command needs root (of the process's user namespace: run the runner confined, sandbox.ConfineAttr)")
	}
	if opts.ControlDir == "" {
		opts.ControlDir = filepath.Join(os.TempDir(), "noetl-sandbox")
	}
	if opts.Isolate || opts.Network != nil {
		if err := os.MkdirAll(opts.ControlDir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: control directory: %w", err)
		}
		s.opts.ControlDir = opts.ControlDir
	}
	if !opts.NoCgroup {
		cg, err := detectCgroups(opts.Cgroup)
		if err != nil {
			if opts.Cgroup != "" {
				return nil, fmt.Errorf("sandbox: NOETL_SANDBOX_CGROUP=%s: %w", opts.Cgroup, err)
			}
			log.Info("sandbox: no control groups; memory and process limits are rlimits (address space, per-uid processes)", "reason", err.Error())
		} else {
			s.cg = cg
			log.Info("sandbox: each command runs in a control group of its own", "cgroup", cg.version, "memory_bytes", l.MemoryBytes, "processes", l.Processes, "cpus", l.CPUs)
		}
	}
	if s.cg.version == NoCgroup && s.opts.Limits.MemoryBytes > 0 && !asSet {
		s.opts.Limits.AddressSpaceBytes = s.opts.Limits.MemoryBytes
	}
	if s.cg.version != NoCgroup && s.opts.Limits.MemoryBytes > 0 && !asSet {
		// The group bounds the memory actually used; an address-space
		// limit would only refuse numeric libraries' reservations.
		s.opts.Limits.AddressSpaceBytes = -1
	}
	if s.mode.PIDNamespace {
		// Ask the kernel once: user namespaces may be disabled or
		// restricted (EPERM, EACCES), and gVisor-like kernels refuse some
		// flags.
		if err := s.probeNamespace(); err != nil {
			s.nsErr = err
			log.Warn("sandbox: the kernel refuses a PID namespace; descendants of user code that start a new session can outlive a task", "error", err)
		}
	}
	if err := s.probeSeccomp(); err != nil {
		log.Warn("sandbox: the kernel refuses the seccomp filter; user code may create namespaces, mount, trace and reach the kernel's keyrings and bpf", "error", err)
	} else {
		s.seccomp = true
		s.mode.Seccomp = true
	}
	switch {
	case s.mode.DedicatedUID:
		log.Info("sandbox: user code runs under dedicated uids", "base_uid", opts.BaseUID, "pool", opts.PoolSize, "pid_namespace", s.mode.PIDNamespace)
	case root:
		log.Warn("sandbox: user code runs as root (SameUser); only for tests and debugging", "pid_namespace", s.mode.PIDNamespace)
	default:
		log.Warn("sandbox: the engine is not root, user code runs under the engine's uid (the engine is made non-dumpable; no per-uid process limit)",
			"uid", os.Getuid(), "pid_namespace", s.mode.PIDNamespace)
	}
	return s, nil
}

// Mode reports how commands are contained (a PID namespace the kernel
// refuses, which New finds out, is not reported).
func (s *Sandbox) Mode() Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mode
	if s.nsErr != nil {
		m.PIDNamespace, m.UserNamespace = false, false
	}
	return m
}

// Limits returns the resource limits applied to commands.
func (s *Sandbox) Limits() Limits { return s.opts.Limits }

// Cmd is a command to run in the sandbox. Set the fields of the embedded
// *exec.Cmd that concern I/O (Dir, Stdin, Stdout, Stderr, ExtraFiles,
// WaitDelay) and Env before Start; Path, Args, SysProcAttr and Cancel are
// the sandbox's.
type Cmd struct {
	*exec.Cmd
	// Env is the complete environment of the command ("KEY=value");
	// nothing of the engine's is inherited.
	Env []string

	s    *Sandbox
	ctx  context.Context
	name string
	args []string
	slot int // -1: no dedicated uid
	uid  int
	gid  int
	// ReadOnly are host paths an isolated command also sees read-only
	// (e.g. the interpreter's installation outside DefaultReadOnly).
	ReadOnly []string
	// Workspace is the task's workspace (bound read-write at its path in
	// an isolated command; "" : Dir).
	Workspace string
	// NoNetwork gives the command a network namespace with nothing in
	// it (not even an interface that is up) instead of the sandbox's
	// Options.Network: for programs that need no network at all (the
	// duckdb worker). Needs root of the process's user namespace.
	NoNetwork bool

	program string  // an in-process program (Sandbox.Program)
	zygote  *Zygote // a zygote's child runs it (Zygote.Command)
	forked  *forked // started by a zygote's child

	net   *taskNet
	grp   *group
	ctl   string // per-command control directory (isolated commands)
	limit string // the limit the command hit (finish)
	// times of the command's phases (the debug line of Wait)
	tStart, tPrepared, tStarted, tExited time.Time
	started                              time.Time // Start returned
	// dir is Dir's owner and permission bits before Start handed it to
	// the command's uid; finish restores them before the uid returns to
	// the pool (handed: there is something to restore).
	dir struct {
		handed   bool
		uid, gid int
		mode     os.FileMode
	}
}

// Command returns a command that runs name (looked up on the PATH of Env
// when it has no slash) with args in the sandbox. ctx ends it: the whole
// process tree is killed.
func (s *Sandbox) Command(ctx context.Context, name string, args ...string) *Cmd {
	return &Cmd{Cmd: exec.CommandContext(ctx, s.exe), s: s, ctx: ctx, name: name, args: args, slot: -1, uid: -1, gid: -1}
}

// UID returns the uid the command runs under (-1 before Start, or when it
// keeps the engine's).
func (c *Cmd) UID() int { return c.uid }

// helperArg0 is the argv[0] that makes the engine's executable act as the
// helper; specEnv carries the helper's instructions.
const (
	helperArg0 = "noetl-sandbox-helper"
	specEnv    = "NOETL_SANDBOX_SPEC"
	// maxSpec keeps the spec under Linux's 128 KiB limit for one
	// environment string.
	maxSpec = 120 << 10
)

// spec is what the helper does before exec'ing the user's program.
type spec struct {
	Path   string   `json:"path"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	UID    int      `json:"uid"`
	GID    int      `json:"gid"`
	Limits Limits   `json:"limits"`
	NProc  bool     `json:"nproc"`
	// KillAll: instead of exec'ing, kill every process of UID.
	KillAll bool `json:"kill_all,omitempty"`
	// Noop: exit 0 at once (namespace probe; with Seccomp, after
	// installing the filter: the seccomp probe).
	Noop bool `json:"noop,omitempty"`
	// Seccomp installs the filter (seccomp.go) just before the exec.
	Seccomp bool `json:"seccomp,omitempty"`
	// KeepFDs is how many descriptors from 3 up the program keeps
	// (Cmd.ExtraFiles); every other one above 2 is closed at the exec.
	KeepFDs int `json:"keep_fds,omitempty"`
	// Program is an in-process program to run instead of Path
	// (ServeProgram).
	Program string `json:"program,omitempty"`
	// Isolation builds the command's root before anything else.
	Isolation *isolation `json:"isolation,omitempty"`
	// NetFD is the descriptor of the network namespace to join (0: none).
	NetFD int `json:"net_fd,omitempty"`
	// Cgroups are the cgroup.procs files the helper writes itself into.
	Cgroups []string `json:"cgroups,omitempty"`
}

// Start starts the command (see the package doc for what contains it).
// With a dedicated uid it waits for a free identity, and hands Dir (when
// set) to that uid; Wait gives Dir back to its owner, with its mode from
// before Start, before the uid can go to another command.
func (c *Cmd) Start() error {
	c.tStart = time.Now()
	s := c.s
	path := c.name
	if c.zygote == nil && !strings.Contains(path, "/") {
		p, err := lookPath(path, c.Env)
		if err != nil {
			return err
		}
		path = p
	}
	if s.mode.DedicatedUID {
		slot, err := s.acquire(c.ctx)
		if err != nil {
			return err
		}
		c.slot, c.uid, c.gid = slot, s.opts.BaseUID+slot, s.opts.BaseUID+slot
		if !s.mode.PIDNamespace || s.nsRefused() != nil {
			// Processes a crashed engine left under this uid must not
			// meet the new command.
			s.killUID(c.uid)
		}
		if c.Dir != "" {
			if err := c.handDir(); err != nil {
				s.release(slot)
				c.slot = -1
				return fmt.Errorf("sandbox: cannot hand the working directory to uid %d: %w", c.uid, err)
			}
		}
	}
	sp := spec{Path: path, Args: append([]string{c.name}, c.args...), Env: c.Env, UID: c.uid, GID: c.gid, Limits: s.opts.Limits, NProc: c.slot >= 0,
		Seccomp: s.seccomp, KeepFDs: len(c.ExtraFiles), Program: c.program}
	if c.program != "" && s.opts.Network != nil && !c.NoNetwork {
		// setns moves one thread; a program runs on every thread of the
		// helper's runtime.
		c.finish()
		return errors.New("sandbox: an in-process program cannot join a task network namespace (set NoNetwork)")
	}
	if err := c.prepare(&sp); err != nil {
		c.finish()
		return err
	}
	c.tPrepared = time.Now()
	if c.zygote != nil {
		if err := c.startForked(&sp); err != nil {
			c.finish()
			return err
		}
		c.started = time.Now()
		return nil
	}
	b, err := json.Marshal(sp)
	if err != nil {
		c.finish()
		return fmt.Errorf("sandbox: %w", err)
	}
	if len(b) > maxSpec {
		c.finish()
		return fmt.Errorf("sandbox: command line and environment too large (%d bytes)", len(b))
	}
	c.Path = s.exe
	c.Args = []string{helperArg0}
	c.Cmd.Env = []string{specEnv + "=" + string(b)}
	c.Cancel = func() error {
		// The process group; with a PID namespace, killing its init
		// (the command) kills everything in it.
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		return c.Process.Kill()
	}
	useNS := s.mode.PIDNamespace && s.nsRefused() == nil
	c.SysProcAttr = s.sysProcAttr(useNS)
	if s.opts.Isolate {
		c.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
	}
	if c.NoNetwork {
		c.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
	}
	if c.WaitDelay == 0 {
		// A descendant that escaped containment must not hold Wait on
		// the output pipes forever. Set before Start: exec's goroutine
		// watching the context reads it.
		c.WaitDelay = 5 * time.Second
	}
	err = c.Cmd.Start()
	if err != nil {
		c.finish()
		return err
	}
	if c.slot >= 0 && !(useNS && s.nsRefused() == nil) {
		// No namespace to take the descendants down with the command:
		// kill every process of the uid as soon as the command exits
		// (before Wait waits for output pipes they may hold).
		pid, uid := c.Process.Pid, c.uid
		go func() {
			var info unix.Siginfo
			for {
				err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
				if err != syscall.EINTR {
					break
				}
			}
			s.killUID(uid)
		}()
	}
	c.started = time.Now()
	return nil
}

// sysProcAttr is the process attributes of the helper.
func (s *Sandbox) sysProcAttr(ns bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if !ns {
		return a
	}
	a.Cloneflags = syscall.CLONE_NEWPID
	if s.mode.UserNamespace {
		uid, gid := os.Getuid(), os.Getgid()
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

// probeNamespace starts the helper once in the namespaces commands would
// use, doing nothing.
func (s *Sandbox) probeNamespace() error {
	b, _ := json.Marshal(spec{Noop: true})
	cmd := exec.Command(s.exe)
	cmd.Args = []string{helperArg0}
	cmd.Env = []string{specEnv + "=" + string(b)}
	cmd.SysProcAttr = s.sysProcAttr(true)
	var out strings.Builder
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// probeSeccomp starts the helper once to install the filter, doing
// nothing else.
func (s *Sandbox) probeSeccomp() error {
	if _, err := filter(); err != nil {
		return err
	}
	b, _ := json.Marshal(spec{Noop: true, Seccomp: true})
	cmd := exec.Command(s.exe)
	cmd.Args = []string{helperArg0}
	cmd.Env = []string{specEnv + "=" + string(b)}
	var out strings.Builder
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

func (s *Sandbox) nsRefused() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nsErr
}

// Wait waits for the command to exit, then kills what is left of its
// process tree (process group; with a dedicated uid and no namespace,
// every process of the uid) and frees its identity.
func (c *Cmd) Wait() error {
	c.tStarted = c.startedAt()
	var err error
	if c.forked != nil {
		err = c.waitForked()
	} else {
		err = c.Cmd.Wait()
		c.tExited = time.Now()
		c.finish()
	}
	if c.s.log.Enabled(context.Background(), slog.LevelDebug) && !c.tPrepared.IsZero() {
		ms := func(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }
		c.s.log.Debug("sandbox: command", "uid", c.uid, "prepare_ms", ms(c.tStart, c.tPrepared), "start_ms", ms(c.tPrepared, c.tStarted),
			"run_ms", ms(c.tStarted, c.tExited), "finish_ms", ms(c.tExited, time.Now()), "limit", c.limit)
	}
	return err
}

// startedAt is when Start returned (now when Wait is called right after).
func (c *Cmd) startedAt() time.Time {
	if c.started.IsZero() {
		return time.Now()
	}
	return c.started
}

// ExceededCPU reports, after Wait, whether the command was killed for
// using its CPU limit (SIGXCPU, or SIGKILL at the hard limit: the init of
// a PID namespace ignores SIGXCPU).
func (c *Cmd) ExceededCPU() bool {
	lim := c.s.opts.Limits.CPUSeconds
	ws, cpu, ok := c.exitStatus()
	if !ok || lim <= 0 || !ws.Signaled() {
		return false
	}
	switch ws.Signal() {
	case syscall.SIGXCPU:
		return true
	case syscall.SIGKILL:
		return cpu >= time.Duration(lim)*time.Second
	}
	return false
}

// exitStatus is, after Wait, how the command ended and the CPU time it
// used (user and system); ok is false before.
func (c *Cmd) exitStatus() (ws syscall.WaitStatus, cpu time.Duration, ok bool) {
	if c.forked != nil {
		if e := c.forked.status; e != nil {
			return e.status, e.cpu, true
		}
		return 0, 0, false
	}
	if c.ProcessState == nil {
		return 0, 0, false
	}
	ws, ok = c.ProcessState.Sys().(syscall.WaitStatus)
	return ws, c.ProcessState.UserTime() + c.ProcessState.SystemTime(), ok
}

// finish kills leftovers and releases the uid slot, the network
// namespace, the control group (after reading which limit the command
// hit) and the control directory (idempotent).
func (c *Cmd) finish() {
	switch {
	case c.forked != nil:
		// Its zygote reaped it: not its process group by number (the
		// number may be another's by now), its handle (a pidfd).
		_ = c.Process.Kill()
	case c.Process != nil:
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	if c.grp != nil {
		if h := c.grp.hit(); h != "" {
			c.limit = h
		}
		c.grp.remove()
		c.grp = nil
	}
	c.net.Close()
	c.net = nil
	if c.ctl != "" {
		_ = os.RemoveAll(c.ctl)
		c.ctl = ""
	}
	if c.slot < 0 {
		return
	}
	if c.Process != nil && (!c.s.mode.PIDNamespace || c.s.nsRefused() != nil) {
		c.s.killUID(c.uid)
	}
	c.takeDir()
	c.s.release(c.slot)
	c.slot = -1
}

// prepare sets up what the command runs in besides its identity: its
// control group, its network namespace (descriptor appended to
// ExtraFiles, proxy variables added to Env) and its isolated root.
func (c *Cmd) prepare(sp *spec) error {
	s := c.s
	if s.cg.version != NoCgroup {
		g, err := s.cg.create(s.opts.Limits)
		if err != nil {
			return err
		}
		c.grp = g
		sp.Cgroups = g.procsFiles()
		if s.opts.Limits.Processes > 0 && g.has("pids") {
			// The group counts the task's processes (and reports the
			// limit); a per-uid rlimit would refuse the fork first.
			sp.NProc = false
		}
	}
	if !s.opts.Isolate && (s.opts.Network == nil || c.NoNetwork) {
		return nil
	}
	ctl, err := os.MkdirTemp(s.opts.ControlDir, "cmd-")
	if err != nil {
		return fmt.Errorf("sandbox: control directory: %w", err)
	}
	c.ctl = ctl
	if s.opts.Network != nil && !c.NoNetwork {
		n, err := newTaskNet(s.opts.Network, s.log, enforce.ConnsFrom(c.ctx))
		if err != nil {
			return err
		}
		c.net = n
		c.ExtraFiles = append(c.ExtraFiles, n.fd)
		sp.NetFD = 2 + len(c.ExtraFiles)
		sp.Env = append(append([]string(nil), sp.Env...), n.ProxyEnv()...)
	}
	if s.opts.Isolate {
		root := filepath.Join(ctl, "root")
		if err := os.Mkdir(root, 0o755); err != nil {
			return err
		}
		ws := c.Workspace
		if ws == "" {
			ws = c.Dir
		}
		is := &isolation{RootDir: root, RO: append(append([]string(nil), DefaultReadOnly...), c.ReadOnly...), TmpBytes: s.opts.Limits.FileSizeBytes, Hostname: "noetl-task", Dir: c.Dir}
		if ws != "" {
			is.RW = append(is.RW, ws)
		}
		if c.Dir != "" && c.Dir != ws {
			is.RW = append(is.RW, c.Dir)
		}
		is.RW = append(is.RW, s.opts.DataRoots...)
		if c.net != nil {
			hosts := filepath.Join(ctl, "hosts")
			if err := os.WriteFile(hosts, []byte(c.net.hosts), 0o644); err != nil {
				return err
			}
			is.Hosts = hosts
		}
		sp.Isolation = is
	}
	return nil
}

// LimitHit names, after Wait, the limit the command ran into, or "":
// "memory" (its control group's memory: the kernel killed it), "processes"
// (a fork failed at its control group's pids.max), "cpu" (RLIMIT_CPU),
// "file size" (RLIMIT_FSIZE). A full workspace (disk) is the caller's to
// check (Workspace.Full).
func (c *Cmd) LimitHit() string {
	if c.limit != "" {
		return c.limit
	}
	if c.ExceededCPU() {
		return "cpu"
	}
	if ws, _, ok := c.exitStatus(); ok && ws.Signaled() && ws.Signal() == syscall.SIGXFSZ {
		return "file size"
	}
	return ""
}

// DescribeLimit names a limit LimitHit reported (or "disk", a full
// workspace) with its value and knob, for the error message of kind
// "limit": "memory (1024 MiB, NOETL_SANDBOX_MEMORY_MB)".
func (s *Sandbox) DescribeLimit(name string) string {
	l := s.opts.Limits
	switch name {
	case "memory":
		return fmt.Sprintf("memory (%d MiB, NOETL_SANDBOX_MEMORY_MB)", l.MemoryBytes>>20)
	case "processes":
		return fmt.Sprintf("processes (%d, NOETL_SANDBOX_PROCESSES)", l.Processes)
	case "cpu":
		return fmt.Sprintf("cpu (%d s, NOETL_SANDBOX_CPU_S)", l.CPUSeconds)
	case "file size":
		return fmt.Sprintf("file size (%d MiB, NOETL_SANDBOX_DISK_MB)", l.FileSizeBytes>>20)
	case "disk":
		return "disk (the workspace is full, NOETL_SANDBOX_DISK_MB)"
	}
	return name
}

// Cgroups reports the control group hierarchy commands run in.
func (s *Sandbox) Cgroups() CgroupVersion { return s.cg.version }

// handDir gives Dir to the command's uid, remembering its owner and mode.
func (c *Cmd) handDir() error {
	fi, err := os.Lstat(c.Dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return fmt.Errorf("%s is not a directory", c.Dir)
	}
	if err := os.Chown(c.Dir, c.uid, c.gid); err != nil {
		return err
	}
	c.dir.handed, c.dir.uid, c.dir.gid, c.dir.mode = true, int(st.Uid), int(st.Gid), fi.Mode().Perm()
	return nil
}

// takeDir gives Dir back to its owner with its mode from before Start
// (the command may have opened it to everyone), while the uid's processes
// are dead and before the uid can go to another command: what the command
// left there stays out of that command's reach.
func (c *Cmd) takeDir() {
	if !c.dir.handed {
		return
	}
	c.dir.handed = false
	if err := os.Chown(c.Dir, c.dir.uid, c.dir.gid); err != nil {
		c.s.log.Warn("sandbox: cannot take the working directory back", "dir", c.Dir, "uid", c.uid, "error", err)
	}
	if err := os.Chmod(c.Dir, c.dir.mode); err != nil {
		c.s.log.Warn("sandbox: cannot restore the working directory's mode", "dir", c.Dir, "error", err)
	}
}

// killUID kills every process of uid by running the helper as that uid
// (kill(-1) reaches exactly the processes the caller may signal).
func (s *Sandbox) killUID(uid int) {
	b, _ := json.Marshal(spec{UID: uid, GID: uid, KillAll: true})
	cmd := exec.Command(s.exe)
	cmd.Args = []string{helperArg0}
	cmd.Env = []string{specEnv + "=" + string(b)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Run(); err != nil {
		s.log.Warn("sandbox: cannot kill the processes of a task's uid", "uid", uid, "error", err)
	}
}

// lockDir is the directory of the uid reservation files: root-owned,
// writable by its owner only.
func lockDir(dir string) (string, error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "noetl-sandbox-uids")
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("sandbox: uid lock directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: uid lock directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("sandbox: uid lock directory %s must be a directory owned by uid %d and writable by it only", dir, os.Geteuid())
	}
	return dir, nil
}

// acquire reserves a free uid slot: free in this process and not locked
// by another (see inUse). It polls while every slot is taken, until ctx
// ends.
func (s *Sandbox) acquire(ctx context.Context) (int, error) {
	for {
		slot, err := s.tryAcquire()
		if err != nil || slot >= 0 {
			return slot, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("sandbox: no free identity: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Sandbox) tryAcquire() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.opts.PoolSize {
		slot := (s.next + i) % s.opts.PoolSize
		if s.inUse[slot] != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(s.lockDir, strconv.Itoa(s.opts.BaseUID+slot)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return -1, fmt.Errorf("sandbox: uid lock: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		s.inUse[slot] = f
		s.next = slot + 1
		return slot, nil
	}
	return -1, nil
}

func (s *Sandbox) release(slot int) {
	s.mu.Lock()
	f := s.inUse[slot]
	delete(s.inUse, slot)
	s.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// lookPath finds name on the PATH of env.
func lookPath(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("sandbox: %q not found on PATH=%s: %w", name, path, exec.ErrNotFound)
}

func init() {
	if len(os.Args) == 1 && os.Args[0] == helperArg0 {
		if v, ok := os.LookupEnv(specEnv); ok {
			var sp spec
			if json.Unmarshal([]byte(v), &sp) == nil && sp.Program != "" {
				return // served by the program's package (ServeProgram)
			}
			os.Exit(helper(v, os.Stderr, nil))
		}
	}
}

// ServeProgram is called from the init function of the package that
// serves the in-process program name (Sandbox.Program): in a helper
// started for that program it prepares the command's room as for any
// command, then runs main instead of an exec and exits with its status.
// Elsewhere it returns at once. The helper's Go runtime runs main: its
// threads are in the room too (identity, limits, control group,
// namespaces and the seccomp filter hold for every thread).
func ServeProgram(name string, main func() int) {
	if len(os.Args) != 1 || os.Args[0] != helperArg0 {
		return
	}
	v, ok := os.LookupEnv(specEnv)
	if !ok {
		return
	}
	var sp spec
	if json.Unmarshal([]byte(v), &sp) != nil || sp.Program != name {
		return
	}
	os.Exit(helper(v, os.Stderr, main))
}

// Program returns a command that runs the in-process program name of the
// engine's executable (registered with ServeProgram by the package that
// serves it) in the sandbox: the helper prepares the room, then calls the
// program where it would exec one. Cmd.Env becomes the program's
// environment. Such a command gets no task network (Options.Network):
// set NoNetwork, or use a sandbox without one.
func (s *Sandbox) Program(ctx context.Context, name string) *Cmd {
	c := s.Command(ctx, s.exe)
	c.program = name
	return c
}

// helper is the sandbox helper: it applies the limits and the identity,
// then execs the user's program (or kills every process of a uid). It
// returns an exit status only on failure.
func helper(raw string, stderr io.Writer, program func() int) int {
	// Everything below runs on this thread: setns (per thread) and
	// no_new_privs (per thread) must hold for the execve.
	runtime.LockOSThread()
	var sp spec
	if err := json.Unmarshal([]byte(raw), &sp); err != nil {
		fmt.Fprintf(stderr, "sandbox helper: bad spec: %v\n", err)
		return 126
	}
	if sp.Noop {
		if sp.Seccomp {
			if err := loadFilter(); err != nil {
				fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
				return 126
			}
		}
		return 0
	}
	if sp.KillAll {
		if err := setIdentity(sp.UID, sp.GID); err != nil {
			fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
			return 126
		}
		_ = syscall.Kill(-1, syscall.SIGKILL)
		return 0
	}
	// The control groups first: nothing of the command runs outside them.
	for _, f := range sp.Cgroups {
		if err := os.WriteFile(f, []byte("0"), 0); err != nil {
			fmt.Fprintf(stderr, "sandbox helper: join %s: %v\n", f, err)
			return 126
		}
	}
	if sp.NetFD > 0 {
		if err := joinNet(sp.NetFD); err != nil {
			fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
			return 126
		}
	}
	if sp.Isolation != nil {
		if err := isolate(sp.Isolation); err != nil {
			fmt.Fprintf(stderr, "sandbox helper: isolate: %v\n", err)
			return 126
		}
	}
	// Everything exec needs is converted, and the seccomp filter
	// compiled, before the limits apply, so the helper does not allocate
	// under them.
	var seccompFilter *compiledFilter
	if sp.Seccomp {
		var err error
		if seccompFilter, err = compileFilter(); err != nil {
			fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
			return 126
		}
	}
	argv0, err := syscall.BytePtrFromString(sp.Path)
	if err != nil {
		fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
		return 126
	}
	argv, err := syscall.SlicePtrFromStrings(sp.Args)
	if err != nil {
		fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
		return 126
	}
	envv, err := syscall.SlicePtrFromStrings(sp.Env)
	if err != nil {
		fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
		return 126
	}
	// Exactly the descriptors the program was given cross the exec (an
	// in-process program: exactly those stay open besides the helper's
	// own). Before the identity changes: the process's /proc entries
	// close to it then.
	closeFDs := closeFrom
	if program != nil {
		closeFDs = closeInherited
	}
	if err := closeFDs(3 + sp.KeepFDs); err != nil {
		fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
		return 126
	}
	if sp.UID >= 0 {
		if err := setIdentity(sp.UID, sp.GID); err != nil {
			fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
			return 126
		}
		// A credential change clears the parent-death signal: set it again.
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
			fmt.Fprintf(stderr, "sandbox helper: pdeathsig: %v\n", err)
			return 126
		}
	}
	// Limits last: lowering them needs no privilege, and nothing below
	// allocates.
	if err := setLimits(sp.Limits, sp.NProc); err != nil {
		fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
		return 126
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "sandbox helper: no_new_privs: %v\n", err)
		return 126
	}
	// The filter last: the steps above make calls it refuses.
	if seccompFilter != nil {
		if err := seccompFilter.install(); err != nil {
			fmt.Fprintf(stderr, "sandbox helper: %v\n", err)
			return 126
		}
	}
	if program != nil {
		os.Clearenv()
		for _, kv := range sp.Env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				_ = os.Setenv(k, v)
			}
		}
		return program()
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	fmt.Fprintf(stderr, "sandbox helper: exec %s: %v\n", sp.Path, errno)
	return 127
}

// setIdentity drops every group and switches to gid, then uid (for every
// thread of the helper).
func setIdentity(uid, gid int) error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("setgid %d: %w", gid, err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("setuid %d: %w", uid, err)
	}
	return nil
}

// setLimits applies the resource limits (soft = hard, except CPU: the hard
// limit is one second later) and forbids core dumps.
func setLimits(l Limits, nproc bool) error {
	set := func(res int, v int64, name string) error {
		if v < 0 {
			return nil
		}
		lim := &syscall.Rlimit{Cur: uint64(v), Max: uint64(v)}
		if res == unix.RLIMIT_CPU {
			// SIGXCPU at the limit, SIGKILL a second later should the
			// program ignore it.
			lim.Max++
		}
		if err := syscall.Setrlimit(res, lim); err != nil {
			return fmt.Errorf("setrlimit %s=%d: %w", name, v, err)
		}
		return nil
	}
	if err := set(unix.RLIMIT_CORE, 0, "core"); err != nil {
		return err
	}
	if err := set(unix.RLIMIT_AS, l.AddressSpaceBytes, "as"); err != nil {
		return err
	}
	if err := set(unix.RLIMIT_CPU, l.CPUSeconds, "cpu"); err != nil {
		return err
	}
	if err := set(unix.RLIMIT_NOFILE, l.OpenFiles, "nofile"); err != nil {
		return err
	}
	if err := set(unix.RLIMIT_FSIZE, l.FileSizeBytes, "fsize"); err != nil {
		return err
	}
	if nproc {
		if err := set(unix.RLIMIT_NPROC, l.Processes, "nproc"); err != nil {
			return err
		}
	}
	return nil
}

// FromConfig returns the Options of the NOETL_SANDBOX_* knobs
// (shared/config, README "Configuration"): 0 means unlimited for the
// limits. Memory is the control group's limit of a command's processes
// together; without control groups it becomes each process's
// address-space limit, four times the memory (numeric libraries reserve
// far more address space than they use). The file size limit is the
// workspace's size (a file cannot be larger than its disk).
func FromConfig(c config.SandboxConfig) Options {
	lim := func(v int64, unit int64) int64 {
		if v <= 0 {
			return -1
		}
		return v * unit
	}
	o := Options{
		Limits: Limits{
			CPUSeconds:    lim(int64(c.CPUSeconds), 1),
			OpenFiles:     lim(int64(c.OpenFiles), 1),
			Processes:     lim(int64(c.Processes), 1),
			MemoryBytes:   max(int64(c.MemoryMB), 0) << 20,
			FileSizeBytes: lim(int64(c.DiskMB), 1<<20),
			CPUs:          c.CPUs,
		},
		BaseUID:     c.BaseUID,
		PoolSize:    c.PoolSize,
		NoNamespace: c.NoNamespace,
		Cgroup:      c.Cgroup,
	}
	if c.MemoryMB <= 0 {
		o.Limits.AddressSpaceBytes = -1
	}
	return o
}

var defaultSandbox = sync.OnceValues(func() (*Sandbox, error) {
	c, err := config.LoadE()
	if err != nil {
		return nil, err
	}
	return New(FromConfig(c.Sandbox))
})

// Default returns the process-wide sandbox built from the configuration
// (FromConfig) on first use (tools built without their own share it).
func Default() (*Sandbox, error) { return defaultSandbox() }
