package e2e

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/noetl/gcpengine/emulators/cloudtasks"
)

// OIDCKey returns the stack's Cloud Tasks OIDC signing key
// (NOETL_OIDC_KEY_FILE, written by the supervisor).
func OIDCKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	path := os.Getenv("NOETL_OIDC_KEY_FILE")
	if path == "" {
		t.Fatal("NOETL_OIDC_KEY_FILE is unset: source .stack/env")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		t.Fatalf("%s: %T, want an RSA key", path, k)
	}
	return rk
}

// ExecuteToken returns an ID token signed by key for the service account
// email and audience aud, issued at now: what the stack's Cloud Tasks
// attach to their calls of execute when key is the stack's key, email
// NOETL_TASKS_SERVICE_ACCOUNT and aud the execute URL.
func ExecuteToken(t testing.TB, key *rsa.PrivateKey, email, aud string, now time.Time) string {
	t.Helper()
	s, err := cloudtasks.NewOIDCSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Token(email, aud, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ExecuteAuthorization returns the Authorization header value Cloud Tasks
// sends to the stack's execute function: "Bearer <ID token>" of the tasks
// service account for the execute URL, signed by the stack's key.
func ExecuteAuthorization(t testing.TB) string {
	t.Helper()
	url := os.Getenv("NOETL_FUNCTIONS_URL") + "/execute"
	return "Bearer " + ExecuteToken(t, OIDCKey(t), os.Getenv("NOETL_TASKS_SERVICE_ACCOUNT"), url, time.Now())
}

// PostExecute POSTs body to the stack's execute function the way Cloud
// Tasks does: with a valid OIDC token of the tasks service account.
func PostExecute(t testing.TB, body []byte) (int, string) {
	t.Helper()
	return postWith(t, os.Getenv("NOETL_FUNCTIONS_URL")+"/execute", body, ExecuteAuthorization(t))
}

// postWith POSTs a JSON body with an Authorization header ("" for none).
func postWith(t testing.TB, url string, body []byte, authorization string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
