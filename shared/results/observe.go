package results

import (
	"context"
	"errors"

	"github.com/noetl/gcpengine/shared/telemetry"
)

// observeOffload counts a result written to the tier in format
// (FormatFeather or FormatJSON) and its size in bytes:
// noetl_result_offloaded_total and noetl_result_offloaded_bytes.
func observeOffload(ctx context.Context, format string, size int) {
	telemetry.M.ResultOffloaded(ctx, format, int64(size))
}

// observeResolve counts one reference read back (its "$ref" map r):
// noetl_result_resolved_total{format, outcome} with outcome ok, not_found
// (ErrNotFound) or error. A reference without a known format counts as
// format "unknown".
func observeResolve(ctx context.Context, r any, err error) {
	format := "unknown"
	if m, ok := r.(map[string]any); ok {
		if f, _ := m["format"].(string); f == FormatFeather || f == FormatJSON {
			format = f
		}
	}
	outcome := telemetry.ResolveOK
	switch {
	case errors.Is(err, ErrNotFound):
		outcome = telemetry.ResolveNotFound
	case err != nil:
		outcome = telemetry.ResolveError
	}
	telemetry.M.ResultResolved(ctx, format, outcome)
}

// observeRewrite counts a write that found another writer's object at
// its key: noetl_result_write_conflicts_total{outcome} (once.go).
func observeRewrite(ctx context.Context, outcome telemetry.WriteConflict) {
	telemetry.M.ResultWriteConflict(ctx, outcome)
}
