// Package oidc verifies the Google-signed OIDC ID tokens that Cloud Tasks
// attaches to the HTTP requests of a queue's tasks (HttpRequest.oidc_token:
// Authorization: Bearer <JWT>), so that execute only runs units that
// Cloud Tasks delivered on behalf of the configured service account.
//
// Verification is google.golang.org/api/idtoken's (RS256 signature against
// Google's published certificates, audience, expiry) plus the claims
// idtoken leaves to the caller: the issuer is Google's
// (https://accounts.google.com or accounts.google.com), the email is the
// expected service account and is verified. On the local stack the Cloud
// Tasks emulator signs the same tokens with a local RSA key whose JWK set
// the stack writes to a file (NOETL_OIDC_JWKS_FILE): the verifier then
// reads Google's certificate URL from that file instead of the network,
// and every other check is the same.
package oidc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	"github.com/noetl/gcpengine/shared/errs"
)

// Issuers are the issuers of Google-signed ID tokens.
var Issuers = []string{"https://accounts.google.com", "accounts.google.com"}

// ErrUnauthorized is wrapped by every verification failure (a missing,
// malformed, expired, forged or foreign token). Code PermissionDenied:
// not retried.
var ErrUnauthorized = errs.Sentinel(errs.PermissionDenied, "oidc: unauthorized")

// Verifier checks the ID tokens of one audience and one service account.
type Verifier struct {
	// Audience is the expected aud claim (the execute function's URL,
	// NOETL_EXECUTE_AUDIENCE).
	Audience string
	// Email is the expected email claim (NOETL_TASKS_SERVICE_ACCOUNT).
	Email string
	v     *idtoken.Validator
}

// NewVerifier returns a verifier of tokens for audience signed for the
// service account email. jwksFile, when not empty, is a JSON Web Key Set
// (RFC 7517, {"keys": [...]}) used instead of Google's certificates (the
// local stack's key, see the Cloud Tasks emulator); it is read on each
// certificate refresh (idtoken caches it for 5 minutes). Errors: an empty
// audience or email, or an unreadable jwksFile.
func NewVerifier(ctx context.Context, audience, email, jwksFile string) (*Verifier, error) {
	if audience == "" || email == "" {
		return nil, fmt.Errorf("oidc: a verifier needs an audience and a service account email (got %q, %q)", audience, email)
	}
	v, err := NewValidator(ctx, jwksFile)
	if err != nil {
		return nil, err
	}
	return &Verifier{Audience: audience, Email: email, v: v}, nil
}

// NewValidator returns an identity-token validator (signature, audience,
// expiry: google.golang.org/api/idtoken) over Google's certificates, or,
// when jwksFile is set, over the JSON Web Key Set in that file (read on
// each certificate refresh): the local stack's key, with which the stack
// signs the tokens Cloud Tasks attaches and its tests mint the identity
// tokens of api callers. Errors: an unreadable jwksFile.
func NewValidator(ctx context.Context, jwksFile string) (*idtoken.Validator, error) {
	var opts []idtoken.ClientOption
	if jwksFile != "" {
		if _, err := os.ReadFile(jwksFile); err != nil {
			return nil, fmt.Errorf("oidc: JWK set: %w", err)
		}
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: fileCerts(jwksFile)}))
	}
	v, err := idtoken.NewValidator(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("oidc: validator: %w", err)
	}
	return v, nil
}

// Verify checks the Authorization header value of a request ("Bearer
// <token>") and returns the token's claims. Every failure wraps
// ErrUnauthorized and says why (never the token itself).
func (v *Verifier) Verify(ctx context.Context, authorization string) (*idtoken.Payload, error) {
	scheme, tok, found := strings.Cut(strings.TrimSpace(authorization), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return nil, fmt.Errorf("%w: no bearer token", ErrUnauthorized)
	}
	p, err := v.v.Validate(ctx, strings.TrimSpace(tok), v.Audience)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnauthorized, err)
	}
	if p.IssuedAt == 0 {
		return nil, fmt.Errorf("%w: token without iat", ErrUnauthorized)
	}
	okIss := false
	for _, iss := range Issuers {
		okIss = okIss || p.Issuer == iss
	}
	if !okIss {
		return nil, fmt.Errorf("%w: issuer %q is not Google's", ErrUnauthorized, p.Issuer)
	}
	if email, _ := p.Claims["email"].(string); email != v.Email {
		return nil, fmt.Errorf("%w: token of %q, want %q", ErrUnauthorized, email, v.Email)
	}
	if verified, _ := p.Claims["email_verified"].(bool); !verified {
		return nil, fmt.Errorf("%w: email of the token is not verified", ErrUnauthorized)
	}
	return p, nil
}

// fileCerts answers every request (idtoken only asks for Google's
// certificate URL) with the JWK set in a file.
type fileCerts string

// RoundTrip implements http.RoundTripper.
func (f fileCerts) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := os.ReadFile(string(f))
	if err != nil {
		return nil, fmt.Errorf("oidc: JWK set: %w", err)
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"public, max-age=300"}},
		Body:          io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)), Request: r,
	}, nil
}
