package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/operations/gc"
	"github.com/noetl/gcpengine/shared/replay"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wiring"
)

// Repair and lifetime (README "Repair"):
//
//	POST /executions/{id}/rebuild   (operator) → 200 replay.Report
//	    rebuilds the execution's event read model from the events topic's
//	    replay subscription; 409 while another rebuild runs, 404 for an id
//	    that is neither on record nor an execution id.
//	POST /gc[?apply=true]           (admin) → 200 gc.Report
//	    decides, by the lifetime of their execution, which results to
//	    delete — those of executions that ended more than
//	    NOETL_RETENTION_DAYS ago or whose record is gone (shared/operations/gc)
//	    — and reports them; it deletes them only with apply=true (a dry run
//	    by default, NoETL result storage RFC §5; the daily job applies).
//	    dry_run=true is the default said out loud (400 with apply=true).
//	POST /gc?execution_id=ID[&force=true][&apply=true] (admin)
//	    → 200 {"execution_id", "verdict", "deleted", "dry_run"}: one
//	    execution's results (per-execution prefix delete) when its verdict
//	    deletes, or with force when it ended within its retention; never
//	    while it (or its parent) runs or a pending DLQ entry names it.

//	POST /results/verify[?execution_id=ID][&check=crc32c|sha256] (admin)
//	    → 200 gc.ScrubReport: the scrub (shared/operations/gc scrub.go) reads
//	    every result the logs reference against its generation and digest
//	    and records each one lost as a result.lost event in its
//	    execution's log; 404 for an execution that does not exist.
//	POST /results/repair {"urn"} (admin) → 202 gc.RepairPlan, the
//	    re-derivation enqueued for execute; 409 {"error"} naming why a
//	    result cannot be repaired (repair.go, shared/operations/gc).

var (
	replayMu  sync.Mutex
	replaySub *replay.PubSub
)

// replaySubscription opens the instance's client of the replay
// subscription once.
func replaySubscription(ctx context.Context, d *wiring.Deps) (*replay.PubSub, error) {
	replayMu.Lock()
	defer replayMu.Unlock()
	if replaySub != nil {
		return replaySub, nil
	}
	s, err := replay.OpenPubSub(ctx, d.Cfg.Project, d.Cfg.ReplaySubscription)
	if err != nil {
		return nil, err
	}
	replaySub = s
	return s, nil
}

func rebuild(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	d, ok := opened(ctx, w, deps)
	if !ok {
		return
	}
	if id == "" || strings.Contains(id, "/") {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "execution " + id + " not found"})
		return
	}
	sub, err := replaySubscription(ctx, d)
	if err != nil {
		unavailable(w, err)
		return
	}
	rb := &replay.Rebuilder{Sub: sub, Store: d.Store, Decode: func(m replay.Message) (types.Batch, error) {
		return wiring.DecodeBatch(wiring.PushMessage{Data: m.Data, Attributes: m.Attributes}, d.Signer)
	}}
	// The rebuild's own store operations are not the execution's: they
	// go to a throw-away meter (as materialize's), so that a rebuild
	// publishes no operation-count batch of its own into the log it
	// rebuilds.
	rep, err := rb.Rebuild(meter.With(ctx, meter.New()), id)
	switch {
	case err == nil:
		d.Log.InfoContext(ctx, "api: event read model rebuilt", "execution_id", id, "principal", principal(r), "written", rep.Written,
			"present", rep.Present, "events", rep.Events, "complete", rep.Complete)
		writeJSON(w, http.StatusOK, rep)
	case errors.Is(err, replay.ErrBusy):
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error()})
	case errs.CodeOf(err) == errs.NotFound:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": err.Error()})
	default:
		unavailable(w, err)
	}
}

func collect(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d, ok := opened(ctx, w, deps)
	if !ok {
		return
	}
	q := r.URL.Query()
	flag := func(name string) (bool, bool) {
		v := q.Get(name)
		if v == "" {
			return false, true
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": name + " must be true or false"})
			return false, false
		}
		return b, true
	}
	apply, ok := flag("apply")
	if !ok {
		return
	}
	dryAsked, ok := flag("dry_run")
	if !ok {
		return
	}
	if apply && dryAsked {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "apply and dry_run contradict each other"})
		return
	}
	dry := !apply
	force, ok := flag("force")
	if !ok {
		return
	}
	c := &gc.Collector{Results: d.Results, Records: d.Store, Retention: d.Cfg.Retention(), Log: d.Log}
	id := q.Get("execution_id")
	if id == "" {
		if force {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "force needs execution_id"})
			return
		}
		rep, err := c.Run(ctx, dry)
		if err != nil {
			unavailable(w, err)
			return
		}
		d.Log.InfoContext(ctx, "api: results gc", "principal", principal(r), "dry_run", dry, "deleted", rep.Deleted, "executions", rep.Executions)
		writeJSON(w, http.StatusOK, rep)
		return
	}
	if n, err := strconv.ParseUint(id, 10, 63); err != nil || n == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "execution_id must be an execution id"})
		return
	}
	var (
		verdict string
		n       int
		err     error
	)
	if dry {
		verdict, err = c.Decide(ctx, id)
	} else {
		verdict, n, err = c.DeleteExecution(ctx, id, force)
	}
	if err != nil {
		unavailable(w, err)
		return
	}
	d.Log.InfoContext(ctx, "api: results gc of one execution", "execution_id", id, "principal", principal(r), "verdict", verdict, "deleted", n, "force", force, "dry_run", dry)
	writeJSON(w, http.StatusOK, map[string]any{"execution_id": id, "verdict": verdict, "deleted": n, "dry_run": dry})
}

// verifyResults handles POST /results/verify (see above).
func verifyResults(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d, ok := opened(ctx, w, deps)
	if !ok {
		return
	}
	q := r.URL.Query()
	var check results.ReadCheck
	if c := q.Get("check"); c != "" {
		var err error
		if check, err = results.ParseReadCheck(c); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			return
		}
	}
	id := q.Get("execution_id")
	if id != "" {
		if _, ok := execution(ctx, w, d, id); !ok {
			return
		}
	}
	s := &gc.Scrubber{Results: d.Results, Logs: d.Store, Bus: d.Bus, Check: check, Source: "api", Log: d.Log}
	rep, err := s.Run(ctx, id)
	if err != nil {
		unavailable(w, err)
		return
	}
	d.Log.InfoContext(ctx, "api: results scrub", "principal", principal(r), "execution_id", id, "executions", rep.Executions,
		"results", rep.Results, "intact", rep.Intact, "lost", len(rep.Lost), "bytes", rep.Bytes, "check", rep.Check)
	writeJSON(w, http.StatusOK, rep)
}

// RepairRequest is the body of POST /results/repair.
type RepairRequest struct {
	// URN is the lost result's logical URI (noetl://…).
	URN string `json:"urn"`
}

// repairResult handles POST /results/repair (see above): the repair is
// planned here (gc.PlanRepair: a refusal names the rule the result
// breaks) and run by execute (a repair_result unit), which records its
// outcome in the execution's log (result.repaired, result.repair_failed
// with the request id).
func repairResult(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d, ok := opened(ctx, w, deps)
	if !ok {
		return
	}
	var req RepairRequest
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10)); !decodeJSON(w, b, &req) {
		return
	}
	cmd, err := gc.PlanRepair(ctx, d.Results, d.Store, req.URN, principal(r))
	switch {
	case errors.Is(err, results.ErrBadURI):
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no execution of " + req.URN + " is on record"})
		return
	case errors.Is(err, gc.ErrIntact), errors.Is(err, gc.ErrNotRepairable):
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error()})
		return
	case err != nil:
		unavailable(w, err)
		return
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	cmd.Repair.RequestID = hex.EncodeToString(nonce[:])
	cmd.ID = cmd.TaskName()
	if _, err := d.Dispatcher.TaskCreate(ctx, cmd, time.Now()); err != nil {
		unavailable(w, err)
		return
	}
	d.Log.InfoContext(ctx, "api: result repair enqueued", "principal", principal(r), "urn", req.URN, "execution_id", cmd.ExecutionID,
		"task", cmd.Repair.Task, "request_id", cmd.Repair.RequestID)
	writeJSON(w, http.StatusAccepted, map[string]any{"execution_id": cmd.ExecutionID, "urn": req.URN, "step": cmd.Step, "task": cmd.Repair.Task,
		"kind": cmd.Repair.Kind, "request_id": cmd.Repair.RequestID, "status": "repairing"})
}
