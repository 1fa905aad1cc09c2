package server

import (
	"context"

	"github.com/noetl/gcpengine/shared/oidc"
)

// TokenVerifier is the runner's Verifier: the caller's ID token must be
// Google-signed (or, on the stack, signed by the key of the JWK set) for
// the runner's audience and the invoker's service account (shared/oidc).
type TokenVerifier struct{ V *oidc.Verifier }

// NewTokenVerifier returns the verifier of calls for audience (the
// runner's URL) from the service account invoker; jwksFile as in
// oidc.NewVerifier (empty: Google's certificates).
func NewTokenVerifier(ctx context.Context, audience, invoker, jwksFile string) (*TokenVerifier, error) {
	v, err := oidc.NewVerifier(ctx, audience, invoker, jwksFile)
	if err != nil {
		return nil, err
	}
	return &TokenVerifier{V: v}, nil
}

// VerifyCaller implements Verifier.
func (t *TokenVerifier) VerifyCaller(ctx context.Context, authorization string) error {
	_, err := t.V.Verify(ctx, authorization)
	return err
}
