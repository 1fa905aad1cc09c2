// Package noop implements the `noop` task kind (NoETL DSL spec "Tasks"): a task that
// does nothing and succeeds. It is used for pure routing steps and for tests.
package noop

import (
	"context"

	"github.com/noetl/gcpengine/shared/types"
)

// Tool is the noop task kind. The zero value is ready to use.
type Tool struct{}

// New returns a noop tool.
func New() *Tool { return &Tool{} }

// Exec runs one attempt (tools.Adapt turns it into a tools.Tool). It always
// returns status "ok". The result is config["result"] when that key is
// present (even if its value is nil), else the rendered args when there are
// any, else nil. It never fails.
func (Tool) Exec(_ context.Context, args, config map[string]any, _ float64) types.Outcome {
	out := types.Outcome{Status: types.StatusOK}
	if v, ok := config["result"]; ok {
		out.Result = v
	} else if len(args) > 0 {
		out.Result = args
	}
	return out
}
