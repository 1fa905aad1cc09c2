package main

import (
	"testing"

	"github.com/noetl/gcpengine/shared/config"
)

// DuckDB's memory_limit in a worker stays under the room's memory, so
// that DuckDB spills before its control group kills it.
func TestDuckDBMemoryCap(t *testing.T) {
	for _, c := range []struct{ duck, room, want int }{
		{1024, 1024, 768}, // the defaults
		{256, 1024, 256},  // already under
		{4096, 0, 4096},   // no room limit
		{0, 2048, 1536},
	} {
		var cfg config.Config
		cfg.DuckDB.MemoryMB, cfg.Sandbox.MemoryMB = c.duck, c.room
		if got := duckDBMemoryMB(cfg); got != c.want {
			t.Errorf("duckdb %d MiB in a room of %d MiB: %d, want %d", c.duck, c.room, got, c.want)
		}
	}
}
