package gcsresults_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/gcsresults"
)

// failingGCS returns a GCS backend on a server that answers every request
// with status and a Google API error body.
func failingGCS(t *testing.T, status int) results.Backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error": {"code": %d, "message": "injected %d", "errors": [{"message": "injected", "reason": "injected"}]}}`, status, status)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL, "http://"))
	client, err := storage.NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return gcsresults.NewGCS(client, testBucket)
}

// TestGCSErrorCodes: the GCS driver's errors carry the code of the HTTP
// status GCS answered (errs.FromHTTP, through googleapi.Error), for Put,
// Get and Exists; a missing object is results.ErrNotFound (code NotFound,
// not retried), and Exists of one is false without error.
func TestGCSErrorCodes(t *testing.T) {
	ctx := context.Background()
	for _, status := range []int{400, 401, 403, 404, 409, 412, 429, 500, 501, 502, 503, 504} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			b := failingGCS(t, status)
			want := errs.FromHTTP(status)
			put := b.Put(ctx, "k/x.json", []byte(`1`), "application/json")
			if got := errs.CodeOf(put); got != want {
				t.Errorf("Put: %v: code %s, want %s", put, got, want)
			}
			_, get := b.Get(ctx, "k/x.json")
			ok, exists := b.Exists(ctx, "k/x.json")
			if status == http.StatusNotFound {
				if !errors.Is(get, results.ErrNotFound) || !errs.Permanent(get) {
					t.Errorf("Get of a missing object: %v, want ErrNotFound (permanent)", get)
				}
				if ok || exists != nil {
					t.Errorf("Exists of a missing object = %v, %v", ok, exists)
				}
				return
			}
			if got := errs.CodeOf(get); got != want {
				t.Errorf("Get: %v: code %s, want %s", get, got, want)
			}
			if got := errs.CodeOf(exists); got != want || ok {
				t.Errorf("Exists: %v, %v: code %s, want %s", ok, exists, got, want)
			}
			if errs.Retryable(put) != errs.PolicyOf(want).Retry {
				t.Errorf("Put retryable = %v", errs.Retryable(put))
			}
		})
	}
}
