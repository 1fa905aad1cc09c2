package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// DocSections maps the documentation sections a knob's Source names as
// `README "Section"` to the page of docs/ (and its anchor) that holds the
// section since the README became a front door; MarkdownTable renders such
// a source as a link relative to docs/.
var DocSections = map[string]string{
	"Architecture":                  "architecture.md",
	"Observability":                 "observability.md",
	"Repair":                        "resilience.md#repair",
	"Resilience":                    "resilience.md",
	"Running NoETL v2 playbooks":    "dsl.md#running-noetl-v2-playbooks",
	"Security":                      "security.md",
	"Stored results and the runner": "security.md",
	"The soak":                      "resilience.md#the-soak",
}

var readmeSection = regexp.MustCompile(`README "([^"]+)"`)

// sourceDoc renders a knob's Source for docs/configuration.md: each
// `README "Section"` of DocSections becomes a Markdown link to its page;
// anything else is kept as written.
func sourceDoc(src string) string {
	return readmeSection.ReplaceAllStringFunc(src, func(m string) string {
		name := readmeSection.FindStringSubmatch(m)[1]
		if page, ok := DocSections[name]; ok {
			return "[" + name + "](" + page + ")"
		}
		return m
	})
}

// MarkdownTable renders the registry as the Markdown table of
// docs/configuration.md: variable (and aliases), YAML path, type, default,
// meaning with its source (a link to the docs page that explains it) and
// the tests that show its effect (effectTests; or why it has none yet,
// noEffectTest). Secret knobs show no default.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| variable | YAML path | type | default | meaning | effect shown by |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
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
		meaning += " (" + sourceDoc(k.Source) + ")"
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s |\n", env, k.Path, typ, def, strings.ReplaceAll(meaning, "|", "\\|"),
			strings.ReplaceAll(effectDoc(k.Env), "|", "\\|"))
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

// effectDoc renders the tests that show a knob's effect (their package
// directory and name, deduplicated), or "none yet" with the reason.
func effectDoc(env string) string {
	if why, ok := noEffectTest[env]; ok {
		return "none yet: " + why
	}
	var out []string
	for _, e := range effectTests[env] {
		if s := "`" + e.Test + "`"; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ")
}
