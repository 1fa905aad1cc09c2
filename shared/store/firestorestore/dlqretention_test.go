package firestorestore_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
)

// TestFirestoreDLQRetention: a DLQ entry's expire_at (the collection's
// TTL policy deletes it then) is now + the driver's DLQRetention
// (NOETL_DLQ_RETENTION_DAYS); zero is DefaultDLQRetention.
func TestFirestoreDLQRetention(t *testing.T) {
	f := openEmulator(t)
	requireReachable(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, c := range []struct{ set, want time.Duration }{
		{9 * 24 * time.Hour, 9 * 24 * time.Hour},
		{0, firestorestore.DefaultDLQRetention},
	} {
		f.DLQRetention = c.set
		id := "dlq-ttl-" + strings.ToLower(rand.Text()[:12])
		if err := f.DLQPut(ctx, store.DLQEntry{MessageID: id, ExecutionID: "1234567890123456789", StepID: "s", Attempts: 1, LastError: "x"}); err != nil {
			t.Fatal(err)
		}
		s, err := f.Client().Collection("dlq").Doc(store.DLQID(id)).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.DataAt("expire_at")
		ts, ok := v.(time.Time)
		if err != nil || !ok {
			t.Fatalf("DLQRetention %s: expire_at %v (%v)", c.set, v, err)
		}
		if d := time.Until(ts); d < c.want-time.Hour || d > c.want+time.Hour {
			t.Errorf("DLQRetention %s: expire_at %v is now+%s, want about now+%s", c.set, ts, d.Round(time.Hour), c.want)
		}
	}
}
