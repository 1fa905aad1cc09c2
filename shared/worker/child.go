package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// ChildID returns the id of the child execution started by the task at
// the command's pointer: derived from the parent unit, so a redelivered
// task finds the child it already started instead of starting another.
func ChildID(c types.Command) string {
	return launch.DerivedID("child", c.ExecutionID, c.UnitKey(), itoa(c.TaskIndex), itoa(c.Attempt), itoa(c.Jumps))
}

// cursorCommand is the unit's command at its current cursor.
func (u *unit) cursorCommand() types.Command {
	c := u.cmd
	u.cur.Into(&c)
	return c
}

// runChild runs a `kind: playbook` task: the first delivery starts the
// child execution (parent id recorded; its workload is the task's rendered
// `workload` merged with its args) and suspends the unit; the child's end
// publishes the resume command, and the next delivery turns the child's
// status and result into the task's outcome (a failed child is an error
// outcome of kind "playbook").
func (u *unit) runChild(ctx context.Context, task *dsl.Task) (types.Outcome, bool, error) {
	args, cfg, fail, bad := u.render(task)
	if bad != nil {
		return *bad, false, nil
	}
	cc := u.cursorCommand()
	id := ChildID(cc)
	rec, err := u.w.Store.ExecutionGet(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return types.Outcome{}, false, err
	}
	if err == nil {
		st := rec.State
		if !st.Terminal() {
			return types.Outcome{}, true, nil
		}
		if st.Status == engine.ExecOK {
			return types.Outcome{Status: types.StatusOK, Result: st.Result}, false, nil
		}
		return types.Outcome{Status: types.StatusError, Result: map[string]any{"execution_id": id, "status": st.Status},
			Error: &types.TaskError{Kind: types.ErrKindPlaybook, Message: fmt.Sprintf("child execution %s %s: %s", id, st.Status, strings.Join(st.Failures, "; "))}}, false, nil
	}
	path, _ := cfg["path"].(string)
	version := 0
	switch v := cfg["version"].(type) {
	case int:
		version = v
	case int64:
		version = int(v)
	case string:
		if version, err = store.ParseVersion(v); err != nil {
			return fail(types.ErrKindConfig, err.Error()), false, nil
		}
	}
	if u.w.Catalog == nil {
		return fail(types.ErrKindConfig, "playbook tasks need a catalog"), false, nil
	}
	entry, err := u.w.Catalog.Load(ctx, path, version)
	if err != nil {
		var ve *dsl.ValidationError
		if errors.Is(err, catalog.ErrNotFound) || errors.As(err, &ve) {
			return fail(types.ErrKindPlaybook, err.Error()), false, nil
		}
		return types.Outcome{}, false, err
	}
	wl := map[string]any{}
	if m, ok := cfg["workload"].(map[string]any); ok {
		for k, v := range m {
			wl[k] = v
		}
	}
	for k, v := range args {
		wl[k] = v
	}
	resume := cc
	resume.ChildID = id
	resume.NotBefore = time.Time{}
	resume.ID = resume.TaskName()
	if err := u.spillCursor(ctx, &resume); err != nil { // hook (h-conf): large continuations (handoff.go)
		return types.Outcome{}, false, err
	}
	if _, err := launch.Start(ctx, u.w.Store, u.w.Bus, launch.Params{
		Playbook: entry.Playbook, Source: entry.Source, Workload: wl, ParentID: cc.ExecutionID,
		ExecutionID: id, Resume: &resume, ParentIter: u.iterView(), Credentials: u.w.Credentials, Now: u.w.now(),
		// The child runs for the parent's creator, under its own catalog
		// path: its credentials are granted to that path, never inherited.
		Creator: u.st.Creator, CatalogPath: entry.Path,
	}); err != nil {
		var ke *launch.KeychainError
		if errors.Is(err, credentials.ErrNotGranted) {
			return fail(types.ErrKindForbidden, err.Error()), false, nil
		}
		if errors.As(err, &ke) {
			return fail(types.ErrKindPlaybook, err.Error()), false, nil
		}
		return types.Outcome{}, false, err
	}
	e := u.event(types.EvTaskStarted, task.Name, "child", id)
	e.Payload = history.Encode(history.TaskStarted{ChildExecutionID: id, Path: path, Version: entry.Version})
	u.log.Info("child execution started", "task", task.Name, "child_execution_id", id, "path", path)
	return types.Outcome{}, true, nil
}
