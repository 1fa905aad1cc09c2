package postgres

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/noetl/gcpengine/runner/kinds/script"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/tools/creds"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// prepare returns the spec Exec runs: an `auth` string that is a
// credential name (not a DSN) is replaced by the credential's fields from
// Options.Credentials (NoETL v2 playbooks write `auth: pg_k8s` or
// `credential: pg_k8s` without a keychain); Command is the SQL, from
// command (sql, query, cmd), else commands (queries, cmds), else
// command_b64; with a `script:` block, Command is the script's SQL (the
// script wins).
//
// Errors are outcomes: an unknown credential or a credential of another
// kind is kind "config", a failing store kind "credentials" (retryable);
// script failures are classified by script.Load.
func (t *Tool) prepare(ctx context.Context, spec toolspec.Postgres, timeoutS float64) (toolspec.Postgres, *types.Outcome) {
	if name, ok := spec.Auth.(string); ok && t.opts.Credentials != nil && strings.TrimSpace(name) != "" && !looksLikeDSN(name) {
		fields, err := creds.Resolve(ctx, t.opts.Credentials, name, "postgres task", credentials.KindPostgres)
		if err != nil {
			o := creds.Outcome(err)
			return spec, &o
		}
		spec.Auth = fields
	}
	if strings.TrimSpace(spec.Command) == "" {
		sqlText, found, err := alternateSQL(spec)
		if err != nil {
			o := conf.ConfigError("postgres task: %v", err)
			return spec, &o
		}
		if found {
			spec.Command = sqlText
		}
	}
	if spec.Script != nil {
		code, ok, failed := script.LoadOutcome(ctx, map[string]any{"script": spec.Script}, "postgres task", t.opts.Scripts, timeoutS)
		if failed != nil {
			return spec, failed
		}
		if ok {
			spec.Command = code
		}
	}
	return spec, nil
}

// alternateSQL reads NoETL's other spellings of the SQL: commands (a list
// of statements, or text), command_b64 (base64 of the text; also spelled
// commands_b64, query_b64).
func alternateSQL(spec toolspec.Postgres) (string, bool, error) {
	if v := spec.Commands; v != nil {
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
	if s := strings.TrimSpace(spec.CommandB64); s != "" {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || !utf8.Valid(b) {
			return "", false, fmt.Errorf("command_b64 is not base64 of UTF-8 text")
		}
		return string(b), true, nil
	}
	return "", false, nil
}
