package wiring

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// TestResultStoreFromConfig: the results tier the functions build carries
// the deployment's tenant, project and env into URIs and keys, the cell
// map with a backend per cell bucket (the results bucket's cell shares the
// home backend), the instance cache, the whole-read bound and the read
// check; a bad cell map or read check fails the build with the knob's
// name.
func TestResultStoreFromConfig(t *testing.T) {
	dir := t.TempDir()
	cellsFile := filepath.Join(dir, "cells.yaml")
	if err := os.WriteFile(cellsFile, []byte("cells:\n  - {name: c1, bucket: noetl-results, region: us-central1}\n  - {name: c2, bucket: acme-c2, region: europe-west1}\nplacements:\n  - {cell: c1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{ResultsBucket: "noetl-results", ResultInlineMax: 1000, Tenant: "acme", TenantProject: "etl", ResultEnv: "prod",
		ResultCellsFile: cellsFile, ResultCacheMB: 8, ResultMaterializeMaxMB: 3, ResultReadCheck: "sha256"}
	opened := map[string]results.Backend{}
	st, err := ResultStore(cfg, func(bucket string) results.Backend {
		b := results.NewMemory()
		opened[bucket] = b
		return b
	})
	if err != nil {
		t.Fatal(err)
	}
	id := "1234567890123456789"
	c := types.ResultCoords{ExecutionID: id, Step: "s", Attempt: 1}
	if uri := st.LogicalURI(c); !strings.HasPrefix(uri, "noetl://acme/etl/results/"+id+"/") {
		t.Fatalf("uri %s", uri)
	}
	if key := st.PhysicalKey(c, "json"); !strings.HasPrefix(key, "noetl/env=prod/region=us-central1/cell=c1/") || !strings.Contains(key, "/tenant=acme/project=etl/") {
		t.Fatalf("key %s", key)
	}
	if len(opened) != 2 || st.CellBackends["c1"] != opened["noetl-results"] || st.CellBackends["c2"] != opened["acme-c2"] || st.Backend != opened["noetl-results"] {
		t.Fatalf("backends %v, cells %v", opened, st.CellBackends)
	}
	if st.Cache == nil || st.MaterializeMax != 3<<20 || st.InlineMax != 1000 || st.ReadCheck != results.ReadCheckSHA256 {
		t.Fatalf("cache %v, materialize max %d, inline %d, read check %q", st.Cache, st.MaterializeMax, st.InlineMax, st.ReadCheck)
	}

	cfg.ResultCellsFile, cfg.ResultCacheMB, cfg.ResultReadCheck = "", 0, ""
	st, err = ResultStore(cfg, func(string) results.Backend { return results.NewMemory() })
	if err != nil || st.Cells != nil || st.Cache != nil || st.ReadCheck != results.ReadCheckCRC32C {
		t.Fatalf("single cell, no cache: %+v, %v", st, err)
	}

	// The knob's values are exactly the tier's read checks, each accepted.
	knob, _ := config.ByEnv("NOETL_RESULT_READ_CHECK")
	if !slices.Equal(knob.Enum, results.ReadChecks) || knob.Default != results.ReadChecks[0] {
		t.Errorf("NOETL_RESULT_READ_CHECK enum %v default %q, the tier's read checks %v (default first)", knob.Enum, knob.Default, results.ReadChecks)
	}
	for _, c := range results.ReadChecks {
		cfg.ResultReadCheck = c
		if st, err := ResultStore(cfg, func(string) results.Backend { return results.NewMemory() }); err != nil || string(st.ReadCheck) != c {
			t.Errorf("read check %q: %v, %v", c, st, err)
		}
	}
	cfg.ResultReadCheck = "md5"
	if _, err := ResultStore(cfg, func(string) results.Backend { return results.NewMemory() }); err == nil || !strings.Contains(err.Error(), "NOETL_RESULT_READ_CHECK") {
		t.Fatalf("unknown read check: %v", err)
	}
	cfg.ResultReadCheck = ""

	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte("cells: []\nplacements: []\n"), 0o600)
	cfg.ResultCellsFile = bad
	if _, err := ResultStore(cfg, func(string) results.Backend { return results.NewMemory() }); err == nil || !strings.Contains(err.Error(), "NOETL_RESULT_CELLS_FILE") {
		t.Fatalf("bad cell map: %v", err)
	}
}

// NOETL_RESULT_READ_CHECK takes effect on reads: through the store the
// functions build from it, a reference whose sha256 does not match its
// object reads under crc32c (the default: the sha256 is not computed) and
// is refused under sha256; one whose crc32c does not match is refused
// under crc32c and reads under sha256.
func TestReadCheckKnobTakesEffect(t *testing.T) {
	ctx := results.WithReader(context.Background(), results.Reader{Execution: "1234567890123456789"})
	for _, c := range []struct {
		knob    string // the setting's value ("" is the default)
		field   string // the reference's digest made wrong
		wrong   string
		refused bool
	}{
		{"", results.DigestKey, strings.Repeat("ab", 32), false},
		{"", results.CRC32CKey, "AAAAAA==", true},
		{"crc32c", results.DigestKey, strings.Repeat("ab", 32), false},
		{"sha256", results.DigestKey, strings.Repeat("ab", 32), true},
		{"sha256", results.CRC32CKey, "AAAAAA==", false},
	} {
		cfg := config.Config{ResultsBucket: "noetl-results", ResultInlineMax: 10, ResultMaterializeMaxMB: 4, ResultReadCheck: c.knob}
		st, err := ResultStore(cfg, func(string) results.Backend { return results.NewMemory() })
		if err != nil {
			t.Fatal(err)
		}
		v, err := st.Offload(ctx, types.ResultCoords{ExecutionID: "1234567890123456789", Step: "s", Attempt: 1}, map[string]any{"rows": strings.Repeat("x", 200)})
		if err != nil {
			t.Fatal(err)
		}
		ref := v.(map[string]any)
		ref[results.RefKey].(map[string]any)[c.field] = c.wrong
		_, err = st.Resolve(ctx, ref)
		switch {
		case c.refused && !errors.Is(err, results.ErrDigest):
			t.Errorf("NOETL_RESULT_READ_CHECK=%q, wrong %s: %v, want ErrDigest", c.knob, c.field, err)
		case !c.refused && err != nil:
			t.Errorf("NOETL_RESULT_READ_CHECK=%q, wrong %s (not read by this check): %v", c.knob, c.field, err)
		}
	}
}
