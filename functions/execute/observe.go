package execute

import (
	"context"
	"net/http"
	"time"

	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/worker"
)

// unitContext returns the context of one delivery of cmd (NoETL observability spec §8.3):
// the W3C trace context of the Cloud Task (its traceparent header, else
// the one the command carries), under the unit's server.dispatch span
// (telemetry.Unit: deterministic ids, recorded by the worker when the
// unit ends), with the delivering queue as the worker metrics' pool.
func unitContext(ctx context.Context, r *http.Request, cmd types.Command) context.Context {
	tp := r.Header.Get("traceparent")
	if tp == "" {
		tp = cmd.TraceParent
	}
	ctx = telemetry.WithTraceParent(ctx, tp)
	ctx = telemetry.Unit{ExecutionID: cmd.ExecutionID, Key: cmd.UnitKey(), Step: cmd.Step, StepRun: cmd.StepRun, LoopIndex: cmd.Iteration}.Context(ctx)
	return worker.WithPool(ctx, r.Header.Get("X-CloudTasks-QueueName"))
}

// acked records a Cloud Tasks delivery answered for good (2xx: the unit
// ended, was dropped or dead-lettered): noetl_task_queue_inflight{pool}
// -= 1, pool being X-CloudTasks-QueueName. A call that did not come from a
// queue (no such header: a test, an operator) is not counted.
func acked(ctx context.Context, r *http.Request) {
	if q := r.Header.Get("X-CloudTasks-QueueName"); q != "" {
		telemetry.M.TaskAcknowledged(ctx, q)
	}
}

// flush exports the spans the request ended (and metrics when due) before
// execute answers: the instance's CPU may be throttled afterwards.
func flush(ctx context.Context) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = telemetry.Flush(c)
}
