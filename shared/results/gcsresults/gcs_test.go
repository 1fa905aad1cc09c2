package gcsresults_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/gcsresults"
	"github.com/noetl/gcpengine/shared/results/resultstest"
	"github.com/noetl/gcpengine/shared/types"
)

const testBucket = "noetl-results-test"

// fakeGCS starts an in-process fake-gcs-server over http on a free
// loopback port with testBucket created, and returns a client for it.
func fakeGCS(t *testing.T) (*fakestorage.Server, *storage.Client) {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http",
		Host:   "127.0.0.1",
		Port:   0, // httptest picks a free port
		Writer: io.Discard,
	})
	if err != nil {
		t.Fatalf("fake-gcs-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testBucket})
	client := srv.Client()
	t.Cleanup(func() { _ = client.Close() })
	return srv, client
}

func TestGCSBackendSuite(t *testing.T) {
	_, client := fakeGCS(t)
	resultstest.BackendSuite(t, gcsresults.NewGCS(client, testBucket))
}

func TestGCSBackendDetails(t *testing.T) {
	srv, client := fakeGCS(t)
	ctx := context.Background()
	b := gcsresults.NewGCS(client, testBucket)
	if bn, ok := b.(results.BucketNamer); !ok || bn.Bucket() != testBucket {
		t.Fatalf("GCS backend is not a BucketNamer of %q", testBucket)
	}
	if err := b.Put(ctx, "k/ct.feather", []byte("ARROW1"), results.ContentTypeFeather); err != nil {
		t.Fatal(err)
	}
	obj, err := srv.GetObject(testBucket, "k/ct.feather")
	if err != nil {
		t.Fatal(err)
	}
	if obj.ContentType != results.ContentTypeFeather {
		t.Errorf("content type %q", obj.ContentType)
	}
	// A missing bucket is an error, but not ErrNotFound for the object.
	nb := gcsresults.NewGCS(client, "no-such-bucket")
	if err := nb.Put(ctx, "x", []byte("1"), "text/plain"); err == nil {
		t.Error("Put to a missing bucket: err = nil")
	}
	_, err = b.Get(ctx, "k/missing")
	if !errors.Is(err, results.ErrNotFound) || !strings.Contains(err.Error(), "gs://"+testBucket+"/k/missing") {
		t.Errorf("missing: err = %v", err)
	}
}

// TestStoreOverGCS: Offload → GCS (fake) → Resolve for both formats.
func TestStoreOverGCS(t *testing.T) {
	_, client := fakeGCS(t)
	s := &results.Store{
		Backend:   gcsresults.NewGCS(client, testBucket),
		Locator:   results.Locator{Env: "dev", Region: "us-central1", Cell: "c1"},
		InlineMax: 256,
		Now:       func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	}
	// An execution created on 2026-01-02 (its id says so; the key's date
	// is read from it, not from the time of the write).
	id := fmt.Sprint((time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli() - types.IDEpoch) << 22)
	c := types.ResultCoords{Tenant: "acme", Project: "etl", ExecutionID: id, Step: "load", Frame: 1, Attempt: 2}
	ctx := results.WithReader(context.Background(), results.Reader{Execution: id})

	table := make([]any, 100)
	for i := range table {
		table[i] = map[string]any{"id": int64(i), "v": float64(i) / 2, "s": "row", "ok": i%2 == 0}
	}
	doc := map[string]any{"status": "ok", "items": []any{map[string]any{"deep": strings.Repeat("d", 300)}}}

	tref, err := s.Offload(ctx, c, table)
	if err != nil {
		t.Fatal(err)
	}
	c.Row = 1
	dref, err := s.Offload(ctx, c, doc)
	if err != nil {
		t.Fatal(err)
	}
	tr := tref.(map[string]any)["$ref"].(map[string]any)
	if tr["bucket"] != testBucket || tr["format"] != "feather" ||
		!strings.HasPrefix(tr["key"].(string), "noetl/env=dev/region=us-central1/cell=c1/shard=") ||
		!strings.HasSuffix(tr["key"].(string), "/tenant=acme/project=etl/date=2026-01-02/execution="+id+"/results/load/1/0/2.feather") {
		t.Fatalf("table $ref = %#v", tr)
	}
	if ok, err := s.Exists(ctx, tr["key"].(string)); err != nil || !ok {
		t.Fatalf("Exists(table key) = %v, %v", ok, err)
	}
	// Each reference's crc32c is the one Cloud Storage keeps for its
	// object, in the JSON API's encoding.
	for _, ref := range []any{tref, dref} {
		in := ref.(map[string]any)["$ref"].(map[string]any)
		attrs, err := client.Bucket(testBucket).Object(in["key"].(string)).Attrs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], attrs.CRC32C)
		if got, want := in[results.CRC32CKey], base64.StdEncoding.EncodeToString(b[:]); got != want {
			t.Errorf("%s: crc32c %v, Cloud Storage's %s", in["key"], got, want)
		}
		if got := in[results.GenerationKey]; got != attrs.Generation || attrs.Generation == 0 {
			t.Errorf("%s: generation %v, Cloud Storage's %d", in["key"], got, attrs.Generation)
		}
	}

	got, err := s.Resolve(ctx, map[string]any{"t": tref, "d": dref})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"t": table, "d": map[string]any{"status": "ok", "items": []any{map[string]any{"deep": strings.Repeat("d", 300)}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Resolve over GCS mismatch")
	}
	// Replaced (another generation at the key): refused by generation,
	// the cache notwithstanding.
	s.Cache = nil
	dk := dref.(map[string]any)["$ref"].(map[string]any)["key"].(string)
	if err := s.Put(ctx, dk, []byte(`{"status":"ok","items":[]}`), results.ContentTypeJSON); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(ctx, dref); !errors.Is(err, results.ErrGeneration) || !errors.Is(err, results.ErrLost) {
		t.Fatalf("replaced object over GCS: %v, want ErrGeneration", err)
	}
}

// TestStoreOffloaderSuite runs the results.Offloader contract on the
// production Store over GCS (fake-gcs-server); shared/results runs it over
// the in-memory backend.
func TestStoreOffloaderSuite(t *testing.T) {
	resultstest.OffloaderSuite(t, func(t *testing.T, inlineMax int) results.Offloader {
		_, client := fakeGCS(t) // a fresh server: an empty tier
		return &results.Store{Backend: gcsresults.NewGCS(client, testBucket), InlineMax: inlineMax}
	})
}
