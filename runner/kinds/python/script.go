package python

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/noetl/gcpengine/runner/kinds/script"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// prepare returns the spec the runner sees: with a `script:` block, Code
// is the script's code (the script wins over `code`, as in NoETL's
// resolver); without code, code_b64 (or code_base64) is decoded into it;
// `libs` entries of NoETL's extended form {alias: {from: pkg, import:
// name}} become "pkg:name", which the runner imports as `from pkg import
// name as alias`.
//
// The script is fetched within the attempt's time budget (timeoutS, when
// set, bounds the fetch). Failures are the loader's classified outcomes
// (see script.Load) or kind "config" for malformed libs.
func (t *Tool) prepare(ctx context.Context, spec toolspec.Python, timeoutS float64) (toolspec.Python, *types.Outcome) {
	if spec.Script != nil {
		code, ok, failed := script.LoadOutcome(ctx, map[string]any{"script": spec.Script}, "python task", t.opts.Scripts, timeoutS)
		if failed != nil {
			return spec, failed
		}
		if ok {
			spec.Code = code
		}
	}
	if spec.Code == "" {
		if b64 := strings.TrimSpace(spec.CodeB64); b64 != "" {
			code, err := base64.StdEncoding.DecodeString(b64)
			if err != nil || !utf8.Valid(code) {
				o := conf.ConfigError("python task: code_b64 is not base64 of UTF-8 text")
				return spec, &o
			}
			spec.Code = string(code)
		}
	}
	if libs, ok := conf.Map(spec.Libs); ok {
		norm, err := normaliseLibs(libs)
		if err != nil {
			o := conf.ConfigError("python task: %v", err)
			return spec, &o
		}
		if norm != nil {
			spec.Libs = norm
		}
	}
	return spec, nil
}

var dotted = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// normaliseLibs rewrites {alias: {from, import}} entries; it returns nil
// when there is nothing to rewrite.
func normaliseLibs(libs map[string]any) (map[string]any, error) {
	var out map[string]any
	for alias, v := range libs {
		m, ok := conf.Map(v)
		if !ok {
			continue
		}
		from, _ := m["from"].(string)
		imp, _ := m["import"].(string)
		from, imp = strings.TrimSpace(from), strings.TrimSpace(imp)
		if !dotted.MatchString(from) || !dotted.MatchString(imp) || strings.Contains(imp, ".") {
			return nil, fmt.Errorf("libs.%s must be a module name or {from: package, import: name}", alias)
		}
		if out == nil {
			out = maps.Clone(libs)
		}
		out[alias] = from + ":" + imp
	}
	return out, nil
}
