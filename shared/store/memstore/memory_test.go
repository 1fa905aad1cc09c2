package memstore_test

import (
	"testing"

	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/store/storetest"
)

// TestMemoryConformance runs the conformance suite over one Memory shared
// by every subtest (as the emulator is shared), so the suite's isolation by
// unique ids and the driver's locking are exercised too.
func TestMemoryConformance(t *testing.T) {
	m := memstore.NewMemory()
	storetest.Run(t, func(t *testing.T) store.Store { return m })
}
