package config

import (
	"fmt"
	"strconv"
	"strings"
)

// MarkdownTable renders the registry as the Markdown table of README
// "Configuration": variable (and aliases), YAML path, type, default and
// meaning with its source. Secret knobs show no default.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| variable | YAML path | type | default | meaning |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, k := range registry {
		env := "`" + k.Env + "`"
		for _, a := range k.Aliases {
			env += " (or `" + a + "`)"
		}
		def := k.DefaultDoc
		switch {
		case def != "":
		case k.Secret:
			def = "(secret, unset)"
		case k.Default == "":
			def = "(empty)"
		default:
			def = "`" + k.Default + "`"
		}
		typ := string(k.Kind)
		if len(k.Enum) > 0 {
			typ = strings.Join(k.Enum, " \\| ")
		}
		if k.HasMin || k.HasMax {
			typ += " " + bounds(k)
		}
		meaning := k.Doc
		if k.Deploy {
			meaning += "; set by Terraform"
		}
		meaning += " (" + k.Source + ")"
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", env, k.Path, typ, def, strings.ReplaceAll(meaning, "|", "\\|"))
	}
	return b.String()
}

func bounds(k Knob) string {
	n := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case k.HasMin && k.HasMax:
		return n(k.Min) + ".." + n(k.Max)
	case k.HasMin:
		return "≥ " + n(k.Min)
	}
	return "≤ " + n(k.Max)
}
