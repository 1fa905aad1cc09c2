package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// applyYAML sets the knobs found in the YAML document b (file path, for
// messages). Unknown keys, values of the wrong shape and invalid values
// are problems naming the file, line and YAML path.
func applyYAML(c *Config, path string, b []byte, errs *Error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		errs.Problems = append(errs.Problems, Problem{Env: FileEnv, Origin: path, Message: "invalid YAML: " + err.Error()})
		return
	}
	if doc.Kind == 0 || len(doc.Content) == 0 { // empty file
		return
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		errs.Problems = append(errs.Problems, Problem{Env: FileEnv, Origin: fmt.Sprintf("%s:%d", path, root.Line), Message: "the document must be a mapping"})
		return
	}
	walkYAML(c, path, "", root, errs)
}

func walkYAML(c *Config, file, prefix string, m *yaml.Node, errs *Error) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i], m.Content[i+1]
		p := key.Value
		if prefix != "" {
			p = prefix + "." + key.Value
		}
		at := fmt.Sprintf("%s:%d", file, key.Line)
		k, isKnob := ByPath(p)
		if !isKnob {
			if val.Kind == yaml.MappingNode && hasPrefix(p) {
				walkYAML(c, file, p, val, errs)
				continue
			}
			errs.Problems = append(errs.Problems, Problem{Env: FileEnv, Path: p, Origin: at, Message: "unknown key " + p})
			continue
		}
		raw, err := scalarText(k, val)
		var v any
		if err == nil {
			v, err = k.parse(raw)
		}
		if err == nil {
			err = k.validate(v)
		}
		if err != nil {
			errs.add(k, at, err.Error())
			continue
		}
		k.set(c, v)
	}
}

// scalarText returns the text of a YAML value for knob k: a scalar, or a
// sequence of scalars for list knobs (joined with commas).
func scalarText(k Knob, n *yaml.Node) (string, error) {
	switch {
	case n.Kind == yaml.ScalarNode:
		return n.Value, nil
	case n.Kind == yaml.SequenceNode && k.Kind == KindList:
		items := make([]string, 0, len(n.Content))
		for _, it := range n.Content {
			if it.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("list items must be scalars")
			}
			if strings.Contains(it.Value, ",") {
				return "", fmt.Errorf("list item %q must not contain a comma", it.Value)
			}
			items = append(items, it.Value)
		}
		return strings.Join(items, ","), nil
	}
	return "", fmt.Errorf("expected a %s value, found a %s", k.Kind, kindName(n.Kind))
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.AliasNode:
		return "alias"
	}
	return "scalar"
}

// hasPrefix reports whether some knob's path starts with p + ".".
func hasPrefix(p string) bool {
	for _, k := range registry {
		if strings.HasPrefix(k.Path, p+".") {
			return true
		}
	}
	return false
}
