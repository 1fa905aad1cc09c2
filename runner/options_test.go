package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/oidc"
)

// parse is the configuration env gives (nothing else set).
func parse(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	env["NOETL_SIGNING_KEY"] = "runner-test-key-0123456789abcdef0123456789"
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestToolOptionsFromSettings: the runner kinds get the interpreter
// (NOETL_PYTHON: kinds.Options.PythonBin, python.Options.Interpreter,
// whose effect runner/kinds/python's TestStdinIsEmptyAndConfigErrors
// shows), DuckDB's spill budget, warm workers and threads
// (NOETL_DUCKDB_MAX_TEMP_MB: duckdb.Options.MaxTempBytes, shown by
// runner/kinds/duckdb's TestMemoryHogIsLimit; NOETL_DUCKDB_WARM_WORKERS:
// duckdb.Options.Warm, shown by TestWarmWorkers; NOETL_DUCKDB_THREADS:
// duckdb.Options.Threads, shown by TestThreadsOption), the warm python
// interpreters (NOETL_PYTHON_WARM_INTERPRETERS: python.Options.Warm,
// shown by TestWarmInterpreterServesOneTask) forked from a zygote or not
// (NOETL_PYTHON_ZYGOTE: python.Options.Zygote, shown by TestWarmZygote)
// and the warm sandboxes' max
// age (NOETL_SANDBOX_WARM_MAX_AGE_S: python's and duckdb's WarmMaxAge,
// shown by TestPoolDiscardsDeadAndOld and TestWarmWorkerMaxAge) and the work
// directory of their temporary files (NOETL_RUNNER_WORK_DIR: the
// TempDir of python, shell and duckdb, whose spill directory
// TestPrivateSpill shows) and the data roots (NOETL_RUNNER_DATA_ROOTS:
// the kinds' and duckdb's DataRoots, shown by TestDataRootsAdmit) from
// the settings.
func TestToolOptionsFromSettings(t *testing.T) {
	cfg := parse(t, map[string]string{"NOETL_PYTHON": "/opt/py/bin/python3", "NOETL_DUCKDB_MAX_TEMP_MB": "7", "NOETL_DUCKDB_WARM_WORKERS": "3",
		"NOETL_DUCKDB_THREADS": "5", "NOETL_PYTHON_WARM_INTERPRETERS": "4", "NOETL_PYTHON_ZYGOTE": "false", "NOETL_SANDBOX_WARM_MAX_AGE_S": "42", "NOETL_RUNNER_WORK_DIR": "/srv/runner-work", "NOETL_RUNNER_DATA_ROOTS": "/srv/data"})
	o := toolOptions(cfg, nil, nil, nil, nil)
	if o.PythonBin != "/opt/py/bin/python3" || o.DuckDB.MaxTempBytes != 7<<20 || o.DuckDB.Warm != 3 || o.DuckDB.Threads != 5 {
		t.Fatalf("options: python %q, duckdb max temp %d bytes, warm %d, threads %d; want /opt/py/bin/python3, %d, 3, 5", o.PythonBin, o.DuckDB.MaxTempBytes, o.DuckDB.Warm, o.DuckDB.Threads, 7<<20)
	}
	if o.Python.Warm != 4 || o.Python.WarmMaxAge != 42*time.Second || o.DuckDB.WarmMaxAge != 42*time.Second || o.Python.Zygote {
		t.Fatalf("warm sandboxes: python %d interpreters (zygote %v), max age python %s, duckdb %s; want 4 (no zygote), 42s, 42s", o.Python.Warm, o.Python.Zygote, o.Python.WarmMaxAge, o.DuckDB.WarmMaxAge)
	}
	if o.Python.TempDir != "/srv/runner-work" || o.Shell.TempDir != "/srv/runner-work" || o.DuckDB.TempDir != "/srv/runner-work" {
		t.Fatalf("temporary files: python %q, shell %q, duckdb %q; want /srv/runner-work", o.Python.TempDir, o.Shell.TempDir, o.DuckDB.TempDir)
	}
	if len(o.DataRoots) != 1 || o.DataRoots[0] != "/srv/data" || len(o.DuckDB.DataRoots) != 1 || o.DuckDB.DataRoots[0] != "/srv/data" {
		t.Fatalf("data roots: kinds %v, duckdb %v; want [/srv/data]", o.DataRoots, o.DuckDB.DataRoots)
	}
	d := toolOptions(parse(t, map[string]string{}), nil, nil, nil, nil)
	if d.PythonBin == "/opt/py/bin/python3" || d.DuckDB.MaxTempBytes == 7<<20 || d.DuckDB.Warm == 3 || d.DuckDB.Threads == 5 || d.Python.TempDir == "/srv/runner-work" ||
		d.Python.Warm == 4 || d.Python.WarmMaxAge == 42*time.Second || !d.Python.Zygote {
		t.Fatalf("the defaults' options carry the test's settings: %+v", d.DuckDB)
	}
}

// TestVerifierFromSettings: the runner accepts the ID tokens that the
// JWK set NOETL_RUNNER_JWKS_FILE verifies, for NOETL_RUNNER_AUDIENCE
// from NOETL_RUNNER_INVOKER; a token of another key is refused.
func TestVerifierFromSettings(t *testing.T) {
	key, err := oidc.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := oidc.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := sig.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	jf := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jf, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	const aud, invoker = "https://runner.test", "noetl-execute@p.iam.gserviceaccount.com"
	cfg := parse(t, map[string]string{"NOETL_RUNNER_JWKS_FILE": jf, "NOETL_RUNNER_AUDIENCE": aud, "NOETL_RUNNER_INVOKER": invoker})
	v, err := tokenVerifier(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := sig.Token(invoker, aud, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifyCaller(context.Background(), "Bearer "+tok); err != nil {
		t.Fatalf("a token of the key set's key: %v", err)
	}
	other, _ := oidc.GenerateKey()
	otherSig, _ := oidc.NewSigner(other)
	bad, _ := otherSig.Token(invoker, aud, time.Now())
	if err := v.VerifyCaller(context.Background(), "Bearer "+bad); err == nil {
		t.Fatal("a token of another key was accepted")
	}
}
