// Package noop implements the `noop` task kind (NoETL DSL spec "Tasks"): a task that
// does nothing and succeeds. It is used for pure routing steps and for tests.
package noop

import (
	"context"

	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// Tool is the noop task kind. The zero value is ready to use.
type Tool struct{}

// New returns a noop tool.
func New() *Tool { return &Tool{} }

// Exec runs one attempt (tools.Adapt turns it into a tools.Tool). It
// returns status "ok" with the result of its spec (toolspec.Noop.Result)
// when it is given (not null), else the rendered args when there are any,
// else nil. A configuration that does not decode into toolspec.Noop (an
// unknown key) is an error of kind "config".
func (Tool) Exec(_ context.Context, args, config map[string]any, _ float64) types.Outcome {
	var spec toolspec.Noop
	if err := toolspec.Decode(config, &spec); err != nil {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrKindConfig, Message: err.Error()}}
	}
	out := types.Outcome{Status: types.StatusOK}
	if spec.Result != nil {
		out.Result = spec.Result
	} else if len(args) > 0 {
		out.Result = args
	}
	return out
}
