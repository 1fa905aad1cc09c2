package worker

import (
	"fmt"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/template"
)

// taskContext is the execution context a task reads besides its args
// (tools.Request.Context; NoETL python's global `context`): the execution
// id, job ({uuid, execution_id, id}), step and task names, workload, ctx
// (with the unit's patches), the iteration state, the step's input token
// and — as in NoETL, whose python executor gets its render context there
// (noetl/tools/python/executor.py: exec_globals["context"]), which holds
// every finished step's result by name — the results of the finished
// steps (results-tier references loaded) and of this pipeline's finished
// tasks by label, under their names; a step or task named like one of the
// fixed keys is not added.
func (u *unit) taskContext(task *dsl.Task) map[string]any {
	ctxv := make(map[string]any, len(u.st.Ctx)+len(u.cur.CtxPatch))
	for k, v := range u.st.Ctx {
		ctxv[k] = v
	}
	for k, v := range u.cur.CtxPatch {
		ctxv[k] = v
	}
	iter := u.iterView()
	if iter == nil {
		iter = map[string]any{}
	}
	id := u.cmd.ExecutionID
	out := map[string]any{
		"execution_id": id,
		"job":          map[string]any{"uuid": id, "execution_id": id, "id": id},
		"step":         u.step.Name,
		"task":         task.Name,
		"workload":     u.st.Workload,
		"ctx":          ctxv,
		"iter":         iter,
		"input":        u.cmd.Args,
	}
	for _, m := range []map[string]any{u.loaded, u.cur.TaskResults} {
		for k, v := range m {
			if !fixedContextKeys[k] {
				out[k] = v
			}
		}
	}
	return out
}

// fixedContextKeys are taskContext's own keys, never replaced by a result.
var fixedContextKeys = map[string]bool{"execution_id": true, "job": true, "step": true, "task": true, "workload": true, "ctx": true, "iter": true, "input": true}

// scriptConfig turns a task's script block (dsl.Script) back into the
// `script` configuration the python and postgres kinds load their code
// from ({uri, source: {type, code, endpoint, method, auth, timeout}}), with
// the URI, endpoint and auth rendered in sc and the inline code rendered
// as NoETL renders tool keys (renderCode: code: "{{ workload.code }}"
// runs the workload's code; code that does not render runs as written).
func scriptConfig(s *dsl.Script, sc template.Scope) (map[string]any, error) {
	render := func(what, v string) (string, error) {
		if v == "" {
			return "", nil
		}
		r, err := template.Render(v, sc)
		if err != nil {
			return "", fmt.Errorf("script.%s: %w", what, err)
		}
		if r == nil {
			return "", nil
		}
		return fmt.Sprint(r), nil
	}
	uri, err := render("uri", s.URI)
	if err != nil {
		return nil, err
	}
	endpoint, err := render("source.endpoint", s.Endpoint)
	if err != nil {
		return nil, err
	}
	auth, err := render("source.auth", s.Auth)
	if err != nil {
		return nil, err
	}
	src := map[string]any{"type": s.Source}
	if s.Code != "" {
		src["code"], _ = renderCode(s.Code, sc)
	}
	if endpoint != "" {
		src["endpoint"] = endpoint
	}
	if s.Method != "" {
		src["method"] = s.Method
	}
	if auth != "" {
		src["auth"] = auth
	}
	if s.TimeoutS > 0 {
		src["timeout"] = s.TimeoutS
	}
	if s.Region != "" {
		region, err := render("source.region", s.Region)
		if err != nil {
			return nil, err
		}
		src["region"] = region
	}
	out := map[string]any{"source": src}
	if uri != "" {
		out["uri"] = uri
	}
	return out, nil
}

// taskResultNames returns a new map with the results of the unit's
// finished tasks by label, the names a later task of the pipeline reads
// them by (NoETL's task sequence: `{{ save_profile.profile_score }}`; a
// label shadows a step of the same name inside the pipeline). They are
// also under `_task`.
func taskResultNames(results map[string]any) map[string]any {
	out := make(map[string]any, len(results)+2)
	for k, v := range results {
		out[k] = v
	}
	return out
}

// sentScript replaces a file script of cfg that the execution carries
// (store.Execution.Files: the files sent beside a playbook submitted from
// a file, keyed by the path as the playbook writes it) by its text, as an
// inline script, after checking the file's sha256: the runner then reads
// nothing from its own file system for it (README "Running any playbook":
// scripts beside the playbook). A file script the execution does not carry
// is left to the runner (the playbook root). It returns an error when the
// carried file does not match its digest.
func sentScript(cfg map[string]any, files map[string]store.ExecutionFile) error {
	if len(files) == 0 {
		return nil
	}
	sb, ok := cfg["script"].(map[string]any)
	if !ok {
		return nil
	}
	src, _ := sb["source"].(map[string]any)
	if typ, _ := src["type"].(string); !strings.EqualFold(typ, "file") {
		return nil
	}
	uri, _ := sb["uri"].(string)
	f, ok := files[uri]
	if !ok {
		return nil
	}
	if !strings.EqualFold(f.SHA256, launch.Digest(f.Content)) {
		return fmt.Errorf("script file %q sent with the playbook does not match its sha256", uri)
	}
	cfg["script"] = map[string]any{"uri": uri, "source": map[string]any{"type": "inline", "code": f.Content}}
	return nil
}
