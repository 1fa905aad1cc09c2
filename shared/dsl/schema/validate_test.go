package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"testing"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// This file checks YAML documents against the generated schema with a
// maintained JSON Schema validator (santhosh-tekuri/jsonschema), as an
// editor does: the YAML is converted to the JSON value the loader sees.

var (
	compiled    *jsv.Schema
	compiledErr error
	compileOnce sync.Once
)

// compiledSchema compiles Generate's schema once (the compiler also checks
// it against the draft-07 meta-schema).
func compiledSchema(t testing.TB) *jsv.Schema {
	t.Helper()
	compileOnce.Do(func() {
		b, err := Generate()
		if err != nil {
			compiledErr = err
			return
		}
		doc, err := jsv.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			compiledErr = err
			return
		}
		c := jsv.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource("playbook.schema.json", doc); err != nil {
			compiledErr = err
			return
		}
		compiled, compiledErr = c.Compile("playbook.schema.json")
	})
	if compiledErr != nil {
		t.Fatalf("compile the schema: %v", compiledErr)
	}
	return compiled
}

// schemaCheck validates the YAML document src against the schema: nil
// when it conforms, else the validator's error (or why src has no JSON
// value: a syntax error, a non-string key, more than one document).
func schemaCheck(t testing.TB, src []byte) error {
	t.Helper()
	v, err := yamlValue(src)
	if err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("no JSON value: %w", err)
	}
	inst, err := jsv.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return compiledSchema(t).Validate(inst)
}

// yamlValue converts one YAML document to the JSON value the loader reads
// (shared/dsl loader.value): aliases and << merge keys followed (explicit
// keys win, earlier merge sources win), null/bool/int/float scalars typed,
// every other scalar a string (NaN and infinities stay text).
func yamlValue(src []byte) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document (or a syntax error after the first)")
	}
	budget := 1 << 20
	return nodeValue(&doc, map[*yaml.Node]bool{}, &budget)
}

func nodeValue(n *yaml.Node, active map[*yaml.Node]bool, budget *int) (any, error) {
	if *budget--; *budget < 0 {
		return nil, errors.New("document too large")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0], active, budget)
	case yaml.AliasNode:
		return nodeValue(n.Alias, active, budget)
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, err
			}
			if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				return n.Value, nil
			}
			return v, nil
		}
		return n.Value, nil
	case yaml.SequenceNode:
		if active[n] {
			return nil, errors.New("recursive alias")
		}
		active[n] = true
		defer delete(active, n)
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c, active, budget)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		if active[n] {
			return nil, errors.New("recursive alias")
		}
		active[n] = true
		defer delete(active, n)
		out := map[string]any{}
		var merged []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			for k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a mapping key that is not a string", k.Line)
			}
			if k.ShortTag() == "!!merge" {
				merged = append(merged, n.Content[i+1])
				continue
			}
			if _, dup := out[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			v, err := nodeValue(n.Content[i+1], active, budget)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		for _, m := range merged {
			d := m
			for d.Kind == yaml.AliasNode {
				d = d.Alias
			}
			srcs := []*yaml.Node{d}
			if d.Kind == yaml.SequenceNode {
				srcs = d.Content
			}
			for _, s := range srcs {
				v, err := nodeValue(s, active, budget)
				if err != nil {
					return nil, err
				}
				mm, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("line %d: a << merge key needs mappings", m.Line)
				}
				for k, x := range mm {
					if _, ok := out[k]; !ok {
						out[k] = x
					}
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}
