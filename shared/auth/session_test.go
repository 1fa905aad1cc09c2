package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"
)

// A console login checks the token as the Authorization header is
// checked, and its session never holds the token; a session resumes with
// the role the roles file gives now, and ends when it expires, when the
// static token it was opened with is replaced, or when identity tokens
// are no longer accepted.
func TestSessions(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	roles, err := ParseRoles([]byte("runner: [token]\nviewer: [\"*@example.com\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	v, err := idtoken.NewValidator(ctx, option.WithHTTPClient(&http.Client{Transport: &googleKeys{key: key, kid: "k1"}}))
	if err != nil {
		t.Fatal(err)
	}
	const static = "static-token-0123456789abcdef"
	a, err := New(ctx, Config{Token: static, Audiences: []string{aud}, Roles: roles, Validator: v})
	if err != nil {
		t.Fatal(err)
	}

	s, p, err := a.Login(ctx, static, 8*time.Hour, now)
	if err != nil || p.Name != TokenPrincipal || p.Role != Runner {
		t.Fatalf("static login: %+v %v", p, err)
	}
	b, _ := json.Marshal(s)
	if strings.Contains(string(b), static) || s.TokenID != TokenID(static) || s.Expires != now.Add(8*time.Hour).Unix() || len(s.Nonce) != 32 {
		t.Fatalf("session %s", b)
	}
	if s2, _, _ := a.Login(ctx, static, time.Hour, now); s2.Nonce == s.Nonce {
		t.Error("two logins share a nonce")
	}
	if p, err := a.Resume(s, now.Add(time.Hour)); err != nil || p != (Principal{Name: TokenPrincipal, Role: Runner}) {
		t.Fatalf("resume: %+v %v", p, err)
	}
	for name, c := range map[string]struct {
		s   Session
		at  time.Time
		a   *Authenticator
		msg string
	}{
		"expired":          {s, now.Add(8 * time.Hour), a, "expired"},
		"token replaced":   {s, now, mustNew(t, Config{Token: "another-token-0123456789", Roles: roles}), "changed"},
		"token removed":    {s, now, mustNew(t, Config{Audiences: []string{aud}, Validator: v}), "changed"},
		"forged principal": {Session{Principal: TokenPrincipal, Expires: now.Add(time.Hour).Unix()}, now, a, "no longer accepts"},
		"empty":            {Session{}, now, a, "expired"},
	} {
		if _, err := c.a.Resume(c.s, c.at); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want unauthenticated (%s)", name, err, c.msg)
		}
	}

	// An identity token: the session ends with the token.
	// (idtoken checks the expiry against the wall clock: a real now.)
	real := time.Now()
	tok := mint(t, key, "k1", claims("ada@example.com", nil))
	s, p, err = a.Login(ctx, tok, 8*time.Hour, real)
	if err != nil || p.Name != "ada@example.com" || p.Role != Viewer || s.TokenID != "" {
		t.Fatalf("identity login: %+v %+v %v", s, p, err)
	}
	if s.Expires > real.Add(time.Hour).Unix()+1 || s.Expires < real.Add(59*time.Minute).Unix() {
		t.Errorf("identity session expires at %d, want the token's expiry (an hour from %d)", s.Expires, real.Unix())
	}
	if b, _ := json.Marshal(s); strings.Contains(string(b), tok[:40]) {
		t.Error("the session holds the identity token")
	}
	if p, err := a.Resume(s, real); err != nil || p.Role != Viewer {
		t.Fatalf("identity resume: %+v %v", p, err)
	}
	if _, err := mustNew(t, Config{Token: static}).Resume(s, real); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("an identity session resumed where identity tokens are refused: %v", err)
	}

	// Refused tokens: the error never repeats them.
	for _, bad := range []string{"nope", static + "x", mint(t, key, "k1", claims("ada@example.com", func(c map[string]any) { c["aud"] = "https://elsewhere" }))} {
		_, _, err := a.Login(ctx, bad, time.Hour, now)
		if !errors.Is(err, ErrUnauthenticated) || strings.Contains(err.Error(), bad) {
			t.Errorf("login with a bad token: %v", err)
		}
	}
}

func mustNew(t *testing.T, cfg Config) *Authenticator {
	t.Helper()
	a, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
