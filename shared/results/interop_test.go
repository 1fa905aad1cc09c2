package results_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// arrowJS returns the directory of the independent Arrow implementation
// (emulators/arrowjs with its node_modules: scripts/test installs it with
// npm and sets NOETL_ARROWJS_DIR); the test is skipped, saying why, when
// it is not installed.
func arrowJS(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("NOETL_ARROWJS_DIR")
	if dir == "" {
		t.Skip("NOETL_ARROWJS_DIR is not set: scripts/test installs emulators/arrowjs (npm) and runs this test")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "apache-arrow")); err != nil {
		t.Fatalf("NOETL_ARROWJS_DIR=%s has no node_modules/apache-arrow (npm install there): %v", dir, err)
	}
	return dir
}

func node(t *testing.T, dir, script, file string) []byte {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(dir, script), file)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("node %s: %v\n%s", script, err, msg)
	}
	return out
}

// TestFeatherInteropArrowJS: the tier's Feather files are Arrow that
// another implementation reads (NoETL result storage RFC §5: readable by
// pyarrow and other Arrow implementations): Apache Arrow's JavaScript
// library reads a table the tier stored, uncompressed and with each
// output.store.compression (lz4, zstd: decoded by independent JavaScript
// codecs) — ints, floats, strings, nulls, a nested struct and a list, as
// Arrow types — with the
// same values; and the tier reads back a file that library wrote
// (dictionary-encoded strings, a list column).
func TestFeatherInteropArrowJS(t *testing.T) {
	dir := arrowJS(t)
	ctx := results.WithReader(context.Background(), results.Reader{Execution: "e-interop"})
	s := &results.Store{Backend: results.NewMemory(), InlineMax: 1}
	rows := []any{
		map[string]any{"zeta": int64(1), "alpha": "one", "score": 0.5, "tags": []any{"a", "b"}, "geo": map[string]any{"lat": 1.5, "lon": -2.25}},
		map[string]any{"zeta": int64(2), "alpha": nil, "score": 1.25, "tags": []any{}, "geo": map[string]any{"lat": 3.0, "lon": 4.0}},
		map[string]any{"zeta": int64(3), "alpha": "three", "score": -7.0, "tags": []any{"c"}, "geo": map[string]any{"lat": 0.0, "lon": 0.0}},
	}
	for _, compression := range []string{"", "lz4", "zstd"} {
		ref, err := s.OffloadWith(ctx, types.ResultCoords{ExecutionID: "e-interop", Step: "s" + compression, Attempt: 1}, rows, results.OffloadOptions{Limit: -1, Compression: compression})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.ParseRef(ref)
		if err != nil || r.Format != results.FormatFeather {
			t.Fatalf("stored as %v (%v), want feather", r.Format, err)
		}
		o, err := s.Backend.Open(ctx, r.Key, 0)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := o.NewReader(ctx, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "engine"+compression+".arrow")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Fields []struct{ Name, Type string }
			Rows   []map[string]any
		}
		if err := json.Unmarshal(node(t, dir, "read.mjs", file), &got); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range got.Fields {
			names = append(names, f.Name)
		}
		t.Logf("arrow js reads fields %v (compression %q)", got.Fields, compression)
		// Rows given as objects carry no column order: the tier sorts their
		// columns by name (a result that names its columns keeps their order:
		// TestOffloadEnvelopeKeepsColumnOrder); the types are Arrow's own
		// (struct, list, utf8).
		if !reflect.DeepEqual(names, []string{"alpha", "geo", "score", "tags", "zeta"}) {
			t.Fatalf("arrow js reads columns %v", names)
		}
		types := map[string]string{}
		for _, f := range got.Fields {
			types[f.Name] = f.Type
		}
		if types["geo"] != "Struct<{lat:Float64, lon:Float64}>" || types["tags"] != "List<Utf8>" || types["zeta"] != "Int64" || types["alpha"] != "Utf8" {
			t.Fatalf("arrow js reads types %v", types)
		}
		want := []map[string]any{
			{"zeta": "1", "alpha": "one", "score": 0.5, "tags": []any{"a", "b"}, "geo": map[string]any{"lat": 1.5, "lon": -2.25}},
			{"zeta": "2", "alpha": nil, "score": 1.25, "tags": []any{}, "geo": map[string]any{"lat": 3.0, "lon": 4.0}},
			{"zeta": "3", "alpha": "three", "score": -7.0, "tags": []any{"c"}, "geo": map[string]any{"lat": 0.0, "lon": 0.0}},
		}
		if !reflect.DeepEqual(got.Rows, want) {
			t.Fatalf("arrow js reads rows\n%v\nwant\n%v", got.Rows, want)
		}
	}

	jsFile := filepath.Join(t.TempDir(), "js.arrow")
	node(t, dir, "write.mjs", jsFile)
	b, err := os.ReadFile(jsFile)
	if err != nil {
		t.Fatal(err)
	}
	back, err := results.DecodeFeather(b)
	if err != nil {
		t.Fatalf("the tier cannot read arrow js's file: %v", err)
	}
	wantBack := []any{
		map[string]any{"id": int64(1), "name": "one", "score": 0.5, "tags": []any{"a", "b"}},
		map[string]any{"id": int64(2), "name": "two", "score": 1.5, "tags": []any{}},
		map[string]any{"id": int64(3), "name": nil, "score": 2.5, "tags": []any{"c"}},
	}
	if !reflect.DeepEqual(back, wantBack) {
		t.Fatalf("the tier reads arrow js's file as\n%v\nwant\n%v", back, wantBack)
	}
}
