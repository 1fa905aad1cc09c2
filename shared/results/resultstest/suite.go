// Package resultstest holds the conformance suite every results.Backend
// driver runs (the go-cloud "drivertest" pattern), so a new driver (another
// object store, a cache) proves the same contract as the GCS one.
package resultstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/results"
)

// BackendSuite runs the whole results.Backend contract against b as
// subtests: ObjectSuite, then List by prefix in key order and Delete
// (idempotent). Keys are created under a prefix unique to the call, so b
// may be shared with other tests; nothing is deleted afterwards.
func BackendSuite(t *testing.T, b results.Backend) {
	t.Helper()
	ObjectSuite(t, b)
	prefix := fmt.Sprintf("resultstest/%d", time.Now().UnixNano())
	key := func(name string) string { return prefix + "/" + name }
	ctx := context.Background()

	t.Run("ListDelete", func(t *testing.T) {
		for _, n := range []string{"ld/a/1.json", "ld/a/2.json", "ld/b/1.json", "ldx/1.json"} {
			if err := b.Put(ctx, key(n), []byte("1"), "application/json"); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		if err := b.List(ctx, key("ld/"), func(o results.ObjectInfo) error {
			got = append(got, o.Key)
			if op, err := b.Open(ctx, o.Key, 0); err != nil || o.Generation <= 0 || op.Generation() != o.Generation {
				t.Errorf("List: %s generation %d; Open: %v (%v)", o.Key, o.Generation, op, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if want := []string{key("ld/a/1.json"), key("ld/a/2.json"), key("ld/b/1.json")}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("List = %v, want %v", got, want)
		}
		if err := b.Delete(ctx, key("ld/a/1.json")); err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(ctx, key("ld/a/1.json")); err != nil {
			t.Fatalf("Delete missing: %v", err)
		}
		got = nil
		_ = b.List(ctx, key("ld/a/"), func(o results.ObjectInfo) error { got = append(got, o.Key); return nil })
		if len(got) != 1 {
			t.Fatalf("after Delete: %v", got)
		}
	})
}

// ObjectSuite runs the per-object part of the results.Backend contract
// against b as subtests, the part a driver that holds one right per object
// (grant.NewBackend: V4 signed URLs, no List or Delete) must keep too:
// Put/Get round trip (binary and empty data), overwrite, Exists true/false,
// Get of a missing key wrapping results.ErrNotFound, keys shaped like
// physical keys ("=", "/", dots, "%"), a large object (1 MiB + 1),
// concurrent Puts and Gets, a streamed write of more than one upload chunk
// (invisible until Close, content type and metadata kept, abort leaves
// nothing) read back by ranges and streams, a write with IfAbsent that
// fails with results.ErrExists where an object is (of racing writers
// exactly one wins), and failure on a cancelled
// context. Keys are created under a prefix unique to the call, so b may be
// shared with other tests; nothing is deleted afterwards.
func ObjectSuite(t *testing.T, b results.Backend) {
	t.Helper()
	prefix := fmt.Sprintf("resultstest/%d", time.Now().UnixNano())
	key := func(name string) string { return prefix + "/" + name }
	ctx := context.Background()

	t.Run("PutGet", func(t *testing.T) {
		data := []byte{0, 1, 2, 0xff, 'A', '\n', 0}
		if err := b.Put(ctx, key("putget.bin"), data, "application/octet-stream"); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := b.Get(ctx, key("putget.bin"))
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("Get = %v, want %v", got, data)
		}
	})

	t.Run("Empty", func(t *testing.T) {
		if err := b.Put(ctx, key("empty.json"), []byte{}, "application/json"); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := b.Get(ctx, key("empty.json"))
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if len(got) != 0 {
			t.Fatalf("Get = %d bytes, want 0", len(got))
		}
		if ok, err := b.Exists(ctx, key("empty.json")); err != nil || !ok {
			t.Fatalf("Exists = %v, %v; want true, nil", ok, err)
		}
	})

	t.Run("Overwrite", func(t *testing.T) {
		k := key("overwrite.json")
		if err := b.Put(ctx, k, []byte(`{"v":1}`), "application/json"); err != nil {
			t.Fatalf("Put 1: %v", err)
		}
		if err := b.Put(ctx, k, []byte(`{"v":2,"longer":true}`), "application/json"); err != nil {
			t.Fatalf("Put 2: %v", err)
		}
		got, err := b.Get(ctx, k)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if string(got) != `{"v":2,"longer":true}` {
			t.Fatalf("Get = %q, want the second Put", got)
		}
	})

	t.Run("Exists", func(t *testing.T) {
		k := key("exists.json")
		if ok, err := b.Exists(ctx, k); err != nil || ok {
			t.Fatalf("Exists before Put = %v, %v; want false, nil", ok, err)
		}
		if err := b.Put(ctx, k, []byte(`1`), "application/json"); err != nil {
			t.Fatalf("Put: %v", err)
		}
		if ok, err := b.Exists(ctx, k); err != nil || !ok {
			t.Fatalf("Exists after Put = %v, %v; want true, nil", ok, err)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		_, err := b.Get(ctx, key("missing/never-written.feather"))
		if !errors.Is(err, results.ErrNotFound) {
			t.Fatalf("Get missing: err = %v, want errors.Is ErrNotFound", err)
		}
	})

	t.Run("PhysicalKeyShape", func(t *testing.T) {
		k := key("noetl/env=dev/region=us-central1/cell=c1/shard=0007/tenant=t/project=p/date=2026-01-02/execution=e%2F1/results/step.a/0/3/1.feather")
		if err := b.Put(ctx, k, []byte("ARROW1"), results.ContentTypeFeather); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := b.Get(ctx, k)
		if err != nil || string(got) != "ARROW1" {
			t.Fatalf("Get = %q, %v", got, err)
		}
		// A sibling prefix must not be confused with the object.
		if ok, err := b.Exists(ctx, k[:len(k)-len(".feather")]); err != nil || ok {
			t.Fatalf("Exists(prefix) = %v, %v; want false, nil", ok, err)
		}
	})

	t.Run("Large", func(t *testing.T) {
		data := make([]byte, 1<<20+1)
		for i := range data {
			data[i] = byte(i * 7)
		}
		if err := b.Put(ctx, key("large.bin"), data, "application/octet-stream"); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := b.Get(ctx, key("large.bin"))
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("Get returned %d bytes, differing from the %d put", len(got), len(data))
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				k := key(fmt.Sprintf("concurrent/%d.json", i))
				want := fmt.Sprintf(`{"i":%d}`, i)
				if err := b.Put(ctx, k, []byte(want), "application/json"); err != nil {
					errs <- err
					return
				}
				got, err := b.Get(ctx, k)
				if err != nil {
					errs <- err
					return
				}
				if string(got) != want {
					errs <- fmt.Errorf("key %s: got %q, want %q", k, got, want)
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("StreamedWrite", func(t *testing.T) {
		k := key("stream/obj.feather")
		w := b.NewWriter(ctx, k, results.ObjectAttrs{ContentType: results.ContentTypeFeather, Metadata: map[string]string{results.MetaExpires: "2030-01-01T00:00:00Z"}})
		// 9 MiB in odd-sized writes: more than one upload chunk.
		want := make([]byte, 9<<20+17)
		for i := range want {
			want[i] = byte(i * 31)
		}
		for off := 0; off < len(want); off += 1<<20 + 3 {
			if _, err := w.Write(want[off:min(off+1<<20+3, len(want))]); err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
		if ok, _ := b.Exists(ctx, k); ok {
			t.Fatal("object visible before Close")
		}
		if err := w.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		o, err := b.Open(ctx, k, 0)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if o.Size() != int64(len(want)) || o.Attrs().ContentType != results.ContentTypeFeather || o.Attrs().Metadata[results.MetaExpires] != "2030-01-01T00:00:00Z" {
			t.Fatalf("Open: size %d attrs %+v", o.Size(), o.Attrs())
		}
		p := make([]byte, 1000)
		if n, err := o.ReadAt(p, 5<<20); err != nil || n != 1000 || !bytes.Equal(p, want[5<<20:5<<20+1000]) {
			t.Fatalf("ReadAt = %d, %v", n, err)
		}
		if n, err := o.ReadAt(p, int64(len(want)-10)); n != 10 || !errors.Is(err, io.EOF) || !bytes.Equal(p[:10], want[len(want)-10:]) {
			t.Fatalf("ReadAt past the end = %d, %v", n, err)
		}
		r, err := o.NewReader(ctx, 100, 50)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if !bytes.Equal(got, want[100:150]) {
			t.Fatal("NewReader range")
		}
		r, _ = o.NewReader(ctx, 0, -1)
		got, _ = io.ReadAll(r)
		r.Close()
		if !bytes.Equal(got, want) {
			t.Fatalf("NewReader whole: %d bytes", len(got))
		}
		// Abort leaves nothing.
		a := b.NewWriter(ctx, key("stream/aborted.json"), results.ObjectAttrs{ContentType: "application/json"})
		_, _ = a.Write([]byte("{}"))
		a.Abort()
		if ok, _ := b.Exists(ctx, key("stream/aborted.json")); ok {
			t.Fatal("aborted object visible")
		}
		if _, err := b.Open(ctx, key("stream/none"), 0); !errors.Is(err, results.ErrNotFound) {
			t.Fatalf("Open missing: %v", err)
		}
	})

	t.Run("WriteIfAbsent", func(t *testing.T) {
		k := key("once/obj.json")
		write := func(body string) error {
			w := b.NewWriter(ctx, k, results.ObjectAttrs{ContentType: "application/json", IfAbsent: true})
			if _, err := w.Write([]byte(body)); err != nil {
				w.Abort()
				return err
			}
			return w.Close()
		}
		if err := write(`{"first":1}`); err != nil {
			t.Fatalf("first IfAbsent write: %v", err)
		}
		if err := write(`{"second":2}`); !errors.Is(err, results.ErrExists) {
			t.Fatalf("second IfAbsent write: err = %v, want ErrExists", err)
		}
		if got, err := b.Get(ctx, k); err != nil || string(got) != `{"first":1}` {
			t.Fatalf("after a refused write: %q, %v (want the first object)", got, err)
		}
		// Concurrent writers of a new key: exactly one succeeds, and the
		// object is that writer's.
		k2 := key("once/race.json")
		const n = 6
		errc := make(chan error, n)
		for i := range n {
			go func(i int) {
				w := b.NewWriter(ctx, k2, results.ObjectAttrs{ContentType: "application/json", IfAbsent: true})
				if _, err := w.Write([]byte(fmt.Sprintf(`{"writer":%d}`, i))); err != nil {
					w.Abort()
					errc <- err
					return
				}
				errc <- w.Close()
			}(i)
		}
		won := 0
		for range n {
			switch err := <-errc; {
			case err == nil:
				won++
			case !errors.Is(err, results.ErrExists):
				t.Errorf("racing writer: %v", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d of %d racing IfAbsent writers succeeded, want 1", won, n)
		}
		// A plain write still replaces.
		w := b.NewWriter(ctx, k, results.ObjectAttrs{ContentType: "application/json"})
		_, _ = w.Write([]byte(`{"third":3}`))
		if err := w.Close(); err != nil {
			t.Fatalf("overwrite: %v", err)
		}
		if got, _ := b.Get(ctx, k); string(got) != `{"third":3}` {
			t.Fatalf("overwrite: %q", got)
		}
	})

	t.Run("Generations", func(t *testing.T) {
		// Every write makes a new generation; Open with a generation opens
		// exactly it, and refuses (ErrNotFound) once the key was written
		// again.
		k := key("gen/obj.json")
		write := func(body string) int64 {
			t.Helper()
			w := b.NewWriter(ctx, k, results.ObjectAttrs{ContentType: "application/json"})
			if _, err := w.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			return w.Generation()
		}
		g1 := write(`{"v":1}`)
		if g1 <= 0 {
			t.Fatalf("the writer's generation after Close is %d, want > 0", g1)
		}
		o, err := b.Open(ctx, k, 0)
		if err != nil || o.Generation() != g1 {
			t.Fatalf("Open(0): generation %v (%v), want the writer's %d", o, err, g1)
		}
		if o, err := b.Open(ctx, k, g1); err != nil || o.Generation() != g1 {
			t.Fatalf("Open(%d): %v", g1, err)
		}
		g2 := write(`{"v":2}`)
		if g2 <= 0 || g2 == g1 {
			t.Fatalf("rewritten: generation %d, want a new one (was %d)", g2, g1)
		}
		if _, err := b.Open(ctx, k, g1); !errors.Is(err, results.ErrNotFound) {
			t.Fatalf("Open of the replaced generation %d: %v, want ErrNotFound", g1, err)
		}
		o, err = b.Open(ctx, k, g2)
		if err != nil || o.Generation() != g2 {
			t.Fatalf("Open(%d): %v", g2, err)
		}
		r, _ := o.NewReader(ctx, 0, -1)
		got, _ := io.ReadAll(r)
		r.Close()
		if string(got) != `{"v":2}` {
			t.Fatalf("generation %d reads %q", g2, got)
		}
		if _, err := b.Open(ctx, key("gen/none.json"), g2); !errors.Is(err, results.ErrNotFound) {
			t.Fatalf("Open of a missing key with a generation: %v, want ErrNotFound", err)
		}
	})

	t.Run("CancelledContext", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := b.Put(cctx, key("cancelled.json"), []byte(`1`), "application/json"); err == nil {
			t.Error("Put with cancelled ctx: err = nil")
		}
		if _, err := b.Get(cctx, key("putget.bin")); err == nil {
			t.Error("Get with cancelled ctx: err = nil")
		}
		if _, err := b.Exists(cctx, key("putget.bin")); err == nil {
			t.Error("Exists with cancelled ctx: err = nil")
		}
	})
}
