package auth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"
)

const aud = "https://noetl-api-123.us-central1.run.app"

// googleKeys is a fake of Google's certificate endpoint (every request
// answers the JWKS of one RSA key), so the real idtoken validator checks
// real signatures offline.
type googleKeys struct {
	key *rsa.PrivateKey
	kid string
}

func (g *googleKeys) RoundTrip(r *http.Request) (*http.Response, error) {
	jwks := map[string]any{"keys": []map[string]any{{
		"kid": g.kid, "kty": "RSA", "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(g.key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(g.key.E)).Bytes()),
	}}}
	b, _ := json.Marshal(jwks)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(string(b))), Request: r}, nil
}

// mint returns an RS256 JWT of claims signed with key.
func mint(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	head := enc(map[string]any{"alg": "RS256", "kid": kid, "typ": "JWT"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(head))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func claims(email string, mod func(map[string]any)) map[string]any {
	c := map[string]any{"iss": "https://accounts.google.com", "aud": aud, "email": email, "email_verified": true,
		"sub": "1234", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	if mod != nil {
		mod(c)
	}
	return c
}

func request(method, path, bearer string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	return r
}

func TestRoles(t *testing.T) {
	r, err := ParseRoles([]byte("admin: [Alice@Example.com, token]\nrunner: [ci@p.iam.gserviceaccount.com]\nviewer: ['*@example.com']\n"))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]Role{
		"alice@example.com": Admin, "token": Admin, "ci@p.iam.gserviceaccount.com": Runner,
		"bob@example.com": Viewer, "eve@example.org": None, "example.com": None, "bob@badexample.com": None,
	} {
		if got := r.Of(p); got != want {
			t.Errorf("Of(%s) = %s, want %s", p, got, want)
		}
	}
	var none *Roles
	if none.Of("anyone") != Admin {
		t.Error("without a roles file every principal is admin")
	}
	for _, bad := range []string{"owner: [a@b.c]", "admin: a@b.c", "admin: ['']", "{"} {
		if _, err := ParseRoles([]byte(bad)); err == nil {
			t.Errorf("ParseRoles(%q) accepted", bad)
		}
	}
}

func TestStaticToken(t *testing.T) {
	roles, _ := ParseRoles([]byte("viewer: [token]"))
	a, err := New(context.Background(), Config{Token: "s3cret-local-token-0123456789", Roles: roles})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, auth string
		need       Role
		want       int
	}{
		{"no header", "", Viewer, 401},
		{"wrong token", "Bearer nope", Viewer, 401},
		{"basic scheme", "Basic czNjcmV0", Viewer, 401},
		{"viewer reads", "Bearer s3cret-local-token-0123456789", Viewer, 0},
		{"viewer cannot run", "Bearer s3cret-local-token-0123456789", Runner, 403},
		{"viewer cannot admin", "Bearer s3cret-local-token-0123456789", Admin, 403},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/api/executions", nil)
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		p, err := a.Authorize(r, c.need)
		got := 0
		if err != nil {
			got = Status(err)
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: the error echoes the token: %v", c.name, err)
			}
		}
		if got != c.want {
			t.Errorf("%s: status %d (%v), want %d", c.name, got, err, c.want)
		}
		if err == nil && p.Name != TokenPrincipal {
			t.Errorf("%s: principal %q", c.name, p.Name)
		}
	}
	unconfigured, _ := New(context.Background(), Config{})
	if _, err := unconfigured.Authorize(request("GET", "/", "anything"), Viewer); Status(err) != 401 {
		t.Errorf("an api without credentials configured must refuse everyone, got %v", err)
	}
}

// Identity tokens are verified by google.golang.org/api/idtoken against
// (a fake of) Google's published keys: signature, expiry, audience, plus
// the issuer and a verified email here.
func TestIdentityTokens(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	ctx := context.Background()
	v, err := idtoken.NewValidator(ctx, option.WithHTTPClient(&http.Client{Transport: &googleKeys{key: key, kid: "k1"}}))
	if err != nil {
		t.Fatal(err)
	}
	roles, _ := ParseRoles([]byte("runner: [ci@p.iam.gserviceaccount.com]\nviewer: ['*@example.com']"))
	a, err := New(ctx, Config{Audiences: []string{aud, "https://noetl-emit-123.us-central1.run.app"}, Roles: roles, Validator: v})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		token string
		need  Role
		want  int
		who   string
	}{
		{"runner starts", mint(t, key, "k1", claims("ci@p.iam.gserviceaccount.com", nil)), Runner, 0, "ci@p.iam.gserviceaccount.com"},
		{"viewer by domain reads", mint(t, key, "k1", claims("bob@example.com", nil)), Viewer, 0, "bob@example.com"},
		{"viewer cannot start", mint(t, key, "k1", claims("bob@example.com", nil)), Runner, 403, ""},
		{"unknown principal", mint(t, key, "k1", claims("eve@evil.org", nil)), Viewer, 403, ""},
		{"emit audience", mint(t, key, "k1", claims("ci@p.iam.gserviceaccount.com", func(c map[string]any) { c["aud"] = "https://noetl-emit-123.us-central1.run.app" })), Runner, 0, "ci@p.iam.gserviceaccount.com"},
		{"signed by another key", mint(t, other, "k1", claims("ci@p.iam.gserviceaccount.com", nil)), Viewer, 401, ""},
		{"unknown key id", mint(t, key, "k2", claims("ci@p.iam.gserviceaccount.com", nil)), Viewer, 401, ""},
		{"other audience", mint(t, key, "k1", claims("ci@p.iam.gserviceaccount.com", func(c map[string]any) { c["aud"] = "https://elsewhere" })), Viewer, 401, ""},
		{"expired", mint(t, key, "k1", claims("ci@p.iam.gserviceaccount.com", func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })), Viewer, 401, ""},
		{"other issuer", mint(t, key, "k1", claims("ci@p.iam.gserviceaccount.com", func(c map[string]any) { c["iss"] = "https://evil.example" })), Viewer, 401, ""},
		{"unverified email", mint(t, key, "k1", claims("ci@p.iam.gserviceaccount.com", func(c map[string]any) { c["email_verified"] = false })), Viewer, 401, ""},
		{"no email", mint(t, key, "k1", claims("", nil)), Viewer, 401, ""},
		{"garbage", "a.b.c", Viewer, 401, ""},
	}
	for _, c := range cases {
		p, err := a.Authorize(request("POST", "/api/executions", c.token), c.need)
		got := 0
		if err != nil {
			got = Status(err)
		}
		if got != c.want {
			t.Errorf("%s: status %d (%v), want %d", c.name, got, err, c.want)
			continue
		}
		if c.want == 0 && p.Name != c.who {
			t.Errorf("%s: principal %q, want %q", c.name, p.Name, c.who)
		}
		if c.want == 401 && !errors.Is(err, ErrUnauthenticated) || c.want == 403 && !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: error %v does not wrap the right sentinel", c.name, err)
		}
	}
}

// A caller below the operator role touches its own executions only; an
// execution without a recorded creator is an operator's.
func TestMayAccess(t *testing.T) {
	for _, c := range []struct {
		p       Principal
		creator string
		want    bool
	}{
		{Principal{Name: "alice@example.com", Role: Runner}, "alice@example.com", true},
		{Principal{Name: "ALICE@example.com", Role: Viewer}, "alice@example.com", true},
		{Principal{Name: "bob@example.com", Role: Runner}, "alice@example.com", false},
		{Principal{Name: "bob@example.com", Role: Runner}, "", false},
		{Principal{Name: "", Role: Runner}, "", false},
		{Principal{Name: "ops@example.com", Role: Operator}, "alice@example.com", true},
		{Principal{Name: "ops@example.com", Role: Operator}, "", true},
		{Principal{Name: "token", Role: Admin}, "alice@example.com", true},
	} {
		if got := MayAccess(c.p, c.creator); got != c.want {
			t.Errorf("MayAccess(%+v, %q) = %v, want %v", c.p, c.creator, got, c.want)
		}
	}
	r, err := ParseRoles([]byte("operator: [ops@example.com]\nrunner: [\"*@example.com\"]"))
	if err != nil || r.Of("ops@example.com") != Operator || r.Of("x@example.com") != Runner || Operator.String() != "operator" {
		t.Fatalf("operator role: %v %v", r, err)
	}
}
