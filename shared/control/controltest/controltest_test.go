package controltest_test

import (
	"testing"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/resultstest"
)

// TestOffloaderConformance holds the fake results tier to the contract
// results.Store passes (shared/results offloader_test.go).
func TestOffloaderConformance(t *testing.T) {
	resultstest.OffloaderSuite(t, func(t *testing.T, inlineMax int) results.Offloader {
		return &controltest.Offloader{InlineMax: inlineMax}
	})
}
