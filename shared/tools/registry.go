package tools

import (
	"context"

	"github.com/noetl/gcpengine/shared/types"
)

// Task kind names, as written in `kind:` (NoETL DSL spec "Tasks", README "Tool
// kinds"). The `playbook` and `workbook` kinds are run by the worker itself
// and are not registered by any plane's registry.
const (
	KindNoop         = "noop"
	KindHTTP         = "http"
	KindPython       = "python"
	KindPostgres     = "postgres"
	KindDuckDB       = "duckdb"
	KindTransfer     = "transfer"
	KindGCS          = "gcs"
	KindS3           = "s3"
	KindSecrets      = "secrets"
	KindNATS         = "nats"
	KindSubscription = "subscription"
	KindShell        = "shell"
	KindArtifact     = "artifact"
	KindResultFetch  = "result_fetch"
)

// Kinds lists every built-in kind, in the order above (kinds.Default
// registers them all).
var Kinds = []string{KindNoop, KindHTTP, KindPython, KindPostgres, KindDuckDB, KindTransfer, KindGCS, KindS3, KindSecrets,
	KindNATS, KindSubscription, KindShell, KindArtifact, KindResultFetch}

// ControlKinds are the kinds the control plane runs itself
// (shared/tools/controlkinds builds them, and only them): they run no
// author code and reach no endpoint but through the egress policy (http)
// or the engine's own stores (secrets, artifact).
var ControlKinds = []string{KindNoop, KindHTTP, KindSecrets, KindArtifact, KindResultFetch}

// RunnerKinds are the kinds that run author code or reach an endpoint the
// author chooses (a database, a bucket, a NATS or Pub/Sub server, a
// `script:` source): they run in the runner (runner/kinds, over the protocol of shared/runnerproto),
// never in the control plane (README "Architecture").
var RunnerKinds = []string{KindPython, KindPostgres, KindDuckDB, KindTransfer, KindGCS, KindS3, KindNATS, KindSubscription, KindShell}

// This package imports no kind: each plane builds its own registry
// (shared/tools/controlkinds in the functions, runner/kinds in the
// runner), so that the functions' build links no author-code kind (the
// boundary test, shared/planes).

// Executor is what a kind package implements: one attempt over the
// rendered args and kind configuration, with the attempt timeout in seconds
// (0 = the kind's default). The kind packages cannot implement Tool
// themselves (they would import this package, and the registries import
// them); Adapt bridges the two.
type Executor interface {
	Exec(ctx context.Context, args, config map[string]any, timeoutS float64) types.Outcome
}

// Adapt returns a Tool that runs e with the request's Args, Config and
// TimeoutS (and Context when e is a ContextExecutor, Barrier when e is a
// BarrierExecutor and the request has one).
func Adapt(e Executor) Tool { return adapter{e} }

type adapter struct{ e Executor }

// Run implements Tool (ExecContext for a ContextExecutor).
func (a adapter) Run(ctx context.Context, req Request) types.Outcome {
	if be, ok := a.e.(BarrierExecutor); ok && req.Barrier != "" {
		return be.ExecBarrier(ctx, req.Args, req.Config, req.TimeoutS, req.Barrier, req.BarrierMAC)
	}
	if ce, ok := a.e.(ContextExecutor); ok {
		return ce.ExecContext(ctx, req.Args, req.Config, req.Context, req.TimeoutS)
	}
	return a.e.Exec(ctx, req.Args, req.Config, req.TimeoutS)
}
