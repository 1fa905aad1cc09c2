package script

import (
	"context"
	"errors"
	"time"

	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/types"
)

// LoadOutcome is Load as a task kind calls it while preparing an attempt
// (python, postgres): nothing (ok false) when cfg has no "script" key; the
// fetch bounded by the attempt's budget (timeoutS seconds, when > 0); a
// failure returned as the task's outcome, the classified one of an *Error,
// else kind "internal" (retryable).
func LoadOutcome(ctx context.Context, cfg map[string]any, what string, o Options, timeoutS float64) (code string, ok bool, failed *types.Outcome) {
	if _, has := cfg["script"]; !has {
		return "", false, nil
	}
	if timeoutS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutS*float64(time.Second)))
		defer cancel()
	}
	code, ok, err := Load(ctx, cfg, what, o)
	if err != nil {
		var se *Error
		out := conf.Fail(types.ErrKindInternal, true, "%v", err)
		if errors.As(err, &se) {
			out = se.Outcome
		}
		return "", false, &out
	}
	return code, ok, nil
}
