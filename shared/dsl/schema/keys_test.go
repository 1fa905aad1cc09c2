package schema

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
)

// TestDocumentKeysMatchLoader: each mapping's properties in the schema are
// exactly the keys the loader reads there (dsl.DocumentKeys), and each
// task kind's are the common task keys plus the kind's (dsl.KindKeys).
func TestDocumentKeysMatchLoader(t *testing.T) {
	b, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties  map[string]json.RawMessage `json:"properties"`
		Definitions map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]json.RawMessage) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	def := map[string]string{"step": "Step", "output": "Output", "output.store": "Store", "output.accumulate": "Accumulate",
		"loop.spec.frame": "Frame", "then": "Then", "retry": "RetryBlock", "executor.spec": "ExecutorSpec"}
	for where, want := range dsl.DocumentKeys() {
		var got []string
		if where == "root" {
			got = keys(doc.Properties)
		} else {
			d, ok := doc.Definitions[def[where]]
			if !ok {
				t.Errorf("%s: no definition %q", where, def[where])
				continue
			}
			got = keys(d.Properties)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: schema keys %v, loader keys %v", where, got, want)
		}
	}
	for _, kind := range dsl.Kinds {
		want := map[string]bool{"kind": true}
		for k := range dsl.IgnoredTaskKeys {
			want[k] = true
		}
		for _, k := range dsl.CommonTaskKeys {
			want[k] = true
		}
		for _, k := range dsl.KindKeys[kind] {
			want[k] = true
		}
		switch kind {
		case "postgres":
			want["with"] = true
		case "workbook":
			want["name"] = true
		}
		var w []string
		for k := range want {
			w = append(w, k)
		}
		sort.Strings(w)
		if got := keys(doc.Definitions["Task_"+kind].Properties); !reflect.DeepEqual(got, w) {
			t.Errorf("kind %s: schema keys %v, loader keys %v", kind, got, w)
		}
	}
}
