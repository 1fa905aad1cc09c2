package cloudtasks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"

	"github.com/noetl/gcpengine/shared/oidc"
)

// A task with an oidc_token is dispatched with a fresh ID token on every
// attempt: signed by the emulator's key, for the token's service account,
// with the token's audience or else the task's URL; it verifies with the
// signer's JWK set exactly as Google's tokens verify with Google's
// certificates. A task without one, or a server without a signer, sends
// no Authorization header; the token replaces a user Authorization header.
func TestOIDCTokenPerAttempt(t *testing.T) {
	key, err := GenerateOIDCKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := NewOIDCSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := signer.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, jwks, 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Options{OIDC: signer})
	tg := newTarget(t, statusSeq(503, 200))
	q := e.queue("oidc", nil)
	const sa = "noetl-tasks@test-project.iam.gserviceaccount.com"

	withToken := func(name, aud string) *cloudtaskspb.Task {
		tk := httpTask(q.Name+"/tasks/"+name, tg.URL+"/execute")
		tk.GetHttpRequest().Headers = map[string]string{"Authorization": "Bearer user-supplied"}
		tk.GetHttpRequest().AuthorizationHeader = &cloudtaskspb.HttpRequest_OidcToken{OidcToken: &cloudtaskspb.OidcToken{ServiceAccountEmail: sa, Audience: aud}}
		return tk
	}
	e.createTask(q.Name, withToken("explicit", "https://execute.example"))
	waitFor(t, 10*time.Second, "two attempts", func() bool { return tg.count() == 2 })
	e.createTask(q.Name, withToken("default-aud", ""))
	e.createTask(q.Name, httpTask(q.Name+"/tasks/plain", tg.URL+"/plain"))
	waitFor(t, 10*time.Second, "four requests", func() bool { return tg.count() == 4 })

	hits := tg.snapshot()
	verify := func(aud, authz string) error {
		v, err := oidc.NewVerifier(context.Background(), aud, sa, file)
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Verify(context.Background(), authz)
		return err
	}
	var explicit []string
	for _, h := range hits {
		switch h.path {
		case "/execute":
			authz := h.header.Get("Authorization")
			if strings.Contains(authz, "user-supplied") || !strings.HasPrefix(authz, "Bearer ") {
				t.Fatalf("Authorization %q", authz)
			}
			if h.header.Get("X-CloudTasks-TaskName") == "explicit" {
				explicit = append(explicit, authz)
				if err := verify("https://execute.example", authz); err != nil {
					t.Errorf("explicit audience: %v", err)
				}
				if err := verify(tg.URL+"/execute", authz); !errors.Is(err, oidc.ErrUnauthorized) {
					t.Errorf("token for https://execute.example verified for another audience: %v", err)
				}
			} else if err := verify(tg.URL+"/execute", authz); err != nil {
				t.Errorf("default audience (the task URL): %v", err)
			}
		case "/plain":
			if a := h.header.Get("Authorization"); a != "" {
				t.Errorf("task without oidc_token sent Authorization %q", a)
			}
		}
	}
	if len(explicit) != 2 {
		t.Fatalf("%d attempts of the explicit task, want 2", len(explicit))
	}
	// Each attempt gets its own token (iat/exp of the attempt).
	var c1, c2 map[string]any
	decode := func(tok string, into *map[string]any) {
		p, err := oidcPayload(tok)
		if err != nil {
			t.Fatal(err)
		}
		*into = p
	}
	decode(explicit[0], &c1)
	decode(explicit[1], &c2)
	if c1["iss"] != OIDCIssuer || c1["email"] != sa || c1["email_verified"] != true || c1["sub"] == "" || c1["azp"] != c1["sub"] {
		t.Errorf("claims %v", c1)
	}
	if exp, iat := c1["exp"].(float64), c1["iat"].(float64); exp-iat != OIDCTokenLifetime.Seconds() {
		t.Errorf("lifetime %gs, want %v", exp-iat, OIDCTokenLifetime)
	}
	if c2["iat"].(float64) < c1["iat"].(float64) {
		t.Errorf("second attempt's token issued before the first's")
	}

	// No signer: the token settings are kept, no header is sent.
	e2 := newEnv(t, Options{})
	tg2 := newTarget(t, statusSeq(200))
	q2 := e2.queue("nosigner", nil)
	tk := httpTask(q2.Name+"/tasks/x", tg2.URL+"/execute")
	tk.GetHttpRequest().AuthorizationHeader = &cloudtaskspb.HttpRequest_OidcToken{OidcToken: &cloudtaskspb.OidcToken{ServiceAccountEmail: sa}}
	e2.createTask(q2.Name, tk)
	waitFor(t, 10*time.Second, "one request", func() bool { return tg2.count() == 1 })
	if a := tg2.snapshot()[0].header.Get("Authorization"); a != "" {
		t.Errorf("no signer, yet Authorization %q", a)
	}
}

// oidcPayload decodes a JWT's claims (no verification).
func oidcPayload(authz string) (map[string]any, error) {
	tok := strings.TrimPrefix(authz, "Bearer ")
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a JWT")
	}
	b, err := decodeSegment(parts[1])
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

func decodeSegment(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
