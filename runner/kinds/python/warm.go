package python

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/noetl/gcpengine/runner/egress"
	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/types"
)

// DefaultWarmMaxAge is how long a warm interpreter waits for a task
// before it is replaced, when Options.WarmMaxAge is 0.
const DefaultWarmMaxAge = 10 * time.Minute

// warmReadyTimeout bounds a warm interpreter's start (room, exec, imports).
const warmReadyTimeout = 30 * time.Second

// warmModules are the modules a warm interpreter has imported before its
// task arrives (runner.py's `warm` mode imports its arguments; a zygote
// imports them, and the runner's own, once for all its children).
var warmModules = []string{"ast", "builtins", "importlib", "inspect", "keyword", "linecache", "traceback",
	"base64", "dataclasses", "collections.abc", "datetime", "decimal", "math", "re"}

// zygoteForks is how many warm interpreters one zygote forks before the
// tool starts a new one: its children share its memory layout (address
// space layout randomisation happens once per zygote), so that a task
// that learns it learns it for a bounded number of later tasks only.
const zygoteForks = 256

// zygoteRetry is how long the tool execs warm interpreters after a
// zygote failed to start, or its children did zygoteFailures times in a
// row, before it tries another.
const zygoteRetry = 30 * time.Second

// zygoteFailures is how many warm starts of a zygote's children may fail
// in a row before the tool retires it (zygoteStarted).
const zygoteFailures = 3

// zygoteProgram is what a zygote's children run: the runner (tests
// replace it to make the children fail).
var zygoteProgram = runnerSource

// proc is one attempt's interpreter: started for the attempt (cold) or
// taken from the pool (warm), with the pipes of its protocol.
type proc struct {
	cmd   *sandbox.Cmd
	stdin *os.File // the payload's pipe (warm; cold: cmd.Stdin)
	res   *os.File // fd 3 of the runner: its result
	logs  *os.File // its stdout and stderr
	ws    *sandbox.Workspace
	// wait waits for the process and returns Wait's error (once).
	wait func() error
	// release ends what the attempt holds besides the process (a warm
	// one's kill on the attempt's end, its workspace).
	release func()
	// exited is closed when the process has exited (a warm one's; nil:
	// cold, whose wait tears its room down before the answer).
	exited <-chan struct{}
	// replace starts the replacement of a warm one in the pool
	// (sandbox.Pool.TakeDeferred; nil: cold). Exec calls it once the
	// attempt has its outcome.
	replace func()
}

// warmPy is a warm interpreter: runner.py started in a room of its own
// with a workspace of its own, the runner's modules imported, blocked on
// stdin. It serves one attempt, then it is destroyed (sandbox.Pool).
type warmPy struct {
	cmd   *sandbox.Cmd
	stdin *os.File
	res   *os.File
	logs  *os.File
	ws    *sandbox.Workspace
	// conns counts its network's connections; bound to the attempt's
	// quota at hand-out (egress.TaskConns.Adopt).
	conns *egress.TaskConns

	done    chan struct{} // the process exited (waitErr set)
	waitErr error
	once    sync.Once
}

// Alive reports whether the interpreter still waits (sandbox.Warm).
func (w *warmPy) Alive() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// Destroy kills the interpreter, waits for it and releases its room and
// workspace (sandbox.Warm; idempotent).
func (w *warmPy) Destroy() {
	w.once.Do(func() {
		if w.cmd.Process != nil {
			_ = w.cmd.Process.Kill()
		}
		<-w.done
		w.stdin.Close()
		w.res.Close()
		w.logs.Close()
		_ = w.ws.Close()
	})
}

// pool returns the tool's pool of warm interpreters (nil without
// Options.Warm), started on first use.
func (t *Tool) pool() *sandbox.Pool[*warmPy] {
	if t.opts.Warm <= 0 {
		return nil
	}
	t.poolMu.Lock()
	defer t.poolMu.Unlock()
	if t.warm == nil && !t.closed {
		age := t.opts.WarmMaxAge
		if age <= 0 {
			age = DefaultWarmMaxAge
		}
		t.warm = sandbox.NewPool(sandbox.PoolOptions{Size: t.opts.Warm, MaxAge: age}, t.startWarm)
	}
	return t.warm
}

// zygoteStarted counts the warm starts of z's children that failed in a
// row (err; nil: one succeeded): at zygoteFailures the tool retires z and
// execs warm interpreters for zygoteRetry. A zygote whose children cannot
// build their rooms where the helper can (a kernel that refuses a step of
// theirs) must not leave every task to a cold start.
func (t *Tool) zygoteStarted(z *sandbox.Zygote, err error) {
	t.zyMu.Lock()
	defer t.zyMu.Unlock()
	if t.zy != z {
		return // retired already
	}
	if err == nil {
		t.zyFailed = 0
		return
	}
	if t.zyFailed++; t.zyFailed < zygoteFailures {
		return
	}
	slog.Warn("python: the zygote's interpreters do not start; warm interpreters are exec'd meanwhile", "error", err, "retry_in", zygoteRetry)
	t.zy.Close()
	t.zy, t.zyFailed = nil, 0
	t.zyRetry = time.Now().Add(zygoteRetry)
}

// Close destroys the warm interpreters (the runner's shutdown) and
// retires the zygote (it exits once its children have). Attempts under
// way are not affected; later ones start their own interpreter.
func (t *Tool) Close() {
	t.poolMu.Lock()
	t.closed = true
	p := t.warm
	t.poolMu.Unlock()
	p.Close()
	t.zyMu.Lock()
	t.zyOff = true
	if t.zy != nil {
		t.zy.Close()
		t.zy = nil
	}
	t.zyMu.Unlock()
	t.retiring.Wait()
}

// zygote returns the zygote warm interpreters fork from, started on first
// use, or nil: exec each (Options.Zygote off, a sandbox that cannot have
// one, a zygote that failed to start less than zygoteRetry ago). A zygote
// that exited, or that forked zygoteForks children, is retired and
// replaced.
func (t *Tool) zygote(sb *sandbox.Sandbox, interp string) *sandbox.Zygote {
	if !t.opts.Zygote {
		return nil
	}
	t.zyMu.Lock()
	defer t.zyMu.Unlock()
	if t.zyOff || time.Now().Before(t.zyRetry) {
		return nil
	}
	if z := t.zy; z != nil && z.Alive() && z.Forks() < zygoteForks {
		return z
	}
	if t.zy != nil {
		t.zy.Close()
		t.zy = nil
	}
	z, err := sb.NewZygote(sandbox.ZygoteOptions{Interpreter: interp, Program: zygoteProgram,
		Preload: append([]string{"json"}, warmModules...), Env: t.env("/")})
	switch {
	case errors.Is(err, sandbox.ErrNoZygote):
		t.zyOff = true
		slog.Info("python: warm interpreters are exec'd, each through the sandbox's helper (no zygote: it needs root and a PID namespace)")
		return nil
	case err != nil:
		t.zyRetry = time.Now().Add(zygoteRetry)
		slog.Warn("python: the zygote did not start; warm interpreters are exec'd meanwhile", "error", err, "retry_in", zygoteRetry)
		return nil
	}
	t.zy = z
	return z
}

// answeredEarly waits for a warm interpreter's answer or its exit,
// whichever comes first. With an ok answer it waits for its output to
// end (it exits right after answering; 2 s at most) and returns the
// outcome; otherwise (an error, no answer, the exit first) it puts the
// answer back on resCh and returns false: the caller classifies it after
// Wait, as for a cold interpreter.
func (t *Tool) answeredEarly(resCh chan read, logsDone <-chan struct{}, logs *tailBuffer, lr *os.File, exited <-chan struct{}) (types.Outcome, bool) {
	var res read
	select {
	case res = <-resCh:
	case <-exited:
		return types.Outcome{}, false
	}
	msg, ok := decodeMessage(res.data)
	if okv, _ := msg["ok"].(bool); res.over || !ok || !okv {
		resCh <- res
		return types.Outcome{}, false
	}
	select {
	case <-logsDone:
	case <-time.After(2 * time.Second):
		lr.Close()
		<-logsDone
	}
	return types.Outcome{Status: types.StatusOK, Result: msg["result"], Logs: logs.String()}, true
}

// retire tears down an answered warm interpreter's room in the background
// (Close waits for it).
func (t *Tool) retire(pr *proc) {
	t.retiring.Add(1)
	go func() {
		defer t.retiring.Done()
		<-pr.exited
		pr.release()
	}()
}

// workspace returns a warm interpreter's workspace: Options.Workspaces
// (the runner's: a tmpfs of the task's disk size), else a directory under
// TempDir.
func (t *Tool) workspace() (*sandbox.Workspace, error) {
	if t.opts.Workspaces != nil {
		return t.opts.Workspaces()
	}
	d, err := os.MkdirTemp(t.opts.TempDir, "noetl-py-warm-")
	if err != nil {
		return nil, err
	}
	return &sandbox.Workspace{Dir: d}, nil
}

// startWarm starts a warm interpreter under ctx (the pool's: its Close
// kills it) and returns once it has imported its modules and waits for
// its task. Nothing of any task is in it: no code, args, context or
// environment of one (its environment is the tool's fixed one, its
// workspace and network its own).
func (t *Tool) startWarm(ctx context.Context) (_ *warmPy, err error) {
	interp, err := t.Interpreter()
	if err != nil {
		return nil, err
	}
	sb, err := t.sandbox()
	if err != nil {
		return nil, err
	}
	ws, err := t.workspace()
	if err != nil {
		return nil, err
	}
	conns := &egress.TaskConns{}
	var cmd *sandbox.Cmd
	args := append([]string{"warm"}, warmModules...)
	if z := t.zygote(sb, interp); z != nil {
		cmd = z.Command(egress.WithConns(ctx, conns), args...)
		t.zyForked.Add(1)
		defer func() {
			if ctx.Err() == nil {
				t.zygoteStarted(z, err)
			}
		}()
	} else {
		cmd = sb.Command(egress.WithConns(ctx, conns), interp, append([]string{"-s", "-c", runnerSource}, args...)...)
	}
	cmd.Dir = ws.Dir
	cmd.ReadOnly = installPrefix(interp)
	cmd.Env = t.env(ws.Dir)
	var files []*os.File
	fail := func(err error) (*warmPy, error) {
		for _, f := range files {
			f.Close()
		}
		_ = ws.Close()
		return nil, err
	}
	pipe := func() (*os.File, *os.File) {
		if err != nil {
			return nil, nil
		}
		var r, w *os.File
		r, w, err = os.Pipe()
		files = append(files, r, w)
		return r, w
	}
	inR, inW := pipe()
	lr, lw := pipe()
	rr, rw := pipe()
	readyR, readyW := pipe()
	if err != nil {
		return fail(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, lw, lw
	cmd.ExtraFiles = []*os.File{rw, readyW}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	for _, f := range []*os.File{inR, lw, rw, readyW} {
		f.Close()
	}
	w := &warmPy{cmd: cmd, stdin: inW, res: rr, logs: lr, ws: ws, conns: conns, done: make(chan struct{})}
	go func() {
		w.waitErr = cmd.Wait()
		close(w.done)
	}()
	// Ready: one byte on fd 4 once the imports are done; EOF when the
	// interpreter died first.
	_ = readyR.SetReadDeadline(time.Now().Add(warmReadyTimeout))
	var b [1]byte
	_, rerr := io.ReadFull(readyR, b[:])
	readyR.Close()
	if rerr != nil || b[0] != 'R' {
		w.Destroy()
		return nil, fmt.Errorf("python: warm interpreter not ready: %v", rerr)
	}
	return w, nil
}

// takeWarm hands the attempt a warm interpreter: its network counts
// against the attempt's connection quota, and rctx's end kills it. ok is
// false when the pool has none (off, failing, or ctx ended first).
func (t *Tool) takeWarm(ctx, rctx context.Context) (*proc, bool) {
	p := t.pool()
	for {
		// Its replacement starts once the attempt has answered (Exec
		// calls proc.replace): not beside the task, on the CPU it needs.
		w, replace, ok := p.TakeDeferred(ctx)
		if !ok {
			return nil, false
		}
		if err := w.conns.Adopt(egress.ConnsFrom(ctx)); err != nil {
			go w.Destroy()
			replace()
			continue
		}
		stop := context.AfterFunc(rctx, func() { _ = w.cmd.Process.Kill() })
		return &proc{cmd: w.cmd, stdin: w.stdin, res: w.res, logs: w.logs, ws: w.ws, exited: w.done, replace: replace,
			wait: func() error {
				<-w.done
				return w.waitErr
			},
			release: func() {
				stop()
				w.Destroy()
			}}, true
	}
}
