package postgres

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/tools/internal/conf"
	"github.com/noetl/gcpengine/shared/tools/internal/creds"
	"github.com/noetl/gcpengine/shared/tools/internal/script"
	"github.com/noetl/gcpengine/shared/types"
)

// prepare returns the configuration Exec runs: an `auth` string that is a
// credential name (not a DSN) is replaced by the credential's fields from
// Options.Credentials (NoETL v2 playbooks write `auth: pg_k8s`
// without a keychain); with a `script:` block, "command" is the script's
// SQL (the script wins over command/sql/query, which are dropped). config
// itself is never modified.
//
// Errors are outcomes: an unknown credential or a credential of another
// kind is kind "config", a failing store kind "credentials" (retryable);
// script failures are classified by script.Load.
func (t *Tool) prepare(ctx context.Context, config map[string]any, timeoutS float64) (map[string]any, *types.Outcome) {
	out, copied := config, false
	clone := func() {
		if !copied {
			out, copied = maps.Clone(config), true
		}
	}
	if name, ok := config["auth"].(string); ok && t.opts.Credentials != nil && strings.TrimSpace(name) != "" && !looksLikeDSN(name) {
		fields, err := creds.Resolve(ctx, t.opts.Credentials, name, "postgres task", credentials.KindPostgres)
		if err != nil {
			o := creds.Outcome(err)
			return nil, &o
		}
		clone()
		out["auth"] = fields
	}
	if _, has := conf.Lookup(out, "command", "sql", "query"); !has {
		sqlText, found, err := alternateSQL(out)
		if err != nil {
			o := conf.ConfigError("postgres task: %v", err)
			return nil, &o
		}
		if found {
			clone()
			out["command"] = sqlText
		}
	}
	code, ok, failed := script.LoadOutcome(ctx, config, "postgres task", t.opts.Scripts, timeoutS)
	if failed != nil {
		return nil, failed
	}
	if ok {
		clone()
		delete(out, "sql")
		delete(out, "query")
		out["command"] = code
	}
	return out, nil
}

// alternateSQL reads NoETL's other spellings of the SQL: commands (a list
// of statements, or text), command_b64 / commands_b64 / query_b64 (base64
// of the text).
func alternateSQL(cfg map[string]any) (string, bool, error) {
	if v, ok := conf.Lookup(cfg, "commands"); ok {
		switch x := v.(type) {
		case string:
			return x, true, nil
		case []any:
			parts := make([]string, 0, len(x))
			for i, e := range x {
				s, isStr := e.(string)
				if !isStr {
					return "", false, fmt.Errorf("commands[%d] must be a string, got %T", i, e)
				}
				parts = append(parts, strings.TrimRight(strings.TrimSpace(s), ";"))
			}
			return strings.Join(parts, ";\n"), true, nil
		default:
			return "", false, fmt.Errorf("`commands` must be a list of statements, got %T", v)
		}
	}
	for _, k := range []string{"command_b64", "commands_b64", "query_b64"} {
		if s, ok := conf.String(cfg, k); ok {
			b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
			if err != nil || !utf8.Valid(b) {
				return "", false, fmt.Errorf("%s is not base64 of UTF-8 text", k)
			}
			return string(b), true, nil
		}
	}
	return "", false, nil
}
