// Package execute is the execute Cloud Function: an HTTP function called
// by Cloud Tasks with one command as the body. It runs the unit of work
// (shared/worker) and answers by the code of the unit's error, through the
// one policy table (errs.ReplyOf): 200 when the unit is done, handed off or
// not wanted any more; 503 to have Cloud Tasks redeliver it later (a lease
// held by another delivery, state behind: FailedPrecondition); 500 on
// transient errors (also redelivered); a unit that can never run (a code
// that is not retried: InvalidArgument, NotFound, PermissionDenied, ...),
// or a body that the engine did not sign (shared/sign), is acked (200) and
// dead-lettered.
package execute

import (
	"encoding/json"
	"github.com/noetl/gcpengine/shared/config"
	"io"
	"net/http"
	"strconv"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wiring"
	"github.com/noetl/gcpengine/shared/worker"
)

func init() { functions.HTTP("execute", Execute) }

// Needs is what execute builds besides the base every function has
// (wiring.Needs; wiring.Get): the worker with its tool registry (the control plane's kinds, the runner client) and the results tier (large unit bodies).
const Needs = wiring.NeedExecutor | wiring.NeedResults

// MaxBody is the largest command body accepted, in bytes; a larger one is
// dead-lettered (the engine keeps bodies under Cloud Tasks' 100 KB task
// limit, shared/tasks MaxTaskBytes).
const MaxBody = 1 << 20

// DecodeUnit verifies and decodes the body of one Cloud Tasks delivery:
// at most MaxBody bytes, signed by the engine (sig is the sign.Header
// header, purpose sign.Command), a types.Command naming an execution and a
// step. Every error is permanent (the unit is dead-lettered, never
// retried); an unsigned or forged body wraps sign.ErrUnsigned or
// sign.ErrForged. A reference body (BodyRef) is returned as is
// (tasks.LoadBody loads the full command).
func DecodeUnit(body []byte, sig string, s *sign.Signer) (types.Command, error) {
	if len(body) > MaxBody {
		return types.Command{}, wiring.Permanent(errs.New(errs.InvalidArgument, "command body larger than %d bytes", MaxBody))
	}
	return wiring.DecodeCommand(body, sig, s)
}

// Execute handles one Cloud Tasks delivery.
func Execute(w http.ResponseWriter, r *http.Request) {
	req := meter.ActivityOf("execute").Begin()
	ctx := r.Context()
	d, err := wiring.Get(ctx, Needs)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !authorized(w, r, d) { // OIDC token of Cloud Tasks (oidc.go)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	delivery := wiring.PushMessage{Data: body, MessageID: r.Header.Get("X-CloudTasks-TaskName")}
	cmd, err := DecodeUnit(body, r.Header.Get(sign.Header), d.Signer)
	if err == nil && cmd.BodyRef != nil {
		// A unit too large for a Cloud Task: its body is in the results
		// tier, bound to this signed reference by its digest.
		cmd, err = tasks.LoadBody(ctx, d.Results, cmd)
		if err != nil && !errs.Permanent(err) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if err != nil {
		// A body that is not the engine's, or never decodes, is acked (200)
		// and dead-lettered: nothing of it runs.
		_ = d.AckPermanentUnit(ctx, delivery, cmd.ExecutionID, cmd.Step, wiring.Permanent(err))
		acked(ctx, r)
		w.WriteHeader(http.StatusOK)
		return
	}
	m := meter.For(ctx, cmd.ExecutionID)
	m.Add(meter.TasksDispatch, 1)
	defer func() {
		m.Add(meter.Invocations("execute"), 1)
		m.Add(meter.Milliseconds("execute"), req.End())
	}()
	ctx = unitContext(ctx, r, cmd) // trace and pool (observe.go)
	defer flush(ctx)
	err = d.Executor().Run(ctx, cmd, deliveryOf(r, &d.Cfg))
	// The reply follows the error's code (errs.ReplyOf, the one policy
	// table): done, dead-lettered (acked), retry later (503, no failure),
	// or retry (500).
	switch reply := errs.ReplyOf(err); reply {
	case errs.ReplyDone:
		acked(ctx, r)
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true})
	case errs.ReplyRetryLater:
		http.Error(w, err.Error(), reply.HTTPStatus())
	case errs.ReplyDeadLetter:
		_ = d.AckPermanentUnit(ctx, delivery, cmd.ExecutionID, cmd.Step, err)
		acked(ctx, r)
		w.WriteHeader(reply.HTTPStatus())
	default:
		d.Log.ErrorContext(ctx, "execute failed, Cloud Tasks will retry", "execution_id", cmd.ExecutionID, "step", cmd.Step, "error", err.Error())
		http.Error(w, err.Error(), reply.HTTPStatus())
	}
}

// deliveryOf is the Cloud Task delivery r carries (its task name and
// retry count headers) with the queue's budget from cfg
// (NOETL_TASKS_MAX_ATTEMPTS, NOETL_TASKS_MAX_BACKOFF_S): what the worker's
// last-attempt guard reads.
func deliveryOf(r *http.Request, cfg *config.Config) worker.Delivery {
	retries, _ := strconv.Atoi(r.Header.Get("X-CloudTasks-TaskRetryCount"))
	return worker.Delivery{TaskName: r.Header.Get("X-CloudTasks-TaskName"), RetryCount: retries, MaxAttempts: cfg.TasksMaxAttempts, MaxBackoff: cfg.TasksMaxBackoff}
}
