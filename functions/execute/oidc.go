package execute

import (
	"context"
	"net/http"
	"sync"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/oidc"
	"github.com/noetl/gcpengine/shared/wiring"
)

// The caller check (README "Security"): Cloud Tasks calls execute with an OIDC token
// of the service account NOETL_TASKS_SERVICE_ACCOUNT for the audience
// NOETL_EXECUTE_AUDIENCE (shared/tasks asks for it on every task).
// execute verifies it (shared/oidc: Google's certificates in GCP, the
// stack's JWK set NOETL_OIDC_JWKS_FILE locally) and answers 401 to a call
// without a valid token, before reading the body. With no service account
// configured, no token is attached and none is checked.

var (
	verifierMu sync.Mutex
	verifier   *oidc.Verifier
)

// verifierOf returns the instance's verifier, created on first use from
// cfg (a failed creation is retried on the next call).
func verifierOf(ctx context.Context, cfg config.Config) (*oidc.Verifier, error) {
	verifierMu.Lock()
	defer verifierMu.Unlock()
	if verifier != nil {
		return verifier, nil
	}
	v, err := oidc.NewVerifier(context.WithoutCancel(ctx), cfg.ExecuteAudience, cfg.TasksServiceAccount, cfg.OIDCJWKSFile)
	if err != nil {
		return nil, err
	}
	verifier = v
	return v, nil
}

// authorized reports whether r carries a valid OIDC token of the tasks
// service account; otherwise it has answered 401 (500 when the verifier
// cannot be created: Cloud Tasks retries).
func authorized(w http.ResponseWriter, r *http.Request, d *wiring.Deps) bool {
	if d.Cfg.TasksServiceAccount == "" {
		return true
	}
	v, err := verifierOf(r.Context(), d.Cfg)
	if err != nil {
		d.Log.ErrorContext(r.Context(), "execute: cannot verify callers", "error", err.Error())
		http.Error(w, "execute: cannot verify callers: "+err.Error(), http.StatusInternalServerError)
		return false
	}
	if _, err := v.Verify(r.Context(), r.Header.Get("Authorization")); err != nil {
		d.Log.WarnContext(r.Context(), "execute: call refused", "error", err.Error(),
			"task", r.Header.Get("X-CloudTasks-TaskName"), "queue", r.Header.Get("X-CloudTasks-QueueName"))
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return false
	}
	return true
}
