package results_test

import (
	"testing"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/resultstest"
)

// TestStoreOffloaderSuite runs the results.Offloader contract on the
// production Store, over the in-memory backend and over GCS
// (fake-gcs-server).
func TestStoreOffloaderSuite(t *testing.T) {
	t.Run("Memory", func(t *testing.T) {
		resultstest.OffloaderSuite(t, func(t *testing.T, inlineMax int) results.Offloader {
			return &results.Store{Backend: results.NewMemory(), InlineMax: inlineMax}
		})
	})
	t.Run("GCS", func(t *testing.T) {
		resultstest.OffloaderSuite(t, func(t *testing.T, inlineMax int) results.Offloader {
			_, client := fakeGCS(t) // a fresh server: an empty tier
			return &results.Store{Backend: results.NewGCS(client, testBucket), InlineMax: inlineMax}
		})
	})
}
