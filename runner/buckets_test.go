package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/config"
)

// The runner's gcs kind refuses every bucket of the engine's results by
// name: the results bucket, and each cell's bucket of a cell map.
func TestReservedBuckets(t *testing.T) {
	got, err := reservedBuckets(config.Config{ResultsBucket: "noetl-results"})
	if err != nil || !reflect.DeepEqual(got, []string{"noetl-results"}) {
		t.Fatalf("single cell: %v %v", got, err)
	}
	f := filepath.Join(t.TempDir(), "cells.yaml")
	if err := os.WriteFile(f, []byte(`cells:
  - {name: c1, bucket: noetl-results, region: us-central1}
  - {name: c2, bucket: noetl-results-eu, region: europe-west1}
placements:
  - {since: 2026-01-01T00:00:00Z, cell: c1, shards: {3: c2}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = reservedBuckets(config.Config{ResultsBucket: "noetl-results", ResultCellsFile: f})
	if err != nil || !reflect.DeepEqual(got, []string{"noetl-results", "noetl-results-eu"}) {
		t.Fatalf("two cells: %v %v", got, err)
	}
	if _, err := reservedBuckets(config.Config{ResultsBucket: "noetl-results", ResultCellsFile: filepath.Join(t.TempDir(), "missing.yaml")}); err == nil {
		t.Fatal("a missing cell map was accepted")
	}
}
