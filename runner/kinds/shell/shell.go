// Package shell implements the `shell` task kind: one or more shell
// commands run as a subprocess of /bin/sh, under a timeout, WITHOUT the
// engine's environment, and contained by runner/sandbox exactly as python
// tasks are (README "Security"): when the engine is root every program runs
// under its own unprivileged uid (it cannot read the engine's
// /proc/<pid>/environ or files), with the sandbox's resource limits
// (address space, CPU seconds, open files, processes, file size), in its
// own process group and, when the kernel allows it, its own PID namespace,
// so that its whole process tree (descendants that started a new session
// included) is killed when the program ends or times out.
//
// The environment of the subprocess is exactly: PATH (the engine's PATH,
// which is not secret, unless `env` sets it), HOME and TMPDIR (a fresh
// per-attempt directory), LANG=C.UTF-8, and the task's `env` mapping.
// Nothing else of the engine's environment (credentials, emulator hosts,
// NOETL_* settings) reaches the command: a task that needs a value passes
// it explicitly under `env` (NoETL's shell tool makes the same choice).
package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// Defaults used when Options leaves a field zero.
const (
	// DefaultShell runs the commands (`<shell> <program file>`).
	DefaultShell = "/bin/sh"
	// DefaultTimeout bounds one attempt when neither the task's timeout nor
	// the attempt timeout is set.
	DefaultTimeout = 300 * time.Second
	// DefaultMaxOutputBytes is the largest stdout (and stderr) kept per
	// attempt (1 MiB each); beyond it the head is dropped and the result
	// says truncated.
	DefaultMaxOutputBytes = 1 << 20
	// DefaultPath is the PATH given to commands when the engine has none.
	DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// Options configures the tool. The zero value is usable.
type Options struct {
	// Path is the PATH given to commands (default: the engine's PATH).
	Path string
	// DefaultTimeout replaces DefaultTimeout when non-zero.
	DefaultTimeout time.Duration
	// MaxOutputBytes replaces DefaultMaxOutputBytes when non-zero.
	MaxOutputBytes int
	// TempDir is where per-attempt directories are created (default
	// os.TempDir()). With a dedicated sandbox uid it must be traversable
	// by other users (as /tmp is).
	TempDir string
	// Sandbox runs every program; nil means sandbox.Default() (configured
	// by the NOETL_SANDBOX_* variables).
	Sandbox *sandbox.Sandbox
}

// Tool is the shell task kind. It is safe for concurrent use.
type Tool struct{ opts Options }

// sandbox returns the tool's sandbox.
func (t *Tool) sandbox() (*sandbox.Sandbox, error) {
	if t.opts.Sandbox != nil {
		return t.opts.Sandbox, nil
	}
	return sandbox.Default()
}

// starter is the POSIX shell that starts every program inside the sandbox
// (see starterScript).
const starter = "/bin/sh"

// starterScript runs as `/bin/sh -c starterScript noetl-shell CWD SHELL
// PROGRAM-FILE` under the sandbox's identity and limits, inside the task's
// root (the program's text is in a file of the task's directory, never in
// an argument list). It waits on fd 3 until the engine has handed the
// attempt's directory to the command's uid (EOF without a newline: the
// engine gave up), enters CWD when one is set and finds SHELL on the
// task's PATH — both inside the task's root, never on the runner's host,
// so that a path that is missing and a path outside the root get the same
// answer: "cwd" or "shell" on fd 4 and nothing else —, closes both
// descriptors and execs the task's shell: the program itself never sees
// them.
const starterScript = `read -r g <&3 || exit 125
exec 3<&-
if [ -n "$1" ] && ! cd -- "$1" 2>/dev/null; then
	printf cwd >&4
	exit 125
fi
shift
if ! command -v -- "$1" >/dev/null 2>&1 || [ -d "$1" ]; then
	printf shell >&4
	exit 125
fi
exec 4>&-
exec "$@"`

// New returns a shell tool configured by opts.
func New(opts Options) *Tool {
	if opts.Path == "" {
		opts.Path = os.Getenv("PATH")
		if opts.Path == "" {
			opts.Path = DefaultPath
		}
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return &Tool{opts: opts}
}

// Exec runs the commands of config once (tools.Adapt turns Exec into a
// tools.Tool; args are not used — render them into the command or `env`).
// Keys read:
//
//	command | cmd   string: one shell program (may span lines)
//	cmds | commands list of programs run in order; the first that fails
//	                stops the rest (NoETL's shape)
//	capture         false: discard stdout/stderr (default true)
//	shell           interpreter, default /bin/sh (run as `<shell> FILE`,
//	                the program's text in FILE, never in argv); a name is
//	                looked up on the task's PATH inside its root
//	env             mapping of extra environment variables (values
//	                stringified; nil values skipped)
//	cwd             working directory (a directory of the task's root the
//	                sandbox's uid may enter; relative: to HOME); default a
//	                fresh empty directory (also HOME and TMPDIR) removed
//	                after the attempt. A cwd or shell that is missing and
//	                one outside the task's root get the same answer
//	timeout | timeout_seconds
//	                seconds for the whole attempt, bounded by timeoutS;
//	                default 300 s
//
// Result (also on failure): {"exit_code": int, "returncode": int (same),
// "stdout": str, "stderr": str, "commands": [{"command": first line,
// "exit_code", "stdout", "stderr"}], "truncated": true when output was cut}.
// Status ok when every command exits 0. A non-zero exit is error {kind
// "shell", retryable false} naming the exit code and the last stderr line;
// the deadline is error {kind "timeout", retryable true} after the whole
// process tree was killed; a cancelled ctx is kind "canceled"; a program
// that runs into a sandbox limit (CPU seconds, memory, processes, file
// size, a full workspace) is kind "limit" naming it. Bad
// configuration, a shell that is not found, or a cwd the sandbox's uid
// cannot enter is kind "config"; a sandbox that cannot start the program
// is kind "internal" (retryable).
//
// Every program runs through the tool's sandbox (Options.Sandbox), as the
// python tool's code does: its own uid (when the engine is root), rlimits,
// process group and PID namespace. With a dedicated uid each program of
// `cmds` gets a uid of its own; the attempt's directory, and what earlier
// programs left in it, are handed to it before it starts, so that the
// programs of one task share their files there.
func (t *Tool) Exec(ctx context.Context, _, config map[string]any, timeoutS float64) types.Outcome {
	var cfg toolspec.Shell
	if err := toolspec.Decode(config, &cfg); err != nil {
		return conf.ConfigError("%v", err)
	}
	cmds, err := commands(cfg)
	if err != nil {
		return conf.ConfigError("shell task: %v", err)
	}
	// The shell and the working directory are looked up by the program's
	// starter inside the task's root (starterScript), never here: the
	// runner's host must answer nothing about its own files.
	shell := DefaultShell
	if s := strings.TrimSpace(cfg.Shell); s != "" {
		shell = s
	}
	if strings.ContainsRune(shell, 0) {
		return conf.ConfigError("shell task: shell %q contains a NUL byte", shell)
	}
	if _, err := os.Stat(starter); err != nil {
		return conf.ConfigError("shell task: %s (which starts the commands in the sandbox) not found: %v", starter, err)
	}
	timeout := t.opts.DefaultTimeout
	if d, _ := conf.Seconds(cfg.TimeoutSeconds); d > 0 {
		timeout = d
	}
	if timeoutS > 0 {
		if a := time.Duration(timeoutS * float64(time.Second)); a < timeout {
			timeout = a
		}
	}
	// The command starts in home and enters cwd itself, inside its root
	// and as its uid (the directory's own permissions apply; the sandbox
	// hands only the fresh home to the uid). A relative cwd is relative to
	// home.
	cwd := cfg.Cwd
	if strings.ContainsRune(cwd, 0) {
		return conf.ConfigError("shell task: cwd %q contains a NUL byte", cwd)
	}
	capture := true
	if cfg.Capture != nil {
		capture = *cfg.Capture
	}
	sb, err := t.sandbox()
	if err != nil {
		return conf.Fail(types.ErrKindInternal, true, "shell task: %v", err)
	}
	// The task's workspace in the runner (runner/sandbox), else a fresh
	// directory.
	base, removeBase, err := sandbox.TaskDir(ctx, t.opts.TempDir, "noetl-sh-")
	if err != nil {
		return conf.Fail(types.ErrKindInternal, true, "shell task: cannot create working directory: %v", err)
	}
	defer removeBase()
	// base holds the programs' home (handed to each program's uid) and,
	// beside it, their text: files the programs run from, never an
	// argument list another process could read.
	home, progDir := filepath.Join(base, "home"), filepath.Join(base, "programs")
	for _, d := range []string{home, progDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return conf.Fail(types.ErrKindInternal, true, "shell task: cannot create working directory: %v", err)
		}
	}
	for _, d := range []string{base, progDir} {
		if err := os.Chmod(d, 0o711); err != nil { // traversable by the programs' uids
			return conf.Fail(types.ErrKindInternal, true, "shell task: %v", err)
		}
	}
	env, err := t.environment(cfg, home)
	if err != nil {
		return conf.ConfigError("shell task: %v", err)
	}

	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var allOut, allErr bytes.Buffer
	var list []any
	exit := 0
	truncated, limit := false, ""
	prevUID := -1 // the uid that owns what earlier programs left in home
	for i, c := range cmds {
		prog := filepath.Join(progDir, fmt.Sprintf("program-%d.sh", i+1))
		if err := os.WriteFile(prog, []byte(c), 0o444); err != nil {
			return conf.Fail(types.ErrKindInternal, true, "shell task: cannot write the program: %v", err)
		}
		r := t.runOne(rctx, sb, shell, prog, base, home, cwd, prevUID, env, capture)
		if r.uid >= 0 {
			prevUID = r.uid
		}
		if r.startErr != nil {
			switch {
			case errors.Is(ctx.Err(), context.Canceled):
				return conf.Fail(types.ErrKindCanceled, true, "shell task canceled before start: %v", context.Cause(ctx))
			case rctx.Err() != nil:
				return conf.Fail(types.ErrKindTimeout, true, "shell task timeout: deadline passed before start")
			}
			return conf.Fail(types.ErrKindInternal, true, "shell task: cannot start %s: %v", shell, r.startErr)
		}
		switch r.refused {
		case "cwd":
			return conf.ConfigError("shell task: cwd %q cannot be entered: it is not a directory of the task's root that the task's user may enter", cwd)
		case "shell":
			return conf.ConfigError("shell task: shell %q is not an executable of the task's root (on its PATH)", shell)
		}
		truncated = truncated || r.truncated
		limit = r.limit
		if limit == "" && r.exit != 0 && sandbox.WorkspaceFrom(ctx).Full() {
			limit = "disk"
		}
		allOut.WriteString(r.stdout)
		allErr.WriteString(r.stderr)
		list = append(list, map[string]any{"command": firstLine(c), "exit_code": r.exit, "stdout": r.stdout, "stderr": r.stderr})
		exit = r.exit
		if r.exit != 0 || rctx.Err() != nil || limit != "" {
			break
		}
	}
	result := map[string]any{
		"exit_code":  exit,
		"returncode": exit,
		"stdout":     allOut.String(),
		"stderr":     allErr.String(),
		"commands":   list,
	}
	if truncated {
		result["truncated"] = true
	}
	out := types.Outcome{Status: types.StatusOK, Result: result}
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		out.Status = types.StatusError
		out.Error = &types.TaskError{Kind: types.ErrKindCanceled, Message: "shell task canceled", Retryable: true}
	case rctx.Err() != nil:
		out.Status = types.StatusError
		out.Error = &types.TaskError{Kind: types.ErrKindTimeout, Message: fmt.Sprintf("shell task timeout: killed after %s", timeout), Retryable: true}
	case limit != "":
		out.Status = types.StatusError
		out.Error = &types.TaskError{Kind: types.ErrKindLimit, Message: fmt.Sprintf("shell task: limit %s reached", sb.DescribeLimit(limit))}
	case exit != 0:
		msg := fmt.Sprintf("shell command exited with code %d", exit)
		if exit < 0 {
			msg = "shell command was killed by a signal"
		}
		if l := lastLine(allErr.String()); l != "" {
			msg += ": " + l
		}
		out.Status = types.StatusError
		out.Error = &types.TaskError{Kind: types.ErrKindShell, Message: msg}
	}
	return out
}

// commands returns the programs to run, from cmds, command or cmd.
func commands(cfg toolspec.Shell) ([]string, error) {
	if v := cfg.Cmds; v != nil {
		switch x := v.(type) {
		case []any:
			var out []string
			for i, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("cmds[%d] must be a string, got %T", i, e)
				}
				if strings.TrimSpace(s) != "" {
					out = append(out, s)
				}
			}
			if len(out) == 0 {
				return nil, errors.New("`cmds` has no command")
			}
			return out, nil
		case string:
			if strings.TrimSpace(x) != "" {
				return []string{x}, nil
			}
		default:
			return nil, fmt.Errorf("`cmds` must be a list of strings, got %T", v)
		}
	}
	if s := cfg.Command; strings.TrimSpace(s) != "" {
		return []string{s}, nil
	}
	return nil, errors.New("`command` (a string) or `cmds` (a list of strings) is required")
}

// environment is the complete environment of the commands.
func (t *Tool) environment(cfg toolspec.Shell, home string) ([]string, error) {
	env := map[string]string{
		"PATH":   t.opts.Path,
		"HOME":   home,
		"TMPDIR": home,
		"LANG":   "C.UTF-8",
	}
	if m := cfg.Env; m != nil {
		for k, val := range m {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return nil, fmt.Errorf("env: invalid variable name %q", k)
			}
			if val == nil {
				continue
			}
			s := conf.Stringify(val)
			if strings.ContainsRune(s, 0) {
				return nil, fmt.Errorf("env: value of %s contains a NUL byte", k)
			}
			env[k] = s
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out, nil
}

type runResult struct {
	exit           int
	stdout, stderr string
	truncated      bool
	startErr       error
	uid            int    // the command's dedicated uid, -1 without one
	refused        string // "cwd" or "shell": the starter could not enter cwd or find the shell
	limit          string // the sandbox limit the program hit (LimitHit)
}

// runOne runs one program in the sandbox (own uid, rlimits, process group,
// PID namespace; starterScript starts it). The sandbox kills the whole
// process tree when ctx ends and after the program exits. home is the
// command's working directory; before the program starts, what an earlier
// program (uid prevUID) left in it is handed to the command's uid, and
// the sandbox takes home back from that uid when it has exited.
func (t *Tool) runOne(ctx context.Context, sb *sandbox.Sandbox, shellPath, program, base, home, cwd string, prevUID int, env []string, capture bool) runResult {
	cmd := sb.Command(ctx, starter, "-c", starterScript, "noetl-shell", cwd, shellPath, program)
	cmd.Dir = home // handed to the command's uid by the sandbox
	cmd.Workspace = base
	cmd.Env = env
	cmd.Stdin = nil // /dev/null
	stdout := &tail{max: t.opts.MaxOutputBytes, discard: !capture}
	stderr := &tail{max: t.opts.MaxOutputBytes, discard: !capture}
	// Plain files handed to the child (so that Wait returns when the
	// program exits, whoever else holds them): stdout, stderr, the start
	// gate (fd 3) and the starter's status (fd 4).
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	or, ow, err := pipe()
	if err != nil {
		return runResult{exit: -1, uid: -1, startErr: err}
	}
	er, ew, err := pipe()
	if err != nil {
		closeAll()
		return runResult{exit: -1, uid: -1, startErr: err}
	}
	gr, gw, err := pipe()
	if err != nil {
		closeAll()
		return runResult{exit: -1, uid: -1, startErr: err}
	}
	sr, sw, err := pipe()
	if err != nil {
		closeAll()
		return runResult{exit: -1, uid: -1, startErr: err}
	}
	defer closeAll()
	cmd.Stdout, cmd.Stderr = ow, ew
	cmd.ExtraFiles = []*os.File{gr, sw}
	err = cmd.Start()
	ow.Close()
	ew.Close()
	gr.Close()
	sw.Close()
	uid := cmd.UID()
	if err != nil {
		return runResult{exit: -1, uid: -1, startErr: err}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(stdout, or) }()
	go func() { defer wg.Done(); _, _ = io.Copy(stderr, er) }()
	// The program waits at the gate until home is its uid's (the sandbox
	// handed it home itself); a gate closed without a newline stops it.
	var handErr error
	if uid >= 0 && prevUID >= 0 && prevUID != uid {
		handErr = handOver(home, prevUID, uid)
	}
	if handErr == nil {
		_, _ = gw.Write([]byte("\n")) // EPIPE: the program already died (ctx)
	}
	gw.Close()
	// Wait also takes home back (owner and mode) before the uid returns
	// to the pool, where another task may get it while home holds this
	// task's files.
	waitErr := cmd.Wait()
	// Should a descendant have escaped the sandbox's containment (no PID
	// namespace, no dedicated uid) and keep the pipes open, stop reading
	// after a grace period.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		or.Close()
		er.Close()
		<-done
	}
	// Only the starter (exited by now) ever held the status pipe.
	_ = sr.SetReadDeadline(time.Now().Add(time.Second))
	status, _ := io.ReadAll(io.LimitReader(sr, 64))
	r := runResult{stdout: stdout.String(), stderr: stderr.String(), truncated: stdout.dropped || stderr.dropped, uid: uid, limit: cmd.LimitHit()}
	if handErr != nil {
		r.exit, r.startErr = -1, fmt.Errorf("cannot hand the working directory to uid %d: %w", uid, handErr)
		return r
	}
	r.refused = string(status)
	var ee *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &ee):
		r.exit = ee.ExitCode() // -1 when killed by a signal
	default:
		r.exit = -1
	}
	return r
}

// handOver gives what uid from left under dir (the files earlier programs
// of the attempt created) to uid to. Only entries owned by from change
// hands: a hard link to someone else's file never does. Symbolic links are
// changed themselves, never followed. Nobody else can change dir meanwhile:
// from's processes are dead, dir is to's and to's program waits at the
// gate.
func handOver(dir string, from, to int) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) != from {
			return nil
		}
		gid := to
		if int(st.Gid) != from {
			gid = -1 // keep a group the program could not choose
		}
		return os.Lchown(path, to, gid)
	})
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	dropped bool
	discard bool
}

// Write implements io.Writer; it never fails.
func (b *tail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.discard {
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
		b.dropped = true
	}
	return len(p), nil
}

// String returns the kept tail as valid UTF-8.
func (b *tail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf
	if len(s) > b.max {
		s = s[len(s)-b.max:]
		b.dropped = true
	}
	return strings.ToValidUTF8(string(s), "\uFFFD")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
