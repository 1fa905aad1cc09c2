package results_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// TestFeatherFloat32: a float32 cell comes back from a Feather table as it
// would from JSON (the engine's number rule: its shortest decimal form),
// so a table's value does not depend on the format the tier picked.
func TestFeatherFloat32(t *testing.T) {
	ctx := results.WithReader(context.Background(), results.Reader{Execution: "e"})
	s := &results.Store{Backend: results.NewMemory(), InlineMax: 1}
	rows := []any{map[string]any{"f": float32(0.1), "i": 1}, map[string]any{"f": float32(2.5), "i": 2}}
	ref, err := s.Offload(ctx, types.ResultCoords{ExecutionID: "e", Step: "s", Attempt: 1}, rows)
	if err != nil {
		t.Fatal(err)
	}
	if f := ref.(map[string]any)[results.RefKey].(map[string]any)["format"]; f != results.FormatFeather {
		t.Fatalf("format %v, want feather", f)
	}
	got, err := s.Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{map[string]any{"f": 0.1, "i": int64(1)}, map[string]any{"f": 2.5, "i": int64(2)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resolved %#v, want %#v", got, want)
	}
}
