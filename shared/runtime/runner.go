package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/oidc"
	"github.com/noetl/gcpengine/shared/runner"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// runnerTools returns the tools of the runner kinds (tools.RunnerKinds):
// calls to the runner at cfg.Runner.URL (shared/runner) authenticated
// with execute's ID tokens (minted with NOETL_RUNNER_TOKEN_KEY_FILE on the
// local stack, Google's otherwise) and carrying the credentials the task
// names from creds. Without a runner URL every runner kind fails with a
// config error: user code never runs in the control plane.
func runnerTools(cfg config.Config, creds credentials.Store, log *slog.Logger) tools.Registry {
	if cfg.Runner.URL == "" {
		return unavailable("NOETL_RUNNER_URL is not set (user code runs only in the runner)")
	}
	c := &runner.Client{URL: cfg.Runner.URL, Credentials: runner.StoreResolver{Store: creds}, Tokens: &lazyTokens{cfg: cfg}}
	log.Info("runner kinds run in the runner", "url", cfg.Runner.URL, "audience", cfg.Runner.Audience, "local_tokens", cfg.Runner.TokenKeyFile != "")
	return c.Registry(tools.RunnerKinds)
}

// unavailable is a registry of the runner kinds that fail with a config
// error saying why.
func unavailable(why string) tools.Registry {
	r := tools.Registry{}
	for _, k := range tools.RunnerKinds {
		r[k] = failing(fmt.Sprintf("task kind %s runs in the runner, which is not configured: %s", k, why))
	}
	return r
}

type failing string

// Run implements tools.Tool.
func (f failing) Run(context.Context, tools.Request) types.Outcome {
	return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "config", Message: string(f)}}
}

// lazyTokens builds the token source on first use and again after a
// failure (the metadata server may not answer at a cold start).
type lazyTokens struct {
	cfg config.Config

	mu sync.Mutex
	ts runner.TokenSource
}

// Token implements runner.TokenSource.
func (l *lazyTokens) Token(ctx context.Context) (string, error) {
	l.mu.Lock()
	ts := l.ts
	if ts == nil {
		var err error
		ts, err = newTokens(ctx, l.cfg)
		if err != nil {
			l.mu.Unlock()
			return "", err
		}
		l.ts = ts
	}
	l.mu.Unlock()
	return ts.Token(ctx)
}

func newTokens(ctx context.Context, cfg config.Config) (runner.TokenSource, error) {
	if cfg.Runner.TokenKeyFile != "" {
		s, err := oidc.LoadSigner(cfg.Runner.TokenKeyFile)
		if err != nil {
			return nil, fmt.Errorf("NOETL_RUNNER_TOKEN_KEY_FILE: %w", err)
		}
		return &runner.KeyTokens{Signer: s, Email: cfg.Runner.Invoker, Audience: cfg.Runner.Audience}, nil
	}
	return runner.GoogleTokens(context.WithoutCancel(ctx), cfg.Runner.Audience)
}
