package oidc

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

const (
	aud   = "https://noetl-execute-abc-uc.a.run.app"
	email = "noetl-tasks@proj.iam.gserviceaccount.com"
)

type claims struct {
	jwt.Claims
	Email         string `json:"email,omitempty"`
	EmailVerified bool   `json:"email_verified"`
}

func newKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sign(t *testing.T, key *rsa.PrivateKey, kid string, alg jose.SignatureAlgorithm, c claims) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func good(now time.Time) claims {
	return claims{Claims: jwt.Claims{Issuer: "https://accounts.google.com", Subject: "1234", Audience: jwt.Audience{aud},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}, Email: email, EmailVerified: true}
}

// The verifier accepts exactly the tokens Google would sign for the tasks
// service account and the execute audience, checked against the JWK set
// file, and says why it refuses the others.
func TestVerify(t *testing.T) {
	key, other := newKey(t), newKey(t)
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}}
	b, _ := json.Marshal(set)
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(context.Background(), aud, email, file)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	p, err := v.Verify(context.Background(), "Bearer "+sign(t, key, "k1", jose.RS256, good(now)))
	if err != nil || p.Claims["email"] != email {
		t.Fatalf("valid token: %v %v", p, err)
	}
	if _, err := v.Verify(context.Background(), "bearer  "+sign(t, key, "k1", jose.RS256, good(now))); err != nil {
		t.Errorf("scheme is case-insensitive: %v", err)
	}
	mod := func(f func(*claims)) claims { c := good(now); f(&c); return c }
	for name, c := range map[string]struct {
		auth, why string
	}{
		"none":           {"", "no bearer token"},
		"basic":          {"Basic abc", "no bearer token"},
		"garbage":        {"Bearer a.b", "three segments"},
		"other key":      {"Bearer " + sign(t, other, "k1", jose.RS256, good(now)), "verification error"},
		"unknown kid":    {"Bearer " + sign(t, key, "k2", jose.RS256, good(now)), "matching cert"},
		"audience":       {"Bearer " + sign(t, key, "k1", jose.RS256, mod(func(c *claims) { c.Audience = jwt.Audience{aud + "/x"} })), "audience"},
		"expired":        {"Bearer " + sign(t, key, "k1", jose.RS256, mod(func(c *claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Minute)) })), "expired"},
		"issuer":         {"Bearer " + sign(t, key, "k1", jose.RS256, mod(func(c *claims) { c.Issuer = "https://evil.example" })), "issuer"},
		"email":          {"Bearer " + sign(t, key, "k1", jose.RS256, mod(func(c *claims) { c.Email = "x@proj.iam.gserviceaccount.com" })), "want"},
		"unverified":     {"Bearer " + sign(t, key, "k1", jose.RS256, mod(func(c *claims) { c.EmailVerified = false })), "not verified"},
		"no iat":         {"Bearer " + sign(t, key, "k1", jose.RS256, mod(func(c *claims) { c.IssuedAt = nil })), "iat"},
		"HS256 with key": {"Bearer " + hs256(t), "RS256 or ES256"},
	} {
		_, err := v.Verify(context.Background(), c.auth)
		if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want ErrUnauthorized mentioning %q", name, err, c.why)
		}
	}
}

func hs256(t *testing.T) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(good(time.Now())).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestNewVerifierErrors(t *testing.T) {
	if _, err := NewVerifier(context.Background(), "", email, ""); err == nil {
		t.Error("no audience accepted")
	}
	if _, err := NewVerifier(context.Background(), aud, "", ""); err == nil {
		t.Error("no email accepted")
	}
	if _, err := NewVerifier(context.Background(), aud, email, filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing JWK set accepted")
	}
}
