package results_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/resultstest"
	"github.com/noetl/gcpengine/shared/types"
)

// TestStoreOffloaderSuite runs the results.Offloader contract on the
// production Store over the in-memory backend (shared/results/gcsresults
// runs it over GCS).
func TestStoreOffloaderSuite(t *testing.T) {
	resultstest.OffloaderSuite(t, func(t *testing.T, inlineMax int) results.Offloader {
		return &results.Store{Backend: results.NewMemory(), InlineMax: inlineMax}
	})
}

// TestMemoryBackendSuite runs the Backend contract on the in-memory
// backend (shared/results/gcsresults runs it on the GCS driver).
func TestMemoryBackendSuite(t *testing.T) {
	resultstest.BackendSuite(t, results.NewMemory())
}

// TestResolveMissingIsPermanent: a reference to an object that is gone
// resolves to an error of code NotFound, which the engine dead-letters at
// once (it was an unclassified error, retried until the DLQ).
func TestResolveMissingIsPermanent(t *testing.T) {
	ctx := results.WithReader(context.Background(), results.Reader{Execution: "e-gone"})
	s := &results.Store{Backend: results.NewMemory(), InlineMax: 1}
	ref, err := s.Offload(ctx, types.ResultCoords{ExecutionID: "e-gone", Step: "s", Attempt: 1}, map[string]any{"big": strings.Repeat("x", 64)})
	if err != nil || ref == nil {
		t.Fatalf("Offload: %v %v", ref, err)
	}
	s2 := &results.Store{Backend: results.NewMemory(), InlineMax: 1} // another tier: the object is not there
	_, err = s2.Resolve(ctx, ref)
	if !errors.Is(err, results.ErrNotFound) || !errs.Is(err, errs.NotFound) || errs.Retryable(err) {
		t.Fatalf("Resolve of a missing object: %v (code %s), want a permanent NotFound", err, errs.CodeOf(err))
	}
}
