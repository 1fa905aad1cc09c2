package python

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/noetl/gcpengine/shared/tools/internal/conf"
	"github.com/noetl/gcpengine/shared/tools/internal/script"
	"github.com/noetl/gcpengine/shared/types"
)

// prepare returns the configuration the runner sees: with a `script:`
// block, "code" is the script's code (the script wins over `code`, as in
// NoETL's resolver); without code, `code_b64` (or code_base64) is decoded
// into it; `libs` entries of NoETL's extended form {alias:
// {from: pkg, import: name}} become "pkg:name", which the runner imports
// as `from pkg import name as alias`. config itself is never modified.
//
// The script is fetched within the attempt's time budget (timeoutS, when
// set, bounds the fetch). Failures are the loader's classified outcomes
// (see script.Load) or kind "config" for malformed libs.
func (t *Tool) prepare(ctx context.Context, config map[string]any, timeoutS float64) (map[string]any, *types.Outcome) {
	out, copied := config, false
	code, ok, failed := script.LoadOutcome(ctx, config, "python task", t.opts.Scripts, timeoutS)
	if failed != nil {
		return nil, failed
	}
	if ok {
		out, copied = maps.Clone(config), true
		out["code"] = code
	}
	if _, has := out["code"]; !has {
		if b64, ok := conf.String(out, "code_b64", "code_base64"); ok {
			code, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
			if err != nil || !utf8.Valid(code) {
				o := conf.ConfigError("python task: code_b64 is not base64 of UTF-8 text")
				return nil, &o
			}
			if !copied {
				out, copied = maps.Clone(config), true
			}
			out["code"] = string(code)
		}
	}
	if libs, ok := conf.Map(out["libs"]); ok {
		norm, err := normaliseLibs(libs)
		if err != nil {
			o := conf.ConfigError("python task: %v", err)
			return nil, &o
		}
		if norm != nil {
			if !copied {
				out = maps.Clone(config)
			}
			out["libs"] = norm
		}
	}
	return out, nil
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
