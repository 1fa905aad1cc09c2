package postgres

import (
	"context"
	"maps"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/tools/internal/creds"
	"github.com/noetl/gcpengine/shared/tools/internal/script"
	"github.com/noetl/gcpengine/shared/types"
)

// prepare returns the configuration Exec runs: an `auth` string that is a
// credential name (not a DSN) is replaced by the credential's fields from
// Options.Credentials (conformance/noetl-v2 playbooks write `auth: pg_k8s`
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
	if _, has := config["script"]; has {
		lctx := ctx
		if timeoutS > 0 {
			var cancel context.CancelFunc
			lctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutS*float64(time.Second)))
			defer cancel()
		}
		code, ok, err := script.Load(lctx, config, "postgres task", t.opts.Scripts)
		if err != nil {
			o := err.(*script.Error).Outcome
			return nil, &o
		}
		if ok {
			clone()
			delete(out, "sql")
			delete(out, "query")
			out["command"] = code
		}
	}
	return out, nil
}
