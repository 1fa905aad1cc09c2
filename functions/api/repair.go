package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/replay"
	"github.com/noetl/gcpengine/shared/results/gc"
	"github.com/noetl/gcpengine/shared/runtime"
	"github.com/noetl/gcpengine/shared/types"
)

// Repair and lifetime (README "Repair"):
//
//	POST /executions/{id}/rebuild   (operator) → 200 replay.Report
//	    rebuilds the execution's event read model from the events topic's
//	    replay subscription; 409 while another rebuild runs, 404 for an id
//	    that is neither on record nor an execution id.
//	POST /gc[?dry_run=true]         (admin) → 200 gc.Report
//	    deletes the results of executions that ended more than
//	    NOETL_RETENTION_DAYS ago or whose record is gone (shared/results/gc).
//	POST /gc?execution_id=ID[&force=true][&dry_run=true] (admin)
//	    → 200 {"execution_id", "verdict", "deleted", "dry_run"}: one
//	    execution's results (per-execution prefix delete) when its verdict
//	    deletes, or with force when it ended within its retention; never
//	    while it (or its parent) runs or a pending DLQ entry names it.

var (
	replayMu  sync.Mutex
	replaySub *replay.PubSub
)

// replaySubscription opens the instance's client of the replay
// subscription once.
func replaySubscription(ctx context.Context, d *runtime.Deps) (*replay.PubSub, error) {
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
		return runtime.DecodeBatch(runtime.PushMessage{Data: m.Data, Attributes: m.Attributes}, d.Signer)
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
	dry, ok := flag("dry_run")
	if !ok {
		return
	}
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
