package controltest_test

import (
	"sync/atomic"
	"testing"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/store/storetest"
)

// TestFlakyStoreConformance holds the fault-injecting wrapper to the store
// contract its drivers pass (storetest): while Fail injects nothing, a
// FlakyStore is the store it wraps. Fail is consulted on the calls it
// wraps (counted: positive evidence that the suite went through them).
func TestFlakyStoreConformance(t *testing.T) {
	m := memstore.NewMemory()
	var consulted atomic.Int64
	t.Run("suite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			return &controltest.FlakyStore{Store: m, Fail: func(op, executionID string) error {
				consulted.Add(1)
				return nil
			}}
		})
	})
	if consulted.Load() == 0 {
		t.Fatal("the suite never went through FlakyStore's wrapped calls")
	}
	t.Logf("Fail consulted %d times", consulted.Load())
}
