package e2e

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/emulators/cloudtasks"
)

// execute refuses (401, before reading the body) every call that does not
// carry a valid OIDC token of the tasks service account for its URL, as
// Cloud Tasks attaches one; the stack's Cloud Tasks emulator signs such
// tokens (every run of the suite goes through them), and a token minted
// with the stack's key the same way is accepted.
func TestExecuteRequiresOIDCToken(t *testing.T) {
	RequireStack(t)
	url := os.Getenv("NOETL_FUNCTIONS_URL") + "/execute"
	sa := os.Getenv("NOETL_TASKS_SERVICE_ACCOUNT")
	if sa == "" {
		t.Fatal("NOETL_TASKS_SERVICE_ACCOUNT is unset: the stack must have Cloud Tasks attach OIDC tokens")
	}
	key := OIDCKey(t)
	other, err := cloudtasks.GenerateOIDCKey()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// A unit of an execution that does not exist: accepted callers get 200
	// (the worker drops it), refused ones 401.
	body := []byte(MustJSON(map[string]any{"id": "oidc-probe", "kind": "run_step", "execution_id": "oidc-probe-" + randSuffix(),
		"step": "start", "step_run": 1, "task_index": 0, "attempt": 1, "state_version": 1}))
	valid := ExecuteToken(t, key, sa, url, now)
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + parts[1][:len(parts[1])-2] + "AA." + parts[2]
	for _, c := range []struct {
		name, auth string
	}{
		{"no token", ""},
		{"not a bearer token", "Basic dXNlcjpwYXNz"},
		{"not a JWT", "Bearer not-a-token"},
		{"signed by another key", "Bearer " + ExecuteToken(t, other, sa, url, now)},
		{"tampered claims", "Bearer " + tampered},
		{"another audience", "Bearer " + ExecuteToken(t, key, sa, url+"-other", now)},
		{"another service account", "Bearer " + ExecuteToken(t, key, "intruder@noetl-local.iam.gserviceaccount.com", url, now)},
		{"expired", "Bearer " + ExecuteToken(t, key, sa, url, now.Add(-2*cloudtasks.OIDCTokenLifetime))},
	} {
		code, resp := postWith(t, url, body, c.auth)
		if code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", c.name, code, resp)
		}
	}
	if code, resp := postWith(t, url, body, "Bearer "+valid); code != http.StatusOK {
		t.Errorf("valid token: %d %s, want 200", code, resp)
	}
}
