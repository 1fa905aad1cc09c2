package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync"

	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/oidc"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/grant"
	"github.com/noetl/gcpengine/shared/runnerclient"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// runnerTools returns the tools of the runner kinds (tools.RunnerKinds):
// calls to the runner at cfg.Runner.URL (shared/runnerclient) authenticated
// with execute's ID tokens (minted with NOETL_RUNNER_TOKEN_KEY_FILE on the
// local stack, Google's otherwise) and carrying the credentials the task
// names from creds. Without a runner URL every runner kind fails with a
// config error: user code never runs in the control plane.
//
// Each attempt is granted the result-tier objects it may read and write
// (runnerclient.Granter over rs): V4 signed URLs signed with
// NOETL_RESULTS_SIGNING_KEY_FILE on the local stack (naming its gateway,
// NOETL_RESULTS_SIGNED_ENDPOINT), by execute's service account through
// IAM otherwise. A signer that cannot be built leaves the runner without
// grants (logged): its kinds then cannot read or write stored results.
func runnerTools(cfg config.Config, creds credentials.Store, rs *results.Store, log *slog.Logger) tools.Registry {
	if cfg.Runner.URL == "" {
		return unavailable("NOETL_RUNNER_URL is not set (user code runs only in the runner)")
	}
	c := &runnerclient.Client{URL: cfg.Runner.URL, Credentials: runnerclient.StoreResolver{Store: creds}, Tokens: &lazyTokens{cfg: cfg}}
	if rs != nil {
		s, err := resultSigner(cfg)
		if err != nil {
			log.Error("runner: no result grants (the runner's kinds cannot read or write stored results)", "error", err.Error())
		} else {
			c.Results = &runnerclient.Granter{Store: rs, Signer: s, TTL: cfg.Runner.ResultsGrantExtra, MaxObject: int64(cfg.ResultMaxObjectMB) << 20}
		}
	}
	log.Info("runner kinds run in the runner", "url", cfg.Runner.URL, "audience", cfg.Runner.Audience, "local_tokens", cfg.Runner.TokenKeyFile != "",
		"result_grants", c.Results != nil, "results_endpoint", cfg.Runner.ResultsEndpoint)
	return c.Registry(tools.RunnerKinds)
}

// resultSigner returns the signer of the runner's result grants
// (runnerTools).
func resultSigner(cfg config.Config) (*grant.Signer, error) {
	host, insecure := "", false
	if e := cfg.Runner.ResultsEndpoint; e != "" {
		u, err := url.Parse(e)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("NOETL_RESULTS_SIGNED_ENDPOINT %q is not a URL", e)
		}
		host, insecure = u.Host, u.Scheme == "http"
	}
	if cfg.Runner.ResultsKeyFile != "" {
		return grant.NewKeySigner(cfg.Runner.ResultsKeyFile, cfg.Runner.Invoker, host, insecure)
	}
	cl, err := storage.NewClient(context.Background())
	if err != nil {
		return nil, fmt.Errorf("storage client for signing: %w", err)
	}
	return &grant.Signer{GoogleAccessID: cfg.Runner.Invoker, Client: cl, Hostname: host, Insecure: insecure}, nil
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
	return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrKindConfig, Message: string(f)}}
}

// lazyTokens builds the token source on first use and again after a
// failure (the metadata server may not answer at a cold start).
type lazyTokens struct {
	cfg config.Config

	mu sync.Mutex
	ts runnerclient.TokenSource
}

// Token implements runnerclient.TokenSource.
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

func newTokens(ctx context.Context, cfg config.Config) (runnerclient.TokenSource, error) {
	if cfg.Runner.TokenKeyFile != "" {
		s, err := oidc.LoadSigner(cfg.Runner.TokenKeyFile)
		if err != nil {
			return nil, fmt.Errorf("NOETL_RUNNER_TOKEN_KEY_FILE: %w", err)
		}
		return &runnerclient.KeyTokens{Signer: s, Email: cfg.Runner.Invoker, Audience: cfg.Runner.Audience}, nil
	}
	return runnerclient.GoogleTokens(context.WithoutCancel(ctx), cfg.Runner.Audience)
}
