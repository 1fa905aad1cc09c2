package store

import (
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// NormState gives every number of a decoded state its kind
// (jsonx.NormalizeInto: jsonx.Unmarshal already did, for a state decoded
// with it) and fills nil maps (drivers call it after decoding).
func NormState(st *engine.State) {
	jsonx.NormalizeInto(st)
	if st.Workload == nil {
		st.Workload = map[string]any{}
	}
	if st.Ctx == nil {
		st.Ctx = map[string]any{}
	}
	if st.Results == nil {
		st.Results = map[string]any{}
	}
	if st.Steps == nil {
		st.Steps = map[string]*engine.StepState{}
	}
}

// NormCommand gives every number of a decoded command its kind
// (jsonx.NormalizeInto).
func NormCommand(c *types.Command) { jsonx.NormalizeInto(c) }

// NormOutput gives every number of a decoded transition output its kind
// (jsonx.NormalizeInto).
func NormOutput(o *engine.Output) { jsonx.NormalizeInto(o) }

// NormPlan gives every number of a decoded loop plan its kind
// (jsonx.NormalizeInto).
func NormPlan(p *engine.LoopPlan) { jsonx.NormalizeInto(p) }
