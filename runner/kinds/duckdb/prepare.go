//go:build cgo

package duckdb

// A warm worker's prepared database. Opening a DuckDB database is most of
// a small task's cost (the instance, its buffer manager and catalog, the
// settings and the configuration lock: several milliseconds). A warm
// worker knows, before any task, everything its in-memory database is
// made of: its own workspace (the spill directory and the allowed
// directories) and the tool's options. So the pool's start sends it a
// prepare line first; the worker opens a fresh in-memory database
// configured exactly as the task's would be (settings, then
// lock_configuration) and connects to it, and only then says it is ready.
// The task whose request matches (the in-memory database, the same
// workspace and options) runs on that connection; any other request
// closes it and opens its own, as a cold worker does. The database serves
// one task: nothing ran in it before, and the worker exits after the task
// (a warm sandbox is never reused).

import (
	"context"
	"database/sql"
	"slices"

	"github.com/noetl/gcpengine/runner/sandbox"
)

// opPrepare is the first line the pool sends a warm worker: its
// workspace and options, before any task.
const opPrepare = "prepare"

// prepared is a warm worker's in-memory database, opened and configured
// for scope sc before its task arrived (Tool.prepare).
type prepared struct {
	sc   scope
	db   *sql.DB
	conn *sql.Conn
}

// workerOptions are the options of the tool's workers.
func (t *Tool) workerOptions() workerOptions {
	return workerOptions{MemoryLimit: t.opts.MemoryLimit, MaxTempBytes: t.opts.MaxTempBytes, DataRoots: t.opts.DataRoots,
		Threads: t.opts.Threads, MaxRows: t.opts.MaxRows, TimeoutMS: t.opts.DefaultTimeout.Milliseconds()}
}

// prepare opens the in-memory database a task confined to workspace
// would open (the worker's; t was made from the prepare line's options)
// and keeps it for that task (takePrepared). A failure is ignored: the
// task opens its own and reports the failure then.
func (t *Tool) prepare(workspace string) {
	ctx := sandbox.WithWorkspace(context.Background(), &sandbox.Workspace{Dir: workspace})
	sc, err := t.scopeOf(ctx)
	if err != nil {
		return
	}
	dsn, err := t.dsn("", false)
	if err != nil {
		return
	}
	c, err := t.connector(dsn, sc)
	if err != nil {
		return
	}
	db := sql.OpenDB(c)
	conn, err := db.Conn(ctx) // runs the settings and locks them
	if err != nil {
		_ = db.Close()
		return
	}
	t.mu.Lock()
	t.pre = &prepared{sc: sc, db: db, conn: conn}
	t.mu.Unlock()
}

// takePrepared hands out the prepared database once, when it was made
// for scope sc; nil otherwise (the caller opens its own). The database
// stays open until the tool closes (the worker's end, after it answered).
func (t *Tool) takePrepared(sc scope) *sql.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pre
	if p == nil || p.conn == nil || !sameScope(p.sc, sc) {
		return nil
	}
	c := p.conn
	p.conn = nil
	t.spent = append(t.spent, p)
	return c
}

// sameScope reports whether a and b configure a database alike.
func sameScope(a, b scope) bool {
	return a.base == b.base && a.temp == b.temp && a.confined == b.confined && a.shared == b.shared && slices.Equal(a.allowed, b.allowed)
}

// closePrepared closes the prepared database and the ones handed out
// (Close).
func (t *Tool) closePrepared() {
	t.mu.Lock()
	ps := append(t.spent, t.pre)
	t.pre, t.spent = nil, nil
	t.mu.Unlock()
	for _, p := range ps {
		if p == nil {
			continue
		}
		if p.conn != nil {
			_ = p.conn.Close()
		}
		_ = p.db.Close()
	}
}
