package control

import (
	"encoding/json"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// MaskTransition removes the execution's literal secrets (red.Secrets:
// keychain values, secret-named workload values) from what a transition
// writes and sends besides its events (README "Security"): the units it
// creates (rendered arc args, step scope, loop items: Cloud Task bodies
// and the outbox document), its new loop plans, and the execution state
// (ctx, results, step args, vars, errors, queued tokens, failures) — the
// workload itself stays, it is the execution's input. A template that
// renders a secret into an arc arg therefore passes "***": tasks read
// secrets from keychain.<name> themselves (README "Security").
func MaskTransition(red *redact.Redactor, st *engine.State, out *engine.Output) {
	if red.Empty() {
		return
	}
	for i := range out.Commands {
		MaskCommand(red, &out.Commands[i])
	}
	for i := range out.Loops {
		p := &out.Loops[i]
		if items, ok := red.Secrets(p.Items).([]any); ok || p.Items == nil {
			p.Items = items
		}
		p.Args = maskMap(red, p.Args)
	}
	st.Ctx = maskMap(red, st.Ctx)
	st.Results = maskMap(red, st.Results)
	st.Result = red.Secrets(st.Result)
	for i, f := range st.Failures {
		st.Failures[i] = red.SecretsString(f)
	}
	for _, ss := range st.Steps {
		ss.Args, ss.Vars = maskMap(red, ss.Args), maskMap(red, ss.Vars)
		ss.Error = red.Secrets(ss.Error)
		for i := range ss.Pending {
			ss.Pending[i].Args, ss.Pending[i].Vars = maskMap(red, ss.Pending[i].Args), maskMap(red, ss.Pending[i].Vars)
		}
	}
	if st.Resume != nil {
		MaskCommand(red, st.Resume)
	}
	st.ParentIter = maskMap(red, st.ParentIter)
}

// MaskCommand removes red's literal secrets from a unit (every field,
// through its JSON form); a unit without any is left as it is.
func MaskCommand(red *redact.Redactor, cmd *types.Command) {
	if red.Empty() {
		return
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return
	}
	m := red.SecretsBytes(b)
	if len(m) == len(b) && string(m) == string(b) {
		return
	}
	var c types.Command
	if err := jsonx.Unmarshal(m, &c); err != nil {
		return
	}
	store.NormCommand(&c)
	*cmd = c
}

func maskMap(red *redact.Redactor, m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out, _ := red.Secrets(m).(map[string]any)
	return out
}
