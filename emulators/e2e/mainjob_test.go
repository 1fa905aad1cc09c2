package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The main job (scripts/demo runs the same playbook): every ISO 3166-2
// subdivision ends up in PostgreSQL exactly once.
func TestMainJobCountriesETL(t *testing.T) {
	RequireStack(t)
	iso := os.Getenv("NOETL_ISO_CODES_DIR")
	if iso == "" {
		iso = "/usr/share/iso-codes/json"
	}
	b, err := os.ReadFile(filepath.Join(iso, "iso_3166-2.json"))
	if err != nil {
		t.Fatal(err)
	}
	var data map[string][]any
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatal(err)
	}
	want := int64(len(data["3166-2"]))
	r := demo(t) // shared with the console's browser tests
	ok(t, r)
	s := step(t, r, "summary")
	if asInt(s["subdivisions_in_table"]) != want || asInt(s["subdivisions_loaded"]) != want || asInt(s["countries_processed"]) != 249 {
		t.Fatalf("summary = %v, want %d subdivisions", s, want)
	}
	loop := step(t, r, "load_subdivisions")["results"].([]any)
	if first := loop[0].(map[string]any); first["country"] != "AD" {
		t.Fatalf("loop results not in iteration order: first %v", first)
	}
}
