package schema

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
)

var update = flag.Bool("update", false, "rewrite the published schema (schema/playbook.schema.json) from Generate")

// published is the schema the repository publishes for editors.
const published = "../../../schema/playbook.schema.json"

// TestPublishedSchemaIsFresh fails when the published schema differs from
// Generate's; regenerate it with
//
//	go test ./shared/dsl/schema -run TestPublishedSchemaIsFresh -update
func TestPublishedSchemaIsFresh(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Generate(); !bytes.Equal(want, again) {
		t.Fatal("Generate is not deterministic")
	}
	if *update {
		if err := os.WriteFile(published, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(published)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: regenerate it with go test ./shared/dsl/schema -run TestPublishedSchemaIsFresh -update", published)
	}
}

// TestSchemaCompiles compiles the schema with the validator, which checks
// it against the draft-07 meta-schema.
func TestSchemaCompiles(t *testing.T) {
	compiledSchema(t)
	b, _ := Generate()
	if !bytes.Contains(b, []byte(`"$schema": "`+Draft+`"`)) || bytes.Contains(b, []byte("$defs")) {
		t.Fatal("the schema does not declare draft-07 throughout")
	}
}

// confDir is the repository's copy of NoETL's conformance playbooks (the
// source shared/dsl's conformance tests read).
const confDir = "../../../emulators/e2e/testdata/conformance"

// corpus lists the YAML files of a set, sorted.
func corpus(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("no playbooks under %s: %v", dir, err)
	}
	sort.Strings(out)
	return out
}

// schemaLooser lists the playbooks the schema accepts and the validator
// rejects, with why: what the schema cannot say (it is structural).
var schemaLooser = map[string]string{}

// TestSchemaAgreesWithValidator validates every playbook of both
// conformance sets and of examples/ with the schema and with the loader
// (what `noetl validate` runs): the schema must accept every playbook the
// validator accepts; the playbooks it accepts and the validator rejects
// must be exactly those of schemaLooser. kind: Subscription resources are
// not playbooks (their own loader validates them) and are skipped.
func TestSchemaAgreesWithValidator(t *testing.T) {
	sets := []struct{ name, dir string }{
		{"noetl", filepath.Join(confDir, "noetl")},
		{"noetl-v2", filepath.Join(confDir, "noetl-v2")},
		{"examples", "../../../examples"},
	}
	seenLooser := map[string]bool{}
	for _, set := range sets {
		var files, schemaOK, loaderOK, skipped int
		for _, f := range corpus(t, set.dir) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if dsl.ResourceKind(src) == "Subscription" {
				skipped++
				continue
			}
			files++
			rel := f
			if r, err := filepath.Rel(confDir, f); err == nil && !strings.HasPrefix(r, "..") {
				rel = filepath.ToSlash(r)
			} else {
				rel = filepath.ToSlash(strings.TrimPrefix(f, "../../../"))
			}
			_, lerr := dsl.Load(src, rel)
			serr := schemaCheck(t, src)
			if serr == nil {
				schemaOK++
			}
			if lerr == nil {
				loaderOK++
			}
			switch {
			case lerr == nil && serr != nil:
				t.Errorf("%s: the validator accepts it, the schema rejects it:\n%v", rel, serr)
			case lerr != nil && serr == nil:
				seenLooser[rel] = true
				why, known := schemaLooser[rel]
				if !known {
					t.Errorf("%s: the schema accepts it, the validator rejects it (add it to schemaLooser with why if the schema cannot say it):\n%v", rel, lerr)
				}
				t.Logf("%s: schema accepts, validator rejects (%s): %v", rel, why, firstLine(lerr))
			}
		}
		t.Logf("%s: %d playbooks (%d subscription resources skipped): schema accepts %d, validator accepts %d", set.name, files, skipped, schemaOK, loaderOK)
	}
	for f := range schemaLooser {
		if !seenLooser[f] {
			t.Errorf("%s is listed in schemaLooser but schema and validator now agree on it: remove it", f)
		}
	}
}

// firstLine is the first line of err's message.
func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// TestExampleDeclaresSchema: the example the README points editors at
// names the published schema by a path that resolves from it.
func TestExampleDeclaresSchema(t *testing.T) {
	const example = "../../../examples/countries_etl.yaml"
	src, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(src), "\n")
	target, ok := strings.CutPrefix(first, "# yaml-language-server: $schema=")
	if !ok {
		t.Fatalf("%s: first line %q is not a yaml-language-server schema modeline", example, first)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(example), target)); err != nil {
		t.Fatalf("%s names %s, which does not resolve: %v", example, target, err)
	}
}
