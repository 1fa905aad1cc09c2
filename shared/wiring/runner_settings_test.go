package wiring

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// TestRunnerClientFromSettings: the control plane's calls to the runner
// (runnerTools) carry an ID token minted with NOETL_RUNNER_TOKEN_KEY_FILE
// for NOETL_RUNNER_AUDIENCE as NOETL_RUNNER_INVOKER, and grant the task's
// stored inputs with URLs signed with NOETL_RESULTS_SIGNING_KEY_FILE as
// NOETL_RUNNER_INVOKER, naming the host of NOETL_RESULTS_SIGNED_ENDPOINT
// and living the task's timeout plus NOETL_RESULTS_GRANT_EXTRA_S.
func TestRunnerClientFromSettings(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		auth string
		body []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		auth, body = r.Header.Get("Authorization"), b
		mu.Unlock()
		http.Error(w, "not a runner", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	env := map[string]string{
		"NOETL_RUNNER_URL":               srv.URL,
		"NOETL_RUNNER_AUDIENCE":          "https://runner.example",
		"NOETL_RUNNER_INVOKER":           "execute@p.iam.gserviceaccount.com",
		"NOETL_RUNNER_TOKEN_KEY_FILE":    keyFile,
		"NOETL_RESULTS_SIGNING_KEY_FILE": keyFile,
		"NOETL_RESULTS_SIGNED_ENDPOINT":  "http://gateway.example:4443",
		"NOETL_RESULTS_GRANT_EXTRA_S":    "123",
		"NOETL_RESULTS_BUCKET":           "noetl-results",
		"NOETL_RESULT_INLINE_MAX":        "10",
	}
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ResultStore(cfg, func(b string) results.Backend { return namedBackend{results.NewMemory(), b} })
	if err != nil {
		t.Fatal(err)
	}
	const id = "1234567890123456789"
	ctx := results.WithReader(context.Background(), results.Reader{Execution: id})
	ref, err := rs.Offload(ctx, types.ResultCoords{ExecutionID: id, Step: "s", Attempt: 1}, map[string]any{"rows": strings.Repeat("x", 200)})
	if err != nil {
		t.Fatal(err)
	}
	reg := runnerTools(cfg, credentials.NewMemory(), rs, slog.New(slog.DiscardHandler))
	out := reg[tools.KindPython].Run(ctx, tools.Request{ExecutionID: id, Step: "t", Task: "py", TimeoutS: 7,
		Config: map[string]any{"code": "result = 1"}, Args: map[string]any{"input": ref}})
	mu.Lock()
	defer mu.Unlock()
	if out.Error == nil || !strings.Contains(out.Error.Message, "not a runner") {
		t.Errorf("outcome %+v: want the fake runner's refusal", out.Error)
	}
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	parts := strings.Split(tok, ".")
	if !ok || len(parts) != 3 {
		t.Fatalf("the runner got Authorization %q, want a bearer ID token", auth)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Aud   any    `json:"aud"`
		Email string `json:"email"`
	}
	_ = json.Unmarshal(payload, &claims)
	if claims.Aud != "https://runner.example" || claims.Email != "execute@p.iam.gserviceaccount.com" {
		t.Errorf("token claims %s: want aud NOETL_RUNNER_AUDIENCE, email NOETL_RUNNER_INVOKER", payload)
	}
	var req struct {
		Results struct {
			Read []struct {
				Grant struct {
					URL string `json:"url"`
				} `json:"grant"`
			} `json:"read"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Results.Read) != 1 {
		t.Fatalf("runner request %.400s: %v; want one read grant", body, err)
	}
	u, err := url.Parse(req.Results.Read[0].Grant.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Scheme != "http" || u.Host != "gateway.example:4443" {
		t.Errorf("grant URL %s: want the host of NOETL_RESULTS_SIGNED_ENDPOINT", u)
	}
	if !strings.HasPrefix(q.Get("X-Goog-Credential"), "execute@p.iam.gserviceaccount.com/") {
		t.Errorf("grant credential %q: want NOETL_RUNNER_INVOKER", q.Get("X-Goog-Credential"))
	}
	// The signing library counts the lifetime from its own clock: 129 or
	// 130 s (the default extra, 15 min, would give 907).
	if e := q.Get("X-Goog-Expires"); e != "130" && e != "129" {
		t.Errorf("grant lifetime %s s: want the task's 7 s + NOETL_RESULTS_GRANT_EXTRA_S 123 s", q.Get("X-Goog-Expires"))
	}
}

// namedBackend is an in-memory object store that names its bucket (as the
// GCS backend does), for grants.
type namedBackend struct {
	results.Backend
	bucket string
}

func (n namedBackend) Bucket() string { return n.bucket }
