package firestorestore

import (
	"context"

	"github.com/noetl/gcpengine/shared/meter"
)

// meterOf returns the operation meter of an execution (shared/meter): the
// driver counts the document reads, writes and deletes it performs, as
// Firestore bills them.
func meterOf(ctx context.Context, executionID string) meter.Scope {
	return meter.For(ctx, executionID)
}
