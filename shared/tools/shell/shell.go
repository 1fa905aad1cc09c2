// Package shell implements the `shell` task kind: one or more shell
// commands run as a subprocess of /bin/sh, in their own process group,
// under a timeout, and WITHOUT the engine's environment.
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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/noetl/gcpengine/shared/tools/internal/conf"
	"github.com/noetl/gcpengine/shared/types"
)

// Defaults used when Options leaves a field zero.
const (
	// DefaultShell runs the commands (`<shell> -c <command>`).
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
	// os.TempDir()).
	TempDir string
}

// Tool is the shell task kind. It is safe for concurrent use.
type Tool struct{ opts Options }

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
//	shell           interpreter, default /bin/sh (run as `<shell> -c`)
//	env             mapping of extra environment variables (values
//	                stringified; nil values skipped)
//	cwd             working directory (must exist); default a fresh empty
//	                directory removed after the attempt
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
// process group was killed; a cancelled ctx is kind "canceled". Bad
// configuration or a shell that cannot start is kind "config".
func (t *Tool) Exec(ctx context.Context, _, cfg map[string]any, timeoutS float64) types.Outcome {
	cmds, err := commands(cfg)
	if err != nil {
		return conf.ConfigError("shell task: %v", err)
	}
	shell := DefaultShell
	if s, ok := conf.String(cfg, "shell"); ok {
		shell = strings.TrimSpace(s)
	}
	shellPath, err := exec.LookPath(shell)
	if err != nil {
		return conf.ConfigError("shell task: shell %q not found: %v", shell, err)
	}
	timeout := t.opts.DefaultTimeout
	if v, ok := conf.Lookup(cfg, "timeout", "timeout_seconds"); ok {
		d, isNum := conf.Seconds(v)
		if !isNum {
			return conf.ConfigError("shell task: `timeout` must be a number of seconds, got %v", v)
		}
		if d > 0 {
			timeout = d
		}
	}
	if timeoutS > 0 {
		if a := time.Duration(timeoutS * float64(time.Second)); a < timeout {
			timeout = a
		}
	}
	home, err := os.MkdirTemp(t.opts.TempDir, "noetl-sh-")
	if err != nil {
		return conf.Fail("internal", true, "shell task: cannot create working directory: %v", err)
	}
	defer os.RemoveAll(home)
	dir := home
	if c, ok := conf.String(cfg, "cwd", "working_dir"); ok {
		st, err := os.Stat(c)
		if err != nil || !st.IsDir() {
			return conf.ConfigError("shell task: cwd %q is not a directory", c)
		}
		dir = c
	}
	env, err := t.environment(cfg, home)
	if err != nil {
		return conf.ConfigError("shell task: %v", err)
	}
	capture := true
	if v, ok := conf.Lookup(cfg, "capture"); ok {
		b, isBool := v.(bool)
		if !isBool {
			return conf.ConfigError("shell task: `capture` must be a boolean, got %T", v)
		}
		capture = b
	}

	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var allOut, allErr bytes.Buffer
	var list []any
	exit := 0
	truncated := false
	for _, c := range cmds {
		r := t.runOne(rctx, shellPath, c, dir, env, capture)
		truncated = truncated || r.truncated
		allOut.WriteString(r.stdout)
		allErr.WriteString(r.stderr)
		list = append(list, map[string]any{"command": firstLine(c), "exit_code": r.exit, "stdout": r.stdout, "stderr": r.stderr})
		exit = r.exit
		if r.startErr != nil {
			return conf.ConfigError("shell task: cannot start %s: %v", shellPath, r.startErr)
		}
		if r.exit != 0 || rctx.Err() != nil {
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
		out.Error = &types.TaskError{Kind: "canceled", Message: "shell task canceled", Retryable: true}
	case rctx.Err() != nil:
		out.Status = types.StatusError
		out.Error = &types.TaskError{Kind: "timeout", Message: fmt.Sprintf("shell task timeout: killed after %s", timeout), Retryable: true}
	case exit != 0:
		msg := fmt.Sprintf("shell command exited with code %d", exit)
		if exit < 0 {
			msg = "shell command was killed by a signal"
		}
		if l := lastLine(allErr.String()); l != "" {
			msg += ": " + l
		}
		out.Status = types.StatusError
		out.Error = &types.TaskError{Kind: "shell", Message: msg}
	}
	return out
}

// commands returns the programs to run, from cmds, command or cmd.
func commands(cfg map[string]any) ([]string, error) {
	if v, ok := conf.Lookup(cfg, "cmds", "commands"); ok {
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
	if v, ok := conf.Lookup(cfg, "command", "cmd"); ok {
		s, isStr := v.(string)
		if !isStr {
			return nil, fmt.Errorf("`command` must be a string, got %T", v)
		}
		if strings.TrimSpace(s) != "" {
			return []string{s}, nil
		}
	}
	return nil, errors.New("`command` (a string) or `cmds` (a list of strings) is required")
}

// environment is the complete environment of the commands.
func (t *Tool) environment(cfg map[string]any, home string) ([]string, error) {
	env := map[string]string{
		"PATH":   t.opts.Path,
		"HOME":   home,
		"TMPDIR": home,
		"LANG":   "C.UTF-8",
	}
	if v, ok := conf.Lookup(cfg, "env"); ok {
		m, isMap := conf.Map(v)
		if !isMap {
			return nil, fmt.Errorf("`env` must be a mapping of variable names to values, got %T", v)
		}
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
}

// runOne runs one program in its own process group; the group is killed
// when ctx ends and after the program exits (stragglers).
func (t *Tool) runOne(ctx context.Context, shellPath, program, dir string, env []string, capture bool) runResult {
	cmd := exec.CommandContext(ctx, shellPath, "-c", program)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil // /dev/null
	stdout := &tail{max: t.opts.MaxOutputBytes, discard: !capture}
	stderr := &tail{max: t.opts.MaxOutputBytes, discard: !capture}
	or, ow, err := os.Pipe()
	if err != nil {
		return runResult{exit: -1, startErr: err}
	}
	er, ew, err := os.Pipe()
	if err != nil {
		or.Close()
		ow.Close()
		return runResult{exit: -1, startErr: err}
	}
	cmd.Stdout, cmd.Stderr = ow, ew
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Start()
	ow.Close()
	ew.Close()
	if err != nil {
		or.Close()
		er.Close()
		return runResult{exit: -1, startErr: err}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(stdout, or) }()
	go func() { defer wg.Done(); _, _ = io.Copy(stderr, er) }()
	waitErr := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	// A grandchild that left the group may hold the pipes: stop reading
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
	or.Close()
	er.Close()
	r := runResult{stdout: stdout.String(), stderr: stderr.String(), truncated: stdout.dropped || stderr.dropped}
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
