// Package schema generates the JSON Schema of the playbook DSL (draft-07,
// the draft editors' YAML language servers support) from the written
// shape of a playbook (document.go, unions.go) and each task kind's typed
// spec (shared/toolspec, read in tools.go).
//
// The schema is structural: it accepts every playbook the loader
// (shared/dsl Load) accepts, and rejects the unknown keys and wrong shapes
// the loader rejects, but not what needs the whole playbook (arcs to
// unknown steps, duplicate names, template syntax, ...): `noetl validate`
// remains the authority. Its descriptions are the doc comments of the
// types of document.go, read from this package's embedded sources.
package schema

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
)

// Draft is the JSON Schema draft the schema declares.
const Draft = "http://json-schema.org/draft-07/schema#"

//go:embed document.go unions.go
var sources embed.FS

// Generate returns the JSON Schema of a playbook, indented JSON ending in
// a newline, the same bytes on every call.
func Generate() ([]byte, error) {
	comments, err := docComments()
	if err != nil {
		return nil, err
	}
	r := &jsonschema.Reflector{
		Anonymous:                  true,
		RequiredFromJSONSchemaTags: true,
		Mapper:                     mapType,
		LookupComment: func(t reflect.Type, field string) string {
			if field == "" {
				return comments[t.Name()]
			}
			return comments[t.Name()+"."+field]
		},
	}
	top := *r
	top.ExpandedStruct = true
	root := top.Reflect(&Playbook{})
	defs := root.Definitions
	// The types reached only through the unions' definitions.
	for _, v := range []any{Arc{}, NextBlock{}, LegacyBranch{}, RetryBlock{}, CollectBlock{}, SelectEntry{}, WorkbookEntry{}, Then{}, AdmitThen{}, Script{}, CommonTask{}} {
		for name, d := range r.Reflect(v).Definitions {
			defs[name] = d
		}
	}
	for _, u := range unions {
		defs[u.name] = u.def()
	}
	common := defs["CommonTask"]
	delete(defs, "CommonTask")
	for name, d := range taskDefinitions(common) {
		defs[name] = d
	}
	root.Version = Draft
	root.Title = "NoETL playbook"
	root.Description = "A NoETL playbook (apiVersion noetl.io/v2, kind Playbook) as this engine's loader reads it. Structural: `noetl validate` also checks what needs the whole playbook (arc targets, names, templates)."
	walk(root, refSiblings)
	walk(root, nullableDescription)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	// Draft-07 names the definitions "definitions" ($defs is 2019-09).
	out := bytes.ReplaceAll(b.Bytes(), []byte(`"$defs"`), []byte(`"definitions"`))
	out = bytes.ReplaceAll(out, []byte(`"#/$defs/`), []byte(`"#/definitions/`))
	return out, nil
}

// refSiblings moves a $ref that has sibling keywords (a description, a
// nullable wrapper's ...) under allOf: draft-07 ignores the siblings of
// $ref.
func refSiblings(s *jsonschema.Schema) {
	if s.Ref == "" {
		return
	}
	bare := jsonschema.Schema{Ref: s.Ref}
	c := *s
	c.Ref = ""
	if reflect.DeepEqual(c, jsonschema.Schema{}) {
		return
	}
	s.Ref = ""
	s.AllOf = append([]*jsonschema.Schema{&bare}, s.AllOf...)
}

// nullableDescription lifts the description of a nullable field (oneOf
// [schema, null], as the Reflector wraps it) onto the wrapper, where
// editors look for it.
func nullableDescription(s *jsonschema.Schema) {
	if len(s.OneOf) != 2 || s.Description != "" || s.OneOf[1].Type != "null" {
		return
	}
	s.Description, s.OneOf[0].Description = s.OneOf[0].Description, ""
}

// walk calls f on s and every schema under it, parents first.
func walk(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	f(s)
	for _, l := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
		for _, c := range l {
			walk(c, f)
		}
	}
	for _, c := range []*jsonschema.Schema{s.Not, s.If, s.Then, s.Else, s.Items, s.Contains, s.AdditionalProperties, s.PropertyNames} {
		walk(c, f)
	}
	if s.Properties != nil {
		for _, c := range s.Properties.FromOldest() {
			walk(c, f)
		}
	}
	for _, m := range []map[string]*jsonschema.Schema{s.PatternProperties, s.Definitions, s.DependentSchemas} {
		for _, c := range m {
			walk(c, f)
		}
	}
}

// docComments reads the doc comments of the types of document.go and
// unions.go and of their fields: "Type" and "Type.Field" → text (one
// line).
func docComments() (map[string]string, error) {
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range []string{"document.go", "unions.go"} {
		src, err := sources.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, sp := range g.Specs {
				ts := sp.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil {
					doc = g.Doc
				}
				out[ts.Name.Name] = oneLine(doc.Text())
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					for _, n := range fl.Names {
						out[ts.Name.Name+"."+n.Name] = oneLine(fl.Doc.Text())
					}
				}
			}
		}
	}
	return out, nil
}

// oneLine joins a comment's lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
