package tools

import (
	"context"

	httptool "github.com/noetl/gcpengine/shared/tools/http"
	"github.com/noetl/gcpengine/shared/tools/noop"
	"github.com/noetl/gcpengine/shared/tools/postgres"
	"github.com/noetl/gcpengine/shared/tools/python"
	"github.com/noetl/gcpengine/shared/types"
)

// Task kind names, as written in `kind:` (DSL.md "Tasks"). The `playbook`
// and `workbook` kinds are run by the worker itself and are not registered
// by Default.
const (
	KindNoop     = "noop"
	KindHTTP     = "http"
	KindPython   = "python"
	KindPostgres = "postgres"
)

// Executor is what a kind package implements: one attempt over the
// rendered args and kind configuration, with the attempt timeout in seconds
// (0 = the kind's default). The kind packages cannot implement Tool
// themselves (they would import this package, and Default imports them);
// Adapt bridges the two.
type Executor interface {
	Exec(ctx context.Context, args, config map[string]any, timeoutS float64) types.Outcome
}

// Adapt returns a Tool that runs e with the request's Args, Config and
// TimeoutS.
func Adapt(e Executor) Tool { return adapter{e} }

type adapter struct{ e Executor }

// Run implements Tool.
func (a adapter) Run(ctx context.Context, req Request) types.Outcome {
	return a.e.Exec(ctx, req.Args, req.Config, req.TimeoutS)
}

// DefaultOptions configures the built-in kinds; the zero value gives every
// kind its package defaults.
type DefaultOptions struct {
	// PythonBin is the python interpreter (a name on PATH or a path), e.g.
	// the NOETL_PYTHON setting; it overrides Python.Interpreter when set.
	// Default "python3".
	PythonBin string
	// HTTP configures the http kind (client, body limit, default timeout).
	HTTP httptool.Options
	// Python configures the python kind (interpreter, timeout, log cap).
	Python python.Options
	// Postgres configures the postgres kind (pool cache bounds, timeout).
	Postgres postgres.Options
}

// Default returns a registry with the noop, http, python and postgres kinds
// and a close function that releases their resources (the postgres
// connection pools). Call close once, after the last Run has returned.
func Default(opts DefaultOptions) (Registry, func()) {
	if opts.PythonBin != "" {
		opts.Python.Interpreter = opts.PythonBin
	}
	pg := postgres.New(opts.Postgres)
	reg := Registry{
		KindNoop:     Adapt(noop.New()),
		KindHTTP:     Adapt(httptool.New(opts.HTTP)),
		KindPython:   Adapt(python.New(opts.Python)),
		KindPostgres: Adapt(pg),
	}
	return reg, pg.Close
}
