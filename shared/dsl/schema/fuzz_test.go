package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
)

// FuzzSchemaAcceptsWhatLoaderAccepts checks the schema's promise: every
// document the loader accepts conforms to the schema. Seeds: both
// conformance sets and examples/.
//
//	go test ./shared/dsl/schema -run '^$' -fuzz FuzzSchemaAcceptsWhatLoaderAccepts -fuzztime 60s -parallel 2
func FuzzSchemaAcceptsWhatLoaderAccepts(f *testing.F) {
	for _, pattern := range []string{confDir + "/noetl/*.yaml", confDir + "/noetl-v2/playbooks/*/*.yaml", confDir + "/noetl-v2/playbooks/*.yaml", "../../../examples/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	compiledSchema(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 || dsl.ResourceKind(src) == "Subscription" {
			return
		}
		if _, err := dsl.Load(src, "fuzz.yaml"); err != nil {
			return
		}
		if err := schemaCheck(t, src); err != nil {
			t.Fatalf("the loader accepts it, the schema rejects it:\n%s\n---\n%v", src, err)
		}
	})
}
