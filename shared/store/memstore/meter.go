package memstore

import (
	"context"

	"github.com/noetl/gcpengine/shared/meter"
)

// meterOf returns the operation meter of an execution (shared/meter): the
// in-memory driver counts the document reads, writes and deletes that
// Firestore would bill for the same calls.
func meterOf(ctx context.Context, executionID string) meter.Scope {
	return meter.For(ctx, executionID)
}
