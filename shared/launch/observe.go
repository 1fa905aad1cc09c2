package launch

import (
	"context"
	"log/slog"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/telemetry"
)

// executionContext returns ctx whose parent span is the root span of the
// execution of s (telemetry.Execution: trace id derived from the
// execution id; sampled when the workload says trace: true, when the
// caller's traceparent is sampled, or by the configured ratio).
func executionContext(ctx context.Context, s *engine.State) context.Context {
	return execution(s).Context(ctx)
}

func execution(s *engine.State) telemetry.Execution {
	return telemetry.Execution{ID: s.ExecutionID, WorkflowRef: s.Playbook, WorkloadSize: len(s.Workload),
		Force: telemetry.WorkloadForcesTrace(s.Workload), ParentExecutionID: s.ParentID}
}

// observeStart records a new execution: noetl_executions_started_total
// and an execution_start line (NoETL observability spec §8.1, §8.2). It runs once per
// execution: when its document is created.
func observeStart(ctx context.Context, s *engine.State) {
	telemetry.M.ExecutionStarted(ctx, s.Playbook)
	slog.Default().InfoContext(ctx, "execution started", telemetry.Event(telemetry.EventExecutionStart),
		telemetry.ExecutionID(s.ExecutionID), telemetry.WorkflowRef(s.Playbook),
		slog.String("parent_execution_id", s.ParentID), slog.Int("workload_size", len(s.Workload)),
		slog.Bool("trace_forced", telemetry.WorkloadForcesTrace(s.Workload)))
}
