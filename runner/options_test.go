package main

import (
	"testing"

	"github.com/noetl/gcpengine/shared/config"
)

// TestToolOptionsFromSettings: the runner kinds get the interpreter
// (NOETL_PYTHON: kinds.Options.PythonBin, python.Options.Interpreter,
// whose effect shared/tools/python's TestStdinIsEmptyAndConfigErrors
// shows), DuckDB's spill budget and warm workers
// (NOETL_DUCKDB_MAX_TEMP_MB: duckdb.Options.MaxTempBytes, shown by
// shared/tools/duckdb's TestMemoryHogIsLimit; NOETL_DUCKDB_WARM_WORKERS:
// duckdb.Options.Warm, shown by TestWarmWorkers) and threads
// (NOETL_DUCKDB_THREADS: duckdb.Options.Threads, shown by
// TestThreadsOption) from the settings.
func TestToolOptionsFromSettings(t *testing.T) {
	env := map[string]string{"NOETL_SIGNING_KEY": "runner-test-key-0123456789abcdef0123456789",
		"NOETL_PYTHON": "/opt/py/bin/python3", "NOETL_DUCKDB_MAX_TEMP_MB": "7", "NOETL_DUCKDB_WARM_WORKERS": "3", "NOETL_DUCKDB_THREADS": "5"}
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := toolOptions(cfg, t.TempDir(), nil, nil, nil, nil)
	if o.PythonBin != "/opt/py/bin/python3" || o.DuckDB.MaxTempBytes != 7<<20 || o.DuckDB.Warm != 3 || o.DuckDB.Threads != 5 {
		t.Fatalf("options: python %q, duckdb max temp %d bytes, warm %d, threads %d; want /opt/py/bin/python3, %d, 3, 5", o.PythonBin, o.DuckDB.MaxTempBytes, o.DuckDB.Warm, o.DuckDB.Threads, 7<<20)
	}
	def, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok && k == "NOETL_SIGNING_KEY" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := toolOptions(def, t.TempDir(), nil, nil, nil, nil); d.PythonBin == "/opt/py/bin/python3" || d.DuckDB.MaxTempBytes == 7<<20 || d.DuckDB.Warm == 3 || d.DuckDB.Threads == 5 {
		t.Fatalf("the defaults' options carry the test's settings: %+v", d.DuckDB)
	}
}
