package runnerclient

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/api/idtoken"

	"github.com/noetl/gcpengine/shared/oidc"
)

// GoogleTokens returns the TokenSource of Google-signed ID tokens for
// audience (the runner's URL): in Cloud Functions and Cloud Run from the
// metadata server, for the function's service account. Tokens are cached
// until shortly before they expire.
func GoogleTokens(ctx context.Context, audience string) (TokenSource, error) {
	ts, err := idtoken.NewTokenSource(ctx, audience)
	if err != nil {
		return nil, fmt.Errorf("runner: ID token source for %s: %w", audience, err)
	}
	return tokenFunc(func(context.Context) (string, error) {
		t, err := ts.Token() // oauth2.ReuseTokenSource: cached while valid
		if err != nil {
			return "", err
		}
		return t.AccessToken, nil
	}), nil
}

type tokenFunc func(ctx context.Context) (string, error)

func (f tokenFunc) Token(ctx context.Context) (string, error) { return f(ctx) }

// KeyTokens mints the ID tokens of the local stack: tokens with the
// claims of Google's (issuer, email, email_verified, audience) signed by
// a key of the control plane (NOETL_RUNNER_TOKEN_KEY_FILE), whose public
// JWK set the runner verifies them with. A token is reused until five
// minutes before it expires. Safe for concurrent use.
type KeyTokens struct {
	// Signer signs the tokens.
	Signer *oidc.Signer
	// Email is the caller's service account (the runner checks it).
	Email string
	// Audience is the runner's URL.
	Audience string
	// Now replaces time.Now (tests).
	Now func() time.Time

	mu  sync.Mutex
	tok string
	exp time.Time
}

// Token implements TokenSource.
func (k *KeyTokens) Token(context.Context) (string, error) {
	now := time.Now()
	if k.Now != nil {
		now = k.Now()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.tok != "" && now.Before(k.exp.Add(-5*time.Minute)) {
		return k.tok, nil
	}
	t, err := k.Signer.Token(k.Email, k.Audience, now)
	if err != nil {
		return "", err
	}
	k.tok, k.exp = t, now.Add(oidc.TokenLifetime)
	return t, nil
}
