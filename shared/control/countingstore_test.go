package control_test

import (
	"testing"

	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/store/storetest"
)

// TestCountingStoreConformance holds the checkpoint-counting wrapper the
// loop tests use to the store contract (storetest), so that what they
// count is a store that behaves as the drivers do; the count must move
// (positive evidence that the suite's checkpoints went through it).
func TestCountingStoreConformance(t *testing.T) {
	cs := &countingStore{Store: memstore.NewMemory()}
	t.Run("suite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store { return cs })
	})
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.checkpoints == 0 {
		t.Fatal("no applied checkpoint was counted: the suite did not go through the wrapper")
	}
}
