package wiring

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/oidc"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/controlkinds"
	"github.com/noetl/gcpengine/shared/types"
)

// TestDepsWireSettings: each setting the functions hand to a component
// (the worker, the store, the Cloud Tasks dispatcher, the catalog, the
// tool options) reaches it with the value the environment sets, not the
// component's default: config.Parse → NewDeps → Ensure. What the
// component then does with the value is its own package's test
// (shared/config's effectTests names both).
func TestDepsWireSettings(t *testing.T) {
	env := map[string]string{
		"NOETL_SIGNING_KEY":              "deps-test-signing-key-0123456789abcdef0123",
		"GOOGLE_CLOUD_PROJECT":           "p",
		"NOETL_LEASE_TTL_S":              "45",
		"NOETL_HEARTBEAT_INTERVAL_S":     "9",
		"NOETL_DISPATCH_DEADLINE_S":      "500",
		"NOETL_TIMEOUTS_TOOL_DEFAULT_MS": "7000",
		"NOETL_TIMEOUTS_LOOP_ITEM_MS":    "4000",
		"NOETL_TIMEOUTS_SINK_DEFAULT_MS": "3000",
		"NOETL_DLQ_ENABLED":              "false",
		"NOETL_DLQ_HOLD":                 "true",
		"NOETL_DLQ_RETENTION_DAYS":       "9",
		"NOETL_RETENTION_DAYS":           "5",
		"NOETL_PG_DSN":                   "postgresql://deployment/db",
		"NOETL_TASK_ERROR_MAX_BYTES":     "3000",
		"NOETL_CONTINUE_UNITS":           "5",
		"NOETL_CONTINUE_DEFER":           "7",
		"NOETL_CONTINUE_BUDGET_S":        "20",
		"NOETL_TASKS_SERVICE_ACCOUNT":    "tasks@p.iam.gserviceaccount.com",
		"NOETL_EXECUTE_AUDIENCE":         "https://execute.example",
		"NOETL_REPO_ROOT":                "/srv/repo",
		"NOETL_HTTP_ALLOW_LINK_LOCAL":    "true",
		"NOETL_EGRESS_PROFILE":           "local",
		"NOETL_EGRESS_ALLOW":             "partner.example",
		"NOETL_EGRESS_DENY":              "blocked.example",
		"NOETL_SECRETS_ENV_ALLOW":        "MY_TOKEN, OTHER_*",
	}
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	b := rec.builders()
	var opts controlkinds.Options
	b.Tools = func(o controlkinds.Options) (tools.Registry, func()) { opts = o; return tools.Registry{}, nil }
	var runnerCfg config.Config
	b.Runner = func(c config.Config, _ credentials.Store, _ *results.Store, _ *slog.Logger) tools.Registry {
		runnerCfg = c
		return tools.Registry{}
	}
	d, err := NewDeps(context.Background(), cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Ensure(context.Background(), NeedWorker|NeedExecutor|NeedCatalog|NeedDispatcher); err != nil {
		t.Fatal(err)
	}
	w := d.Worker
	for _, c := range []struct {
		knob      string
		got, want any
	}{
		{"NOETL_LEASE_TTL_S", w.LeaseTTL, 45 * time.Second},
		{"NOETL_HEARTBEAT_INTERVAL_S", w.HeartbeatInterval, 9 * time.Second},
		{"NOETL_DISPATCH_DEADLINE_S (hand-off)", w.HandOffAfter, 400 * time.Second},
		{"NOETL_DISPATCH_DEADLINE_S (dispatcher)", d.Dispatcher.Deadline, 500 * time.Second},
		{"NOETL_TIMEOUTS_TOOL_DEFAULT_MS", w.ToolTimeout, 7 * time.Second},
		{"NOETL_TIMEOUTS_LOOP_ITEM_MS", w.LoopItemTimeout, 4 * time.Second},
		{"NOETL_TIMEOUTS_SINK_DEFAULT_MS", w.SinkTimeout, 3 * time.Second},
		{"NOETL_DLQ_ENABLED", w.FileTaskFailures, false},
		{"NOETL_DLQ_HOLD", w.HoldTaskFailures, true},
		{"NOETL_DLQ_RETENTION_DAYS", d.Store.DLQRetention, 9 * 24 * time.Hour},
		{"NOETL_RETENTION_DAYS", d.Store.Retention, 5 * 24 * time.Hour},
		{"NOETL_PG_DSN", w.PGDSN, "postgresql://deployment/db"},
		{"NOETL_TASK_ERROR_MAX_BYTES", w.ErrorMax, 3000},
		{"NOETL_CONTINUE_UNITS", w.ContinueUnits, 5},
		{"NOETL_CONTINUE_DEFER", w.ContinueDefer, 7},
		{"NOETL_CONTINUE_BUDGET_S", w.ContinueBudget, 20 * time.Second},
		{"NOETL_TASKS_SERVICE_ACCOUNT", d.Dispatcher.ServiceAccount, "tasks@p.iam.gserviceaccount.com"},
		{"NOETL_EXECUTE_AUDIENCE", d.Dispatcher.Audience, "https://execute.example"},
		{"NOETL_REPO_ROOT (catalog)", d.Catalog.Root, "/srv/repo"},
		// The control plane's kinds (controlkinds) take neither the script
		// directory nor the project: the kinds that read `script:` files
		// and Pub/Sub subscriptions run in the runner (runner/main.go).
		{"NOETL_HTTP_ALLOW_LINK_LOCAL", opts.HTTP.AllowLinkLocal, true},
		{"NOETL_SECRETS_ENV_ALLOW", strings.Join(opts.Secrets.EnvAllow, ","), "MY_TOKEN,OTHER_*"},
		{"the runner's configuration", runnerCfg.PGDSN, "postgresql://deployment/db"},
	} {
		if c.got != c.want {
			t.Errorf("%s: the component has %v, want %v", c.knob, c.got, c.want)
		}
	}
	// NOETL_EGRESS_*: the control plane's http kind gets the policy the
	// settings make (a denied host is refused).
	if opts.Egress == nil {
		t.Fatal("no egress policy")
	}
	if _, err := opts.Egress.CheckHost("blocked.example", 443); err == nil {
		t.Error("NOETL_EGRESS_DENY=blocked.example: the tools' policy lets it through")
	}
	if allowed, err := opts.Egress.CheckHost("partner.example", 443); !allowed || err != nil {
		t.Errorf("NOETL_EGRESS_ALLOW=partner.example: allowed %v, %v", allowed, err)
	}
	if opts.Egress.Profile != "local" {
		t.Errorf("NOETL_EGRESS_PROFILE=local: the tools' policy has profile %q", opts.Egress.Profile)
	}
}

// TestDefaultMaxInFlightTakesEffect: NOETL_DEFAULT_MAX_IN_FLIGHT bounds
// how many iterations of a parallel loop without max_in_flight are
// dispatched at once.
func TestDefaultMaxInFlightTakesEffect(t *testing.T) {
	const src = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: t, path: t}
workflow:
  - step: start
    loop: {in: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], iterator: i, spec: {mode: parallel}}
    tool: {kind: noop}
`
	for _, c := range []struct {
		env  map[string]string
		want int
	}{{nil, 10}, {map[string]string{"NOETL_DEFAULT_MAX_IN_FLIGHT": "3"}, 3}} {
		_, out := started(t, engineWith(t, src, c.env))
		n := 0
		for _, cmd := range out.Commands {
			if cmd.Kind == types.CmdRunStep && cmd.Iteration != nil {
				n++
			}
		}
		if n != c.want {
			t.Errorf("%v: %d iterations dispatched at start, want %d", c.env, n, c.want)
		}
	}
}

// TestAuthenticatorFromSettings: the api's authenticator is built from
// NOETL_API_TOKEN (that bearer token is accepted, another refused) and
// NOETL_API_AUDIENCES (with audiences, a JWT-shaped token that is not the
// static one goes to identity-token verification; without, it is refused
// as invalid at once). What each does in full is shared/auth's
// TestStaticToken and TestIdentityTokens.
func TestAuthenticatorFromSettings(t *testing.T) {
	build := func(env map[string]string) *auth.Authenticator {
		t.Helper()
		for k, v := range env {
			t.Setenv(k, v)
		}
		authMu.Lock()
		authn = nil
		authMu.Unlock()
		t.Cleanup(func() { authMu.Lock(); authn = nil; authMu.Unlock() })
		a, err := Authenticator(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	bearer := func(tok string) *http.Request {
		r := httptest.NewRequest("GET", "/api/executions", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	a := build(map[string]string{"NOETL_API_TOKEN": "settings-test-token-0123456789", "NOETL_API_AUDIENCES": "", "NOETL_PROFILE": "local"})
	if p, err := a.Authenticate(bearer("settings-test-token-0123456789")); err != nil || p.Name != auth.TokenPrincipal {
		t.Errorf("NOETL_API_TOKEN's token: %+v, %v", p, err)
	}
	if _, err := a.Authenticate(bearer("another-token")); err == nil {
		t.Error("a token other than NOETL_API_TOKEN's was accepted")
	}
	if _, err := a.Authenticate(bearer("a.b.c")); err == nil || !strings.Contains(err.Error(), "not valid") {
		t.Errorf("without NOETL_API_AUDIENCES a JWT-shaped token: %v, want refused as not valid", err)
	}
	a = build(map[string]string{"NOETL_API_TOKEN": "settings-test-token-0123456789", "NOETL_API_AUDIENCES": "https://api.example.test", "NOETL_PROFILE": "local"})
	if _, err := a.Authenticate(bearer("a.b.c")); err == nil || strings.Contains(err.Error(), "not valid") {
		t.Errorf("with NOETL_API_AUDIENCES a JWT-shaped token: %v, want an identity-token verification error", err)
	}
}

// TestAPIVerifiesTokensWithTheJWKSFile: with NOETL_OIDC_JWKS_FILE the api
// verifies identity tokens against that key set (the local stack's
// issuer): a token its key signed for NOETL_API_AUDIENCES authenticates
// its email; without the file the same token is checked against Google's
// keys and refused.
func TestAPIVerifiesTokensWithTheJWKSFile(t *testing.T) {
	key, err := oidc.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := oidc.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := s.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := s.Token("ci@p.iam.gserviceaccount.com", "https://api.example.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file string
		ok   bool
	}{{file, true}, {"", false}} {
		t.Setenv("NOETL_OIDC_JWKS_FILE", c.file)
		t.Setenv("NOETL_API_AUDIENCES", "https://api.example.test")
		t.Setenv("NOETL_PROFILE", "local")
		authMu.Lock()
		authn = nil
		authMu.Unlock()
		a, err := Authenticator(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("GET", "/api/executions", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		p, err := a.Authenticate(r)
		if got := err == nil && p.Name == "ci@p.iam.gserviceaccount.com"; got != c.ok {
			t.Errorf("NOETL_OIDC_JWKS_FILE=%q: principal %+v, %v; want accepted %v", c.file, p, err, c.ok)
		}
	}
	authMu.Lock()
	authn = nil
	authMu.Unlock()
}

// TestSecretsEnvAllowDefault: an empty NOETL_SECRETS_ENV_ALLOW leaves the
// secrets kind its default allow-list (nil Options.EnvAllow:
// NOETL_SECRET_*), not an empty one that would refuse every variable.
func TestSecretsEnvAllowDefault(t *testing.T) {
	if got := envAllow(config.Config{}); got != nil {
		t.Fatalf("empty setting: %#v, want nil", got)
	}
	if got := envAllow(config.Config{SecretsEnvAllow: []string{"A"}}); len(got) != 1 || got[0] != "A" {
		t.Fatalf("set: %#v", got)
	}
}
