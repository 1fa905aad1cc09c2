// Package python implements the `python` task kind (NoETL DSL spec "Python tasks"):
// the task's code runs in a fresh CPython 3 subprocess per attempt, in an
// empty temporary working directory, without the engine's environment and
// under a timeout, contained by runner/sandbox (README "Security": its own
// unprivileged uid when the engine is root, resource limits, its whole
// process tree killed at the end of the attempt).
//
// With Options.Warm (the runner: NOETL_PYTHON_WARM_INTERPRETERS) the
// subprocess is started ahead of the attempt (warm.go): in a room and
// workspace of its own, the runner's modules imported, blocked on stdin.
// The attempt's code, args and context reach it only at hand-out, on that
// pipe; it serves that one attempt and is destroyed after it, and the
// pool starts its replacement in the background.
//
// NoETL conventions supported (every conformance playbook relies on one):
//
//   - config["code"] is the source. Args are bound as variables (keys that
//     are valid identifiers) and as the dict `input_data`; when args has a
//     key "input_data" that value is `input_data` instead.
//   - The code sets `result = ...`; or uses a top-level `return` (the body is
//     then compiled as a function whose parameters are the args); or defines
//     `main(...)`, which is called when no result was set, with the args its
//     signature names (`main(**kwargs)` gets all args, a parameter named
//     input_data gets input_data).
//   - config["libs"] maps alias to module (`{np: numpy}` is
//     `import numpy as np`); a list of module names is accepted too.
//   - `context` is a global mapping with the execution context
//     (ExecContext: execution_id, step, task, workload, ctx, iter, input);
//     an arg named context takes precedence.
//   - print output (stdout and stderr) becomes Outcome.Logs (tail, 64 KiB),
//     never the result. The result travels back as JSON on fd 3; values JSON
//     cannot hold are converted (sets/tuples to lists, datetimes to
//     isoformat, Decimal to int/float, NaN to null, anything else str()).
//   - An exception is status "error" with error {kind "python", message
//     "<Type>: <msg>", retryable false}, outcome.py.exception_type = the
//     class name, and the traceback in the logs.
package python

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/noetl/gcpengine/runner/kinds/script"
	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

//go:embed runner.py
var runnerSource string

// Defaults used when Options leaves a field zero.
const (
	// DefaultInterpreter is looked up on PATH.
	DefaultInterpreter = "python3"
	// DefaultTimeout bounds one attempt when the attempt timeout is 0.
	DefaultTimeout = 300 * time.Second
	// DefaultMaxLogBytes is the size of the captured output tail.
	DefaultMaxLogBytes = 64 << 10
	// DefaultMaxResultBytes caps the JSON result read back (64 MiB).
	DefaultMaxResultBytes int64 = 64 << 20
)

// Options configures the tool. The zero value is usable.
type Options struct {
	// Interpreter is the python executable: a name looked up on PATH or a
	// path; default DefaultInterpreter. It is resolved once, to
	// sys.executable, so that shims (pyenv) are not paid for on every attempt.
	Interpreter string
	// DefaultTimeout replaces DefaultTimeout when non-zero.
	DefaultTimeout time.Duration
	// MaxLogBytes replaces DefaultMaxLogBytes when non-zero.
	MaxLogBytes int
	// MaxResultBytes replaces DefaultMaxResultBytes when non-zero.
	MaxResultBytes int64
	// Path is the PATH given to the subprocess; default the engine's PATH.
	Path string
	// TempDir is where per-attempt working directories are created; default
	// os.TempDir(). With a dedicated sandbox uid it must be traversable by
	// other users (as /tmp is).
	TempDir string
	// Scripts loads the code of `script:` blocks (script.go).
	Scripts script.Options
	// Sandbox runs every attempt; nil means sandbox.Default() (configured
	// by the NOETL_SANDBOX_* variables).
	Sandbox *sandbox.Sandbox
	// Warm is how many interpreters the tool keeps started ahead of
	// demand (warm.go: each in a room and workspace of its own, its
	// modules imported, waiting for one attempt's payload, never reused);
	// 0: every attempt starts its own. The pool starts on first use.
	Warm int
	// WarmMaxAge replaces a warm interpreter that waited longer
	// (default DefaultWarmMaxAge).
	WarmMaxAge time.Duration
	// Workspaces makes a warm interpreter's workspace (the runner's
	// tmpfs); nil: a directory under TempDir.
	Workspaces func() (*sandbox.Workspace, error)
	// Zygote forks the warm interpreters from one interpreter started
	// once with the modules imported (sandbox.Zygote; each child builds
	// its own room before its task's code arrives) instead of exec'ing
	// each through the sandbox's helper. A sandbox that cannot have a
	// zygote (the engine is not root, or no PID namespace) execs them.
	Zygote bool
}

// Tool is the python task kind. It is safe for concurrent use; every Exec
// starts its own process.
type Tool struct {
	opts Options

	once      sync.Once
	interp    string
	interpErr error

	poolMu sync.Mutex
	warm   *sandbox.Pool[*warmPy]
	closed bool

	zyMu sync.Mutex
	zy   *sandbox.Zygote
	// zyOff: no zygote (the sandbox cannot have one, or the tool closed);
	// zyRetry: not before then, after a zygote failed to start.
	zyOff   bool
	zyRetry time.Time
	// zyFailed counts the current zygote's failed warm starts in a row.
	zyFailed int
	// zyForked counts the warm interpreters forked from a zygote.
	zyForked atomic.Int64
	// retiring counts answered warm interpreters being torn down.
	retiring sync.WaitGroup
}

// New returns a python tool configured by opts.
func New(opts Options) *Tool {
	if opts.Interpreter == "" {
		opts.Interpreter = DefaultInterpreter
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxLogBytes <= 0 {
		opts.MaxLogBytes = DefaultMaxLogBytes
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.Path == "" {
		opts.Path = os.Getenv("PATH")
		if opts.Path == "" {
			opts.Path = "/usr/local/bin:/usr/bin:/bin"
		}
	}
	return &Tool{opts: opts}
}

// Interpreter returns the absolute path of the python executable the tool
// runs (resolved on first use), or an error when none is found. The
// interpreter must start inside the sandbox: when the configured one cannot
// (a dedicated uid cannot read an interpreter installed under /root, e.g.
// pyenv's), /usr/bin/python3 and /usr/local/bin/python3 are tried and the
// substitution is logged; when none starts, the error says why.
func (t *Tool) Interpreter() (string, error) {
	t.once.Do(func() {
		t.interp, t.interpErr = t.resolve()
		if t.interpErr == nil {
			t.interp, t.interpErr = t.sandboxed(t.interp)
		}
	})
	return t.interp, t.interpErr
}

// sandbox returns the tool's sandbox.
func (t *Tool) sandbox() (*sandbox.Sandbox, error) {
	if t.opts.Sandbox != nil {
		return t.opts.Sandbox, nil
	}
	return sandbox.Default()
}

// sandboxed checks that interp starts inside the sandbox, falling back to a
// system interpreter (see Interpreter).
func (t *Tool) sandboxed(interp string) (string, error) {
	sb, err := t.sandbox()
	if err != nil {
		return "", err
	}
	probeErr := t.probe(sb, interp)
	if probeErr == nil {
		return interp, nil
	}
	var altErrs []string
	for _, alt := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if alt == interp {
			continue
		}
		err := t.probe(sb, alt)
		if err != nil {
			altErrs = append(altErrs, fmt.Sprintf("%s: %v", alt, err))
		}
		if err == nil {
			slog.Warn("python: the configured interpreter does not start in the sandbox; using a system interpreter",
				"configured", interp, "error", probeErr, "using", alt)
			return alt, nil
		}
	}
	return "", fmt.Errorf("python interpreter %s does not start in the sandbox (install python where unprivileged users can read it, or set NOETL_PYTHON): %v; nor do the system interpreters (%s)", interp, probeErr, strings.Join(altErrs, "; "))
}

// probe runs interp inside the sandbox and checks it imports json.
func (t *Tool) probe(sb *sandbox.Sandbox, interp string) error {
	dir, err := os.MkdirTemp(t.opts.TempDir, "noetl-py-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sb.Command(ctx, interp, "-s", "-c", "import json, sys; sys.stdout.write('ok')")
	c.Dir = dir
	c.Env = t.env(dir)
	// stdout must be exactly "ok"; stderr is only quoted on failure (a
	// line the sandbox helper or the interpreter writes there under a
	// loaded machine's memory limits does not fail the probe).
	var out, stderr bytes.Buffer
	c.Stdout = &out
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		return err
	}
	if err := c.Wait(); err != nil || out.String() != "ok" {
		return fmt.Errorf("%v: stdout %q, stderr: %s", err, lastLine(out.String()), lastLine(stderr.String()))
	}
	return nil
}

func (t *Tool) resolve() (string, error) {
	p, err := exec.LookPath(t.opts.Interpreter)
	if err != nil {
		return "", fmt.Errorf("python interpreter %q not found (PATH=%s): %w", t.opts.Interpreter, t.opts.Path, err)
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	dir, err := os.MkdirTemp(t.opts.TempDir, "noetl-py-resolve-")
	if err != nil {
		return p, nil
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, "-c", "import sys; sys.stdout.write(sys.executable + '\\n' + '.'.join(map(str, sys.version_info[:2])))")
	cmd.Dir = dir
	cmd.Env = t.env(dir)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("python interpreter %s does not run: %v", p, err)
	}
	exe, ver, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if !strings.HasPrefix(ver, "3.") {
		return "", fmt.Errorf("python interpreter %s is version %q; CPython 3 is required", p, ver)
	}
	if exe != "" {
		if st, err := os.Stat(exe); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return exe, nil
		}
	}
	return p, nil
}

// env is the complete environment of the subprocess: nothing of the
// engine's environment except PATH.
func (t *Tool) env(dir string) []string {
	return []string{
		"PATH=" + t.opts.Path,
		"LANG=C.UTF-8",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONIOENCODING=utf-8",
		"HOME=" + dir,
		"TMPDIR=" + dir,
	}
}

// Exec executes config["code"] once with the rendered args (see the package
// documentation for the conventions; tools.Adapt turns Exec into a
// tools.Tool). The attempt timeout is timeoutS seconds (0: default 300 s); on expiry the whole process tree is killed (runner/sandbox) and the outcome is
// error {kind "timeout", retryable true}. Result and logs as documented on
// the package; a missing `code` or args that cannot be encoded as JSON are
// kind "config"; a runner that dies without reporting (killed, os._exit) is
// kind "python" with the exit status in the message.
func (t *Tool) Exec(ctx context.Context, args, config map[string]any, timeoutS float64) types.Outcome {
	return t.ExecContext(ctx, args, config, nil, timeoutS)
}

// ExecContext is Exec with the execution context the code sees as the
// global mapping `context` (NoETL python tasks read it; tools.Request
// Context: execution_id, step, task, workload, ctx, iter, input). A nil
// taskCtx gives an empty mapping.
func (t *Tool) ExecContext(ctx context.Context, args, config, taskCtx map[string]any, timeoutS float64) types.Outcome {
	var spec toolspec.Python
	if err := toolspec.Decode(config, &spec); err != nil {
		return conf.ConfigError("%v", err)
	}
	spec, failed := t.prepare(ctx, spec, timeoutS) // script: and libs (script.go)
	if failed != nil {
		return *failed
	}
	code := spec.Code
	if strings.TrimSpace(code) == "" {
		return conf.ConfigError("python task: `code` (a string) is required")
	}
	if args == nil {
		args = map[string]any{}
	}
	if taskCtx == nil {
		taskCtx = map[string]any{}
	}
	payload, err := json.Marshal(map[string]any{"code": code, "args": args, "libs": spec.Libs, "context": taskCtx})
	if err != nil {
		return conf.ConfigError("python task: args/libs cannot be encoded as JSON: %v", err)
	}
	interp, err := t.Interpreter()
	if err != nil {
		return conf.ConfigError("python task: %v", err)
	}
	timeout := t.opts.DefaultTimeout
	if timeoutS > 0 {
		timeout = time.Duration(timeoutS * float64(time.Second))
	}

	sb, err := t.sandbox()
	if err != nil {
		return conf.Fail(types.ErrKindInternal, true, "python task: %v", err)
	}

	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A warm interpreter when the pool has one (warm.go), else one
	// started now in the task's workspace.
	pr, ok := t.takeWarm(ctx, rctx)
	if ok {
		defer pr.replace() // the pool's next one starts after the answer, not beside the task
		go func() {
			_, _ = pr.stdin.Write(payload)
			pr.stdin.Close()
		}()
	} else {
		var failed *types.Outcome
		if pr, failed = t.startCold(ctx, rctx, sb, interp, payload); failed != nil {
			return *failed
		}
	}
	retired := false
	defer func() {
		if !retired {
			pr.release()
		}
	}()
	r, lr := pr.res, pr.logs
	logs := &tailBuffer{max: t.opts.MaxLogBytes}
	logsDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(logs, lr)
		close(logsDone)
	}()
	resCh := make(chan read, 1)
	go func() {
		data, _ := io.ReadAll(io.LimitReader(r, t.opts.MaxResultBytes+1))
		over := int64(len(data)) > t.opts.MaxResultBytes
		if over {
			data = nil
			_, _ = io.Copy(io.Discard, r)
		}
		resCh <- read{data, over}
	}()

	if pr.exited != nil {
		// A warm interpreter's room and workspace are its own: once it
		// has answered ok and its output has ended, the answer goes back
		// at once, and the room is torn down after it (warm.go).
		if out, ok := t.answeredEarly(resCh, logsDone, logs, lr, pr.exited); ok {
			retired = true
			t.retire(pr)
			return out
		}
	}

	// Wait also kills what is left of the process tree (the sandbox).
	waitErr := pr.wait()
	// Should a descendant have escaped the sandbox's containment (no PID
	// namespace, no dedicated uid) and keep the pipes open, stop reading
	// after a grace period.
	grace := time.NewTimer(2 * time.Second)
	defer grace.Stop()
	var res read
	select {
	case res = <-resCh:
	case <-grace.C:
		r.Close()
		lr.Close()
		res = <-resCh
	}
	select {
	case <-logsDone:
	case <-grace.C:
		lr.Close()
		<-logsDone
	}
	r.Close()
	lr.Close()

	out := types.Outcome{Logs: logs.String()}
	if res.over {
		return withLogs(conf.Fail(types.ErrKindPython, false, "python task: result exceeds the %d MiB limit", t.opts.MaxResultBytes>>20), out.Logs)
	}
	ws := pr.ws
	limit := pr.cmd.LimitHit()
	if msg, ok := decodeMessage(res.data); ok {
		if okv, _ := msg["ok"].(bool); okv {
			out.Status = types.StatusOK
			out.Result = msg["result"]
			return out
		}
		typ, _ := msg["type"].(string)
		switch {
		case limit == "" && typ == "MemoryError":
			limit = "memory" // the address-space rlimit (no control group)
		case limit == "" && ws.Full() && typ == "OSError":
			limit = "disk"
		}
		if limit != "" {
			m, _ := msg["message"].(string)
			o := withLogs(conf.Fail(types.ErrKindLimit, false, "python task: limit %s reached: %s", sb.DescribeLimit(limit), m), out.Logs)
			o.Py = &types.PyOutcome{ExceptionType: typ}
			return o
		}
		message, _ := msg["message"].(string)
		if message == "" {
			message = typ
		}
		out.Status = types.StatusError
		out.Error = &types.TaskError{Kind: types.ErrKindPython, Message: message}
		out.Py = &types.PyOutcome{ExceptionType: typ}
		return out
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return withLogs(conf.Fail(types.ErrKindCanceled, true, "python task canceled: %v", context.Cause(ctx)), out.Logs)
	case rctx.Err() != nil:
		return withLogs(conf.Fail(types.ErrKindTimeout, true, "python task timeout: killed after %s", timeout), out.Logs)
	}
	if limit == "" && ws.Full() {
		limit = "disk"
	}
	if limit != "" {
		return withLogs(conf.Fail(types.ErrKindLimit, false, "python task: limit %s reached: killed", sb.DescribeLimit(limit)), out.Logs)
	}
	status := "exited without reporting a result"
	if waitErr != nil {
		status = fmt.Sprintf("exited without reporting a result (%v)", waitErr)
	}
	msg := "python task: runner " + status
	if last := lastLine(out.Logs); last != "" {
		msg += ": " + last
	}
	return withLogs(conf.Fail(types.ErrKindPython, false, "%s", msg), out.Logs)
}

// read is the runner's fd-3 message as read (over: beyond
// MaxResultBytes, dropped).
type read struct {
	data []byte
	over bool
}

// installPrefix is the installation directory of an interpreter outside
// the directories an isolated command always sees (sandbox
// DefaultReadOnly): e.g. /srv/venv for /srv/venv/bin/python3.
func installPrefix(interp string) []string {
	for _, d := range sandbox.DefaultReadOnly {
		if strings.HasPrefix(interp, d+"/") {
			return nil
		}
	}
	return []string{filepath.Dir(filepath.Dir(interp))}
}

func withLogs(o types.Outcome, logs string) types.Outcome {
	o.Logs = logs
	return o
}

// decodeMessage decodes the runner's fd-3 message.
func decodeMessage(b []byte) (map[string]any, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false
	}
	v, err := jsonx.Decode(b)
	if err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
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

// tailBuffer keeps the last max bytes written to it (amortised O(1) per
// byte: the buffer grows to 2*max before it is compacted).
type tailBuffer struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	dropped int64
}

// Write implements io.Writer; it never fails.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if len(p) >= b.max {
		b.dropped += int64(len(b.buf) + len(p) - b.max)
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		drop := len(b.buf) - b.max
		b.dropped += int64(drop)
		copy(b.buf, b.buf[drop:])
		b.buf = b.buf[:b.max]
	}
	return n, nil
}

// String returns the kept tail (at most max bytes), prefixed by a note when
// earlier output was dropped; invalid UTF-8 is replaced.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf
	dropped := b.dropped
	if len(s) > b.max {
		dropped += int64(len(s) - b.max)
		s = s[len(s)-b.max:]
	}
	if dropped == 0 {
		return strings.ToValidUTF8(string(s), "\uFFFD")
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
		dropped++
	}
	return fmt.Sprintf("[... %d bytes of earlier output dropped ...]\n", dropped) + strings.ToValidUTF8(string(s), "\uFFFD")
}

// startCold starts an interpreter for this attempt alone, in the task's
// workspace (the runner's, else a fresh directory), under rctx, with the
// payload on its stdin.
func (t *Tool) startCold(ctx, rctx context.Context, sb *sandbox.Sandbox, interp string, payload []byte) (*proc, *types.Outcome) {
	fail := func(o types.Outcome) (*proc, *types.Outcome) { return nil, &o }
	dir, removeDir, err := sandbox.TaskDir(ctx, t.opts.TempDir, "noetl-py-")
	if err != nil {
		return fail(conf.Fail(types.ErrKindInternal, true, "python task: cannot create working directory: %v", err))
	}
	// The sandbox owns identity, limits and the process tree: rctx's end
	// kills the whole tree, and Wait kills what is left of it.
	cmd := sb.Command(rctx, interp, "-s", "-c", runnerSource)
	cmd.Dir = dir
	cmd.ReadOnly = installPrefix(interp)
	cmd.Env = t.env(dir)
	cmd.Stdin = bytes.NewReader(payload)
	// Output and result pipes are plain files handed to the child, so that
	// Wait returns as soon as the process exits (not when every inheritor of
	// the pipes has closed them); the group is killed right after.
	lr, lw, err := os.Pipe()
	if err != nil {
		removeDir()
		return fail(conf.Fail(types.ErrKindInternal, true, "python task: cannot create output pipe: %v", err))
	}
	r, w, err := os.Pipe()
	if err != nil {
		lr.Close()
		lw.Close()
		removeDir()
		return fail(conf.Fail(types.ErrKindInternal, true, "python task: cannot create result pipe: %v", err))
	}
	cmd.Stdout = lw
	cmd.Stderr = lw
	cmd.ExtraFiles = []*os.File{w}
	cmd.WaitDelay = 2 * time.Second // bounds the stdin copier
	err = cmd.Start()
	lw.Close()
	w.Close()
	if err != nil {
		lr.Close()
		r.Close()
		removeDir()
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			return fail(conf.Fail(types.ErrKindCanceled, true, "python task canceled before start: %v", context.Cause(ctx)))
		case rctx.Err() != nil:
			return fail(conf.Fail(types.ErrKindTimeout, true, "python task timeout: deadline passed before start"))
		}
		return fail(conf.Fail(types.ErrKindInternal, true, "python task: cannot start %s: %v", interp, err))
	}
	return &proc{cmd: cmd, res: r, logs: lr, ws: sandbox.WorkspaceFrom(ctx), wait: cmd.Wait, release: removeDir}, nil
}
