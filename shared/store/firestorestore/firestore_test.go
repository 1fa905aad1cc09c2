package firestorestore_test

import (
	"context"
	"crypto/rand"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
	"github.com/noetl/gcpengine/shared/store/storetest"
	"github.com/noetl/gcpengine/shared/types"
)

// openEmulator returns a Firestore store on the emulator named by
// FIRESTORE_EMULATOR_HOST, closed when t ends. Without the emulator the
// test is skipped, or fails when NOETL_STACK=1 (set by scripts/test) says
// the stack must be there.
func openEmulator(t *testing.T) *firestorestore.Firestore {
	t.Helper()
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	if host == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatal("NOETL_STACK=1 but FIRESTORE_EMULATOR_HOST is unset: source .stack/env")
		}
		t.Skip("Firestore emulator not configured (set FIRESTORE_EMULATOR_HOST, or run scripts/up and source .stack/env)")
	}
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	if project == "" {
		project = "noetl-test"
	}
	f, err := firestorestore.OpenFirestore(t.Context(), project)
	if err != nil {
		t.Fatalf("OpenFirestore(%s) on %s: %v", project, host, err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

// requireReachable fails fast when the emulator does not accept
// connections (the client would otherwise retry until the deadline).
func requireReachable(t *testing.T) {
	t.Helper()
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	if host == "" {
		return // openEmulator skips or fails
	}
	c, err := net.DialTimeout("tcp", host, 3*time.Second)
	if err != nil {
		t.Fatalf("Firestore emulator at %s unreachable: %v", host, err)
	}
	c.Close()
}

func TestFirestoreConformance(t *testing.T) {
	openEmulator(t) // skip or fail before running the suite
	requireReachable(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openEmulator(t) })
}

// TestFirestoreDLQDocument checks what the suite cannot see through the
// interface: DLQPut writes one dlq/{message_id} document with the entry's
// fields, defaulting the status to pending.
func TestFirestoreDLQDocument(t *testing.T) {
	f := openEmulator(t)
	requireReachable(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	id := "dlq-" + strings.ToLower(rand.Text()[:12])
	e := store.DLQEntry{MessageID: id, ExecutionID: "exec-" + id, StepID: "fetch", LoopIndex: types.IntPtr(0), Attempts: 3, LastError: "boom", Payload: `{"a":1}`}
	for range 2 {
		if err := f.DLQPut(ctx, e); err != nil {
			t.Fatalf("DLQPut: %v", err)
		}
	}
	s, err := f.Client().Collection("dlq").Doc(id).Get(ctx)
	if err != nil {
		t.Fatalf("get dlq/%s: %v", id, err)
	}
	var got store.DLQEntry
	if err := s.DataTo(&got); err != nil {
		t.Fatalf("decode dlq/%s: %v", id, err)
	}
	e.Status = "pending"
	if got.MessageID != e.MessageID || got.ExecutionID != e.ExecutionID || got.Attempts != e.Attempts ||
		got.LastError != e.LastError || got.Payload != e.Payload || got.Status != e.Status ||
		got.LoopIndex == nil || *got.LoopIndex != 0 {
		t.Fatalf("dlq/%s = %+v, want %+v", id, got, e)
	}
}

// TestFirestoreExpireAt checks the TTL fields the suite cannot see through
// the interface: an execution document gets expire_at (now + Retention)
// when a checkpoint ends it, on the transactional and on the optimistic
// path, and not before; outbox, batch and unit-lease documents carry
// expire_at from the start (they are never deleted by the engine).
func TestFirestoreExpireAt(t *testing.T) {
	f := openEmulator(t)
	requireReachable(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	end := func(rec *store.Execution) (*engine.Output, error) {
		rec.State.Status = engine.ExecOK
		rec.State.Version++
		return &engine.Output{Events: []types.Event{{EventID: "done", EventType: types.EvPlaybookFinished}}}, nil
	}
	expireAt := func(path string) (time.Time, bool) {
		t.Helper()
		s, err := f.Client().Doc(path).Get(ctx)
		if err != nil {
			t.Fatalf("get %s: %v", path, err)
		}
		v, err := s.DataAt("expire_at")
		if err != nil || v == nil {
			return time.Time{}, false
		}
		ts, ok := v.(time.Time)
		if !ok {
			t.Fatalf("%s: expire_at is %T, want a timestamp", path, v)
		}
		return ts, true
	}
	near := func(path string, want time.Duration) {
		t.Helper()
		ts, ok := expireAt(path)
		if d := time.Until(ts); !ok || d < want-time.Hour || d > want+time.Hour {
			t.Errorf("%s: expire_at = %v (set %v), want about now+%v", path, ts, ok, want)
		}
	}
	for _, optimistic := range []bool{false, true} {
		// The driver's Retention (NOETL_RETENTION_DAYS) sets expire_at;
		// zero is DefaultRetention.
		retention := firestorestore.DefaultRetention
		f.Retention = 0
		if optimistic {
			retention, f.Retention = 3*24*time.Hour, 3*24*time.Hour
		}
		id := "ttl-" + strings.ToLower(rand.Text()[:12])
		st := &engine.State{ExecutionID: id, Status: engine.ExecRunning, CreatedAt: time.Now().UTC()}
		if err := f.ExecutionCreate(ctx, &store.Execution{State: st}); err != nil {
			t.Fatal(err)
		}
		if _, ok := expireAt("executions/" + id); ok {
			t.Errorf("running execution %s has expire_at", id)
		}
		p := store.CheckpointParams{ExecutionID: id, OutboxID: "end", Apply: end}
		if optimistic {
			rec, err := f.ExecutionGet(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			p.Base = rec
		}
		if cp, err := f.ExecutionCheckpoint(ctx, p); err != nil || !cp.Applied {
			t.Fatalf("checkpoint (optimistic %v): %+v, %v", optimistic, cp, err)
		}
		near("executions/"+id, retention)
		near("executions/"+id+"/outbox/end", retention)
		if _, err := f.BatchPut(ctx, types.Batch{ID: "b1", ExecutionID: id, Events: []types.Event{{EventID: "e1"}}}); err != nil {
			t.Fatal(err)
		}
		near("executions/"+id+"/batches/b1", retention)
		if err := f.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u.1", Holder: "A", TTL: time.Minute, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		near("executions/"+id+"/units/u.1", 24*time.Hour)
	}
}
