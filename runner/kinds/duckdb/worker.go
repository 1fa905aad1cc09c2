//go:build cgo

package duckdb

// The duckdb worker: with Options.Sandbox set (the runner), no author SQL
// runs in the caller's process. Each task — Exec, and the transfer kind's
// QueryRows and OpenWriter — starts a worker of its own: the sandbox's
// helper (the engine's executable) prepares the task's room as for a
// python task's interpreter (its own uid, control group with the task's
// memory, CPU and process limits, a root with nothing of the host but the
// system, its workspace and the data roots, an empty network namespace:
// DuckDB reaches no network; the seccomp filter), then serves as the
// worker instead of exec'ing a program (sandbox.ServeProgram: one exec of
// the engine's large executable saved). A query that blows up the
// worker's memory is killed by its control group alone (kind "limit");
// the runner and every other task go on.
//
// The protocol is JSON lines: one request on the worker's stdin (then,
// for a writer, one line per batch of rows and a commit), and messages on
// its descriptor 3. A query whose rows go to the results tier streams
// them as one Arrow IPC stream on descriptor 3 right after a "begin"
// message; the caller feeds the batches to its sink (the tier through the
// result grants), so the grants never enter the worker and the table is
// never held whole on either side.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	duckdbdriver "github.com/duckdb/duckdb-go/v2"

	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// workerProgram is the in-process program of the engine's executable
// that is the duckdb worker (sandbox.ServeProgram, before main runs).
const workerProgram = "duckdb-worker"

func init() {
	sandbox.ServeProgram(workerProgram, func() int { return serveWorker(os.Stdin, os.NewFile(3, "duckdb-worker-out")) })
}

// Worker operations.
const (
	opExec  = "exec"  // one task (Exec)
	opQuery = "query" // QueryRows
	opWrite = "write" // OpenWriter, then rows and a commit
)

// Message kinds (worker → caller).
const (
	msgReady   = "ready"   // the worker's room is set up: it waits for its request
	msgBegin   = "begin"   // an Arrow IPC stream of the result's rows follows
	msgOutcome = "outcome" // opExec's end
	msgRows    = "rows"    // a batch of QueryRows
	msgDone    = "done"    // QueryRows ended
	msgOK      = "ok"      // the writer's last step succeeded
	msgFailure = "failure" // opQuery/opWrite failed (classified)
)

// maxLine bounds one protocol line (a request's config, a batch of rows).
const maxLine = 256 << 20

// killGrace is how long after the task's deadline the worker is killed:
// it interrupts its query at the deadline itself and reports "timeout".
const killGrace = 2 * time.Second

// workerRequest is the worker's one request.
type workerRequest struct {
	Op        string        `json:"op"`
	Workspace string        `json:"workspace"`
	Options   workerOptions `json:"options"`
	// opExec
	Spec     *toolspec.DuckDB `json:"spec,omitempty"`
	TimeoutS float64          `json:"timeout_s,omitempty"`
	Stream   bool             `json:"stream,omitempty"` // the caller has a sink
	// opQuery, opWrite
	Database string    `json:"database,omitempty"`
	Query    string    `json:"query,omitempty"`
	Params   any       `json:"params,omitempty"`
	Batch    int       `json:"batch,omitempty"`
	Table    string    `json:"table,omitempty"`
	Cols     []string  `json:"cols,omitempty"`
	Mode     WriteMode `json:"mode,omitempty"`
}

// workerOptions are the Options the worker's own tool gets.
type workerOptions struct {
	MemoryLimit  string   `json:"memory_limit,omitempty"`
	MaxTempBytes int64    `json:"max_temp_bytes,omitempty"`
	DataRoots    []string `json:"data_roots,omitempty"`
	Threads      int      `json:"threads,omitempty"`
	MaxRows      int      `json:"max_rows,omitempty"`
	TimeoutMS    int64    `json:"timeout_ms,omitempty"`
}

// workerMessage is one line from the worker.
type workerMessage struct {
	Kind    string             `json:"kind"`
	Begin   *results.TableMeta `json:"begin,omitempty"`
	Outcome *types.Outcome     `json:"outcome,omitempty"`
	// Streamed: the outcome's result is the table streamed after begin.
	Streamed bool     `json:"streamed,omitempty"`
	Cols     []string `json:"cols,omitempty"`
	Rows     [][]any  `json:"rows,omitempty"`
}

// writeCommand is one line to a writer worker.
type writeCommand struct {
	Rows   [][]any `json:"rows,omitempty"`
	Commit bool    `json:"commit,omitempty"`
}

// tableSink is where a query's rows stream: the results tier's sink
// (*results.Sink) in the caller, a pipe to the caller in the worker.
type tableSink interface {
	Begin(schema *arrow.Schema, m results.TableMeta) error
	Write(rec arrow.RecordBatch) error
	End() (any, error)
	Abort()
}

type sinkKey struct{}

// withTableSink returns ctx whose table results go to the sinks f makes.
func withTableSink(ctx context.Context, f func() tableSink) context.Context {
	return context.WithValue(ctx, sinkKey{}, f)
}

// sinkFrom returns the sink of a task's table result: the worker's pipe,
// else the results tier's (results.SinkFrom), else nil.
func sinkFrom(ctx context.Context) tableSink {
	if f, ok := ctx.Value(sinkKey{}).(func() tableSink); ok {
		return f()
	}
	if s, ok := results.SinkFrom(ctx); ok && s != nil {
		return s
	}
	return nil
}

// streamedResult is the worker's result of a table that went down the
// pipe (the caller's sink gives the real one).
type streamedResult struct{}

// pipeSink is the worker's sink: the table as an Arrow IPC stream on the
// worker's output, after a begin message.
type pipeSink struct {
	out  *bufio.Writer
	send func(workerMessage) error
	w    *ipc.Writer
}

func (p *pipeSink) Begin(schema *arrow.Schema, m results.TableMeta) error {
	if err := p.send(workerMessage{Kind: msgBegin, Begin: &m}); err != nil {
		return err
	}
	p.w = ipc.NewWriter(p.out, ipc.WithSchema(schema))
	return nil
}

func (p *pipeSink) Write(rec arrow.RecordBatch) error { return p.w.Write(rec) }

func (p *pipeSink) End() (any, error) {
	err := p.w.Close()
	p.w = nil
	if err == nil {
		err = p.out.Flush()
	}
	return streamedResult{}, err
}

func (p *pipeSink) Abort() {
	if p.w != nil {
		_ = p.w.Close()
		_ = p.out.Flush()
		p.w = nil
	}
}

// readLine reads one protocol line (without its newline).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("duckdb worker: a protocol line exceeds %d bytes", maxLine)
		}
		if err == nil {
			return line[:len(line)-1], nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// serveWorker is the worker: it serves one request and returns its exit
// status.
func serveWorker(in io.Reader, outF *os.File) int {
	out := bufio.NewWriterSize(outF, 64<<10)
	send := func(m workerMessage) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if _, err := out.Write(b); err != nil {
			return err
		}
		return out.Flush()
	}
	fail := func(o types.Outcome) int {
		if err := send(workerMessage{Kind: msgFailure, Outcome: &o}); err != nil {
			return 1
		}
		return 0
	}
	// Database files in a data root are shared by the tasks of every
	// uid (the data roots' contract): a file one task's worker creates
	// stays writable by the next one's.
	syscall.Umask(0)
	br := bufio.NewReaderSize(in, 64<<10)
	read := func() (workerRequest, bool) {
		var req workerRequest
		line, err := readLine(br)
		if err != nil {
			fmt.Fprintf(os.Stderr, "duckdb worker: read the request: %v\n", err)
			return req, false
		}
		if err := jsonx.Unmarshal(line, &req); err != nil {
			fmt.Fprintf(os.Stderr, "duckdb worker: bad request: %v\n", err)
			return req, false
		}
		return req, true
	}
	// A warm worker's first line prepares its database (prepare.go); a
	// cold worker's is its request, which it reads before it says it is
	// ready (its caller does not wait for that to send it).
	req, okReq := read()
	if !okReq {
		return 2
	}
	var tl *Tool
	if req.Op == opPrepare {
		tl = workerTool(req)
		tl.prepare(req.Workspace)
	} else {
		warmUp()
	}
	// Ready: the room is set up (the helper ran before this) and the
	// runtime is up; a warm worker is handed out only after this line.
	if err := send(workerMessage{Kind: msgReady}); err != nil {
		return 1
	}
	if req.Op == opPrepare {
		prep := req
		if req, okReq = read(); !okReq {
			tl.Close()
			return 2
		}
		if req.Workspace != prep.Workspace || !reflect.DeepEqual(req.Options, prep.Options) {
			tl.Close() // prepared for another task than this one: start afresh
			tl = nil
		}
	}
	if tl == nil {
		tl = workerTool(req)
	}
	defer tl.Close()
	ctx := sandbox.WithWorkspace(context.Background(), &sandbox.Workspace{Dir: req.Workspace})
	switch req.Op {
	case opExec:
		if req.Stream {
			ctx = withTableSink(ctx, func() tableSink { return &pipeSink{out: out, send: send} })
		}
		if req.Spec == nil {
			fmt.Fprintln(os.Stderr, "duckdb worker: an exec request without its task")
			return 2
		}
		o := tl.execSpec(ctx, *req.Spec, req.TimeoutS)
		_, streamed := o.Result.(streamedResult)
		if streamed {
			o.Result = nil
		}
		if err := send(workerMessage{Kind: msgOutcome, Outcome: &o, Streamed: streamed}); err != nil {
			return 1
		}
	case opQuery:
		err := tl.QueryRows(ctx, req.Database, req.Query, req.Params, req.Batch, func(cols []string, rows [][]any) error {
			return send(workerMessage{Kind: msgRows, Cols: cols, Rows: rows})
		})
		if err != nil {
			return fail(tl.Failure(ctx, ctx, err))
		}
		if err := send(workerMessage{Kind: msgDone}); err != nil {
			return 1
		}
	case opWrite:
		w, err := tl.OpenWriter(ctx, req.Database, req.Table, req.Cols, req.Mode)
		if err != nil {
			return fail(tl.Failure(ctx, ctx, err))
		}
		defer w.Close()
		if err := send(workerMessage{Kind: msgOK}); err != nil {
			return 1
		}
		for {
			line, err := readLine(br)
			if err != nil {
				return 0 // the caller gave up: roll back
			}
			var c writeCommand
			if err := jsonx.Unmarshal(line, &c); err != nil {
				fmt.Fprintf(os.Stderr, "duckdb worker: bad command: %v\n", err)
				return 2
			}
			if c.Commit {
				if err := w.Commit(); err != nil {
					return fail(tl.Failure(ctx, ctx, err))
				}
				if err := send(workerMessage{Kind: msgOK}); err != nil {
					return 1
				}
				return 0
			}
			if err := w.Write(ctx, c.Rows); err != nil {
				return fail(tl.Failure(ctx, ctx, err))
			}
			if err := send(workerMessage{Kind: msgOK}); err != nil {
				return 1
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "duckdb worker: unknown operation %q\n", req.Op)
		return 2
	}
	return 0
}

// workerTool is the worker's own tool, made from its request's options.
func workerTool(req workerRequest) *Tool {
	return New(Options{BaseDir: req.Workspace, TempDir: req.Workspace, MemoryLimit: req.Options.MemoryLimit, MaxTempBytes: req.Options.MaxTempBytes,
		DataRoots: req.Options.DataRoots, Threads: req.Options.Threads, MaxRows: req.Options.MaxRows,
		DefaultTimeout: time.Duration(req.Options.TimeoutMS) * time.Millisecond})
}

// warmUp runs DuckDB's one-time initialisation in the worker (a
// throwaway in-memory database and one constant query) before the worker
// says it is ready, so that a warm worker's task does not pay it. No task
// input is involved; a failure is ignored (the task's own open reports).
func warmUp() {
	c, err := duckdbdriver.NewConnector("", nil)
	if err != nil {
		return
	}
	db := sql.OpenDB(c)
	_, _ = db.Exec("SELECT 1")
	_ = db.Close()
	_ = c.Close()
}

// remoteFailure is a failure the worker classified (QueryRows,
// OpenWriter, Writer), or its death.
type remoteFailure struct {
	o types.Outcome
	w *worker // the worker, for a death's classification (nil: reported)
}

func (e *remoteFailure) Error() string {
	if e.o.Error != nil {
		return e.o.Error.Message
	}
	return "duckdb worker failed"
}

// worker is the caller's side of one worker process.
type worker struct {
	t      *Tool
	cmd    *sandbox.Cmd
	in     *os.File      // the worker's stdin
	outF   *os.File      // its descriptor 3
	out    *bufio.Reader // over outF
	dir    string        // its working directory (the task's workspace)
	stderr *tailBuf
	errCh  chan struct{} // stderr copied
	remove func()        // releases dir
	ws     *sandbox.Workspace
	// stopWatch stops killing the worker when the task's context ends
	// (a warm worker's).
	stopWatch func() bool
	// ready: its ready message was read (awaitReady).
	ready bool
	// warm: started by the pool in a room and workspace of its own
	// (nothing of the task's request context outlives the task with it).
	warm bool
	// born: when a warm worker said it was ready (warm.go: its age).
	born time.Time
	// refill starts the pool's replacement of a warm worker handed out
	// without one (nil: none due); replaced calls it once.
	refill     func()
	refillOnce sync.Once

	once    sync.Once
	waitErr error
}

// startWorker gives req to a worker in the tool's sandbox whose end ctx
// ends: a warm one (Options.Warm) when one is ready, else one started now
// in the task's workspace.
func (t *Tool) startWorker(ctx context.Context, req workerRequest) (*worker, error) {
	req.Options = t.workerOptions()
	if w := t.warmPool().take(ctx); w != nil {
		// Its room was made for no task in particular: its own workspace
		// is the task's, and the task's end kills it.
		req.Workspace = w.dir
		w.stopWatch = context.AfterFunc(ctx, w.kill)
		if err := w.send(req); err == nil {
			return w, nil
		}
		w.close() // it died waiting: start one now
	}
	dir, remove, err := sandbox.TaskDir(ctx, t.opts.TempDir, "noetl-duckdb-")
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	w, err := t.launch(ctx, dir, sandbox.WorkspaceFrom(ctx), remove)
	if err != nil {
		return nil, err
	}
	req.Workspace = dir
	_ = w.send(req) // a worker that died before reading: close says why
	return w, nil
}

// launch starts a worker process in a room of the sandbox, working in
// dir (ws: its workspace, for the disk limit; remove: what releases dir),
// under ctx. It waits for its request.
func (t *Tool) launch(ctx context.Context, dir string, ws *sandbox.Workspace, remove func()) (*worker, error) {
	cmd := t.opts.Sandbox.Program(ctx, workerProgram)
	cmd.Dir = dir
	cmd.NoNetwork = true
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8"}
	w := &worker{t: t, cmd: cmd, dir: dir, stderr: &tailBuf{max: 8 << 10}, errCh: make(chan struct{}), remove: remove, ws: ws, stopWatch: func() bool { return false }}
	var files []*os.File
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	fail := func(err error) (*worker, error) {
		for _, f := range files {
			f.Close()
		}
		remove()
		return nil, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return fail(err)
	}
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := pipe()
	if err != nil {
		return fail(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, errW, errW
	cmd.ExtraFiles = []*os.File{outW}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	w.in, w.outF, w.out = inW, outR, bufio.NewReaderSize(outR, 64<<10)
	go func() {
		_, _ = io.Copy(w.stderr, errR)
		errR.Close()
		close(w.errCh)
	}()
	return w, nil
}

// kill ends the worker's room at once (its process is the init of its
// PID namespace: everything in it dies with it).
func (w *worker) kill() {
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
}

// warmPool keeps Options.Warm workers started ahead of demand, each in a
// room of its own with a workspace of its own (Options.Workspaces),
// waiting for one request; a worker is never given a second task. A task
// that finds none ready waits for one being started (one more is started
// for every task waiting), rather than starting a room of its own beside
// the pool's.
type warmPool struct {
	t      *Tool
	size   int
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan *worker // started workers (nil: a start failed)

	mu       sync.Mutex
	starting int
	waiting  int
	closed   bool
}

// warmPool returns the tool's pool (nil without Options.Warm), started on
// first use.
func (t *Tool) warmPool() *warmPool {
	if t.opts.Warm <= 0 || t.opts.Workspaces == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pool == nil && !t.closed {
		ctx, cancel := context.WithCancel(context.Background())
		t.pool = &warmPool{t: t, size: t.opts.Warm, ctx: ctx, cancel: cancel, ready: make(chan *worker, 64+t.opts.Warm)}
		go t.pool.janitor()
	}
	return t.pool
}

// take returns a ready worker, waiting for one being started; nil when
// a start failed or ctx ended (the caller starts its own).
func (p *warmPool) take(ctx context.Context) *worker {
	if p == nil {
		return nil
	}
	for {
		select {
		case w := <-p.ready:
			if p.stale(w) {
				continue
			}
			// Its replacement starts once the task has answered
			// (worker.replaced): not beside the task, on the CPU it needs.
			if w != nil {
				w.refill = p.fill
			} else {
				p.fill()
			}
			return w
		default:
		}
		break
	}
	p.mu.Lock()
	p.waiting++
	p.mu.Unlock()
	p.fill()
	defer func() {
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
	}()
	for {
		select {
		case w := <-p.ready:
			if p.stale(w) {
				continue
			}
			return w
		case <-ctx.Done():
			return nil
		case <-p.ctx.Done():
			return nil
		}
	}
}

// fill starts workers until size of them are ready or starting beyond
// the tasks waiting.
func (p *warmPool) fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && len(p.ready)+p.starting < p.size+p.waiting && len(p.ready)+p.starting < cap(p.ready) {
		p.starting++
		go p.start()
	}
}

func (p *warmPool) start() {
	var w *worker
	ws, err := p.t.opts.Workspaces()
	if err == nil {
		w, err = p.t.launch(p.ctx, ws.Dir, ws, func() { _ = ws.Close() })
	}
	if err == nil {
		// Handed out only once its room is set up, its database open
		// (prepare.go) and it waits: a task that takes it pays neither the
		// exec, the room's set-up nor opening its in-memory database.
		err = w.send(workerRequest{Op: opPrepare, Workspace: ws.Dir, Options: p.t.workerOptions()})
		if err == nil {
			err = w.awaitReady()
		}
		if err != nil {
			w.close()
			w = nil
		} else {
			w.warm, w.born = true, time.Now()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starting--
	if p.closed {
		if w != nil {
			go w.close()
		}
		return
	}
	p.ready <- w // nil when the start failed: a waiting task starts its own
}

// close kills the ready workers and releases their rooms.
func (p *warmPool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	for {
		select {
		case w := <-p.ready:
			if w != nil {
				w.close()
			}
		default:
			return
		}
	}
}

// send writes one JSON line to the worker.
func (w *worker) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.in.Write(append(b, '\n'))
	return err
}

// recv reads one message from the worker (past its ready message, the
// first it sends, when awaitReady did not read it).
func (w *worker) recv() (workerMessage, error) {
	if !w.ready {
		if err := w.awaitReady(); err != nil {
			return workerMessage{}, err
		}
	}
	return w.read()
}

// read reads one protocol message.
func (w *worker) read() (workerMessage, error) {
	var m workerMessage
	line, err := readLine(w.out)
	if err != nil {
		return m, err
	}
	if err := jsonx.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("duckdb worker: bad message: %w", err)
	}
	return m, nil
}

// awaitReady reads the worker's first message, which says its room is
// set up and it waits for its request.
func (w *worker) awaitReady() error {
	m, err := w.read()
	if err != nil {
		return err
	}
	if m.Kind != msgReady {
		return fmt.Errorf("duckdb worker: %q before ready", m.Kind)
	}
	w.ready = true
	return nil
}

// close ends the worker (stdin closed: it finishes or rolls back, and
// exits; killed after a grace period) and releases its room.
func (w *worker) close() error {
	w.replaced()
	w.once.Do(func() {
		w.stopWatch()
		_ = w.in.Close()
		done := make(chan error, 1)
		go func() { done <- w.cmd.Wait() }()
		select {
		case w.waitErr = <-done:
		case <-time.After(5 * time.Second):
			_ = w.cmd.Process.Kill()
			w.waitErr = <-done
		}
		w.outF.Close()
		select {
		case <-w.errCh:
		case <-time.After(time.Second):
		}
		w.remove()
	})
	return w.waitErr
}

// died classifies a worker that ended without its message: cancelled,
// past its deadline, killed at a limit of its room, or crashed.
func (w *worker) died(parent, wctx context.Context) types.Outcome {
	waitErr := w.close()
	switch {
	case errors.Is(parent.Err(), context.Canceled):
		return conf.Fail(types.ErrKindCanceled, true, "duckdb task canceled: %v", context.Cause(parent))
	case wctx.Err() != nil:
		return conf.Fail(types.ErrKindTimeout, true, "duckdb task timeout: the worker was killed at the deadline")
	}
	limit := w.cmd.LimitHit()
	if limit == "" && w.ws.Full() {
		limit = "disk"
	}
	if limit != "" {
		return conf.Fail(types.ErrKindLimit, false, "duckdb task: limit %s reached: the task's worker was killed", w.t.opts.Sandbox.DescribeLimit(limit))
	}
	msg := "duckdb task: the worker exited without reporting"
	if waitErr != nil {
		msg += " (" + waitErr.Error() + ")"
	}
	if l := lastLine(w.stderr.String()); l != "" {
		msg += ": " + l
	}
	return conf.Fail(types.ErrKindDuckDB, false, "%s", msg)
}

// execInWorker is Exec in a worker (Options.Sandbox).
func (t *Tool) execInWorker(ctx context.Context, cfg toolspec.DuckDB, q task, timeoutS float64) types.Outcome {
	timeout := t.timeout(timeoutS)
	var sink *results.Sink
	if !q.asArrays {
		if s, ok := results.SinkFrom(ctx); ok {
			sink = s
		}
	}
	wctx, cancel := context.WithTimeout(ctx, timeout+killGrace)
	defer cancel()
	w, err := t.startWorker(wctx, workerRequest{Op: opExec, Spec: &cfg, TimeoutS: timeout.Seconds(), Stream: sink != nil})
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			return conf.Fail(types.ErrKindCanceled, true, "duckdb task canceled before start: %v", context.Cause(ctx))
		case wctx.Err() != nil:
			return conf.Fail(types.ErrKindTimeout, true, "duckdb task timeout: deadline passed before start")
		}
		return conf.Fail(types.ErrKindInternal, true, "duckdb task: cannot start the worker: %v", err)
	}
	answered := false
	defer func() {
		if answered {
			t.closeAfter(w)
		} else {
			w.close()
		}
	}()
	begun := false
	for {
		m, err := w.recv()
		if err != nil {
			if begun {
				sink.Abort()
			}
			return w.died(ctx, wctx)
		}
		switch m.Kind {
		case msgBegin:
			if sink == nil || begun || m.Begin == nil {
				return conf.Fail(types.ErrKindInternal, false, "duckdb task: the worker streamed a table nobody asked for")
			}
			begun = true
			if err := w.pipeTable(sink, *m.Begin); err != nil {
				sink.Abort()
				_ = w.cmd.Process.Kill()
				if o := w.died(ctx, wctx); o.Error.Kind != types.ErrKindDuckDB {
					return o // the worker's death (limit, timeout) is the cause
				}
				return t.failure(ctx, wctx, err)
			}
		case msgOutcome:
			if m.Outcome == nil {
				return conf.Fail(types.ErrKindInternal, false, "duckdb task: the worker sent an empty outcome")
			}
			o := *m.Outcome
			switch {
			case m.Streamed && begun:
				v, err := sink.End()
				if err != nil {
					return t.failure(ctx, wctx, err)
				}
				o.Result = v
			case begun:
				sink.Abort()
			}
			answered = true
			return o
		default:
			return conf.Fail(types.ErrKindInternal, false, "duckdb task: unexpected worker message %q", m.Kind)
		}
	}
}

// replaced starts the pool's replacement of a warm worker once its task
// has its outcome or it is closed (warmPool.take; idempotent).
func (w *worker) replaced() {
	w.refillOnce.Do(func() {
		if w.refill != nil {
			w.refill()
		}
	})
}

// closeAfter ends a worker whose task has its outcome. A warm worker's
// room and workspace are its own and serve no other task: they are torn
// down (its exit, control group, uid slot, workspace) after the task's
// answer rather than before it; the task's context no longer kills it,
// its stdin closes at once (it exits; killed after close's grace period)
// and Close waits for every one. A worker in the task's own workspace
// is closed before the answer, as before.
func (t *Tool) closeAfter(w *worker) {
	if !w.warm {
		_ = w.close()
		return
	}
	w.replaced()
	w.stopWatch()
	_ = w.in.Close()
	t.retiring.Add(1)
	go func() {
		defer t.retiring.Done()
		_ = w.close()
	}()
}

// pipeTable feeds the Arrow IPC stream that follows a begin message to
// sink, batch by batch.
func (w *worker) pipeTable(sink *results.Sink, meta results.TableMeta) error {
	rdr, err := ipc.NewReader(w.out)
	if err != nil {
		return fmt.Errorf("read the worker's table: %w", err)
	}
	defer rdr.Release()
	if err := sink.Begin(rdr.Schema(), meta); err != nil {
		return err
	}
	for rdr.Next() {
		if err := sink.Write(rdr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rdr.Err(); err != nil {
		return fmt.Errorf("read the worker's table: %w", err)
	}
	return nil
}

// workerFailure classifies a failure of QueryRows or a Writer in a
// worker: the caller's context first (cancelled, past its deadline),
// then the worker's own classification or its death.
func (t *Tool) workerFailure(parent, rctx context.Context, rf *remoteFailure) types.Outcome {
	switch {
	case errors.Is(parent.Err(), context.Canceled):
		return conf.Fail(types.ErrKindCanceled, true, "duckdb task canceled: %v", context.Cause(parent))
	case rctx.Err() != nil:
		return conf.Fail(types.ErrKindTimeout, true, "duckdb task timeout: %v", rf)
	}
	return rf.o
}

// startFailure wraps an error starting a worker for QueryRows or
// OpenWriter.
func startFailure(err error) error {
	return &remoteFailure{o: conf.Fail(types.ErrKindInternal, true, "duckdb task: cannot start the worker: %v", err)}
}

// queryInWorker is QueryRows in a worker.
func (t *Tool) queryInWorker(ctx context.Context, database, query string, params any, batch int, fn func(cols []string, rows [][]any) error) error {
	w, err := t.startWorker(ctx, workerRequest{Op: opQuery, Database: database, Query: query, Params: params, Batch: batch})
	if err != nil {
		return startFailure(err)
	}
	defer w.close()
	for {
		m, err := w.recv()
		if err != nil {
			return &remoteFailure{o: w.died(ctx, ctx)}
		}
		switch m.Kind {
		case msgRows:
			if err := fn(m.Cols, m.Rows); err != nil {
				return err
			}
		case msgDone:
			return nil
		case msgFailure:
			if m.Outcome == nil {
				return &remoteFailure{o: conf.Fail(types.ErrKindInternal, false, "duckdb task: the worker sent an empty failure")}
			}
			return &remoteFailure{o: *m.Outcome}
		default:
			return &remoteFailure{o: conf.Fail(types.ErrKindInternal, false, "duckdb task: unexpected worker message %q", m.Kind)}
		}
	}
}

// writerWorker is a Writer's worker and the context it runs under.
type writerWorker struct {
	*worker
	ctx context.Context
}

// openWriterInWorker is OpenWriter in a worker: the worker holds the
// transaction until commit, or rolls back when the caller closes it.
func (t *Tool) openWriterInWorker(ctx context.Context, database, table string, cols []string, mode WriteMode) (*Writer, error) {
	w, err := t.startWorker(ctx, workerRequest{Op: opWrite, Database: database, Table: table, Cols: cols, Mode: mode})
	if err != nil {
		return nil, startFailure(err)
	}
	ww := &writerWorker{worker: w, ctx: ctx}
	if err := ww.await(); err != nil {
		w.close()
		return nil, err
	}
	return &Writer{remote: ww}, nil
}

// await reads the worker's answer to the last step.
func (w *writerWorker) await() error {
	m, err := w.recv()
	if err != nil {
		return &remoteFailure{o: w.died(w.ctx, w.ctx)}
	}
	switch m.Kind {
	case msgOK:
		return nil
	case msgFailure:
		if m.Outcome != nil {
			return &remoteFailure{o: *m.Outcome}
		}
	}
	return &remoteFailure{o: conf.Fail(types.ErrKindInternal, false, "duckdb task: unexpected worker message %q", m.Kind)}
}

func (w *writerWorker) writeRows(rows [][]any) error {
	if err := w.send(writeCommand{Rows: rows}); err != nil {
		return &remoteFailure{o: w.died(w.ctx, w.ctx)}
	}
	return w.await()
}

func (w *writerWorker) commit() error {
	if err := w.send(writeCommand{Commit: true}); err != nil {
		return &remoteFailure{o: w.died(w.ctx, w.ctx)}
	}
	return w.await()
}

func (w *writerWorker) close() { _ = w.worker.close() }

// tailBuf keeps the last max bytes written to it.
type tailBuf struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ToValidUTF8(string(b.buf), "\uFFFD")
}

// lastLine is the last non-empty line of s (at most 300 bytes).
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
