// Package tools defines the contract between the worker and the task kinds
// (noop, http, python, postgres). Each kind lives in its own sub-package and
// implements Tool. A tool never retries and never sleeps: it runs one attempt
// and reports an Outcome; retry is task policy, decided by the worker
// (NoETL canonical v10 retry spec §5).
package tools

import (
	"context"

	"github.com/noetl/gcpengine/shared/types"
)

// Request is one attempt of one task, with every template already rendered.
type Request struct {
	ExecutionID string
	Step        string
	Task        string
	Attempt     int
	// Args are the rendered, merged args (step args under task args).
	Args map[string]any
	// Config is the rendered kind-specific configuration (url, method,
	// params, headers, body, code, libs, command, params, auth, connection...).
	Config map[string]any
	// TimeoutS is the attempt's timeout in seconds (0 = the tool's default).
	TimeoutS float64
	// Context is the execution context a task may read besides its args
	// (NoETL's python `context` global): execution_id, step, task,
	// workload, ctx, iter and input. Nil when the caller has none.
	Context map[string]any
	// Barrier is the attempt's side-effect barrier key (NoETL result storage RFC §4.4):
	// unique to (execution, unit, task position, attempt, page) and the
	// same on every re-run of that attempt; empty when the task is not
	// behind the barrier. A kind that can commit its side effect and the
	// key atomically (a BarrierExecutor: postgres, in one transaction)
	// makes the attempt exactly-once; other kinds ignore it.
	Barrier string
	// BarrierMAC is the key that authenticates Barrier's record (README "Security"
	// item 7): derived by the engine for this barrier alone
	// (sign.Signer.BarrierKey), never the signing key. The record lives
	// where user code can write (the postgres task's own database), so a
	// kind adopts a recorded result only when its MAC under this key
	// verifies. Set whenever Barrier is; a runner carries it with the
	// request and hands it to no user code.
	BarrierMAC []byte
	// Inputs are the result references ("$ref" maps, shared/results) the
	// attempt may read; the runner receives them with the request.
	Inputs []map[string]any
}

// BarrierExecutor is implemented by kinds that honour Request.Barrier:
// ExecBarrier commits the side effect together with a record of barrier
// authenticated with macKey (Request.BarrierMAC), and on a re-run of a
// recorded attempt returns the recorded result with
// Outcome.Extra["adopted"] = true instead of repeating the side effect —
// only when the record's MAC verifies: a forged record is ignored and the
// side effect runs.
type BarrierExecutor interface {
	ExecBarrier(ctx context.Context, args, config map[string]any, timeoutS float64, barrier string, macKey []byte) types.Outcome
}

// ContextExecutor is implemented by kinds that also read Request.Context
// (python's `context` global); Adapt calls ExecContext instead of Exec
// for them.
type ContextExecutor interface {
	ExecContext(ctx context.Context, args, config, taskCtx map[string]any, timeoutS float64) types.Outcome
}

// Tool runs one attempt. It returns an Outcome whose Status is "ok" or
// "error"; a Go error return is reserved for the worker's own failures (it
// is never used for a failing task). Meta is filled by the caller.
type Tool interface {
	Run(ctx context.Context, req Request) types.Outcome
}

// Registry maps a task kind to its tool.
type Registry map[string]Tool
