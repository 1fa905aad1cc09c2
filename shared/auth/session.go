package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/api/idtoken"
)

// Session is a console login (functions/api/console keeps it sealed in an
// HttpOnly cookie): who logged in, with what kind of credential, until
// when. It never holds the credential itself.
type Session struct {
	// Principal is the principal's name (an email, or TokenPrincipal).
	Principal string `json:"p"`
	// TokenID fingerprints the static token a session was opened with
	// (TokenID), so that replacing NOETL_API_TOKEN ends such sessions; ""
	// for a session opened with an identity token.
	TokenID string `json:"t,omitempty"`
	// Expires is the end of the session (Unix seconds).
	Expires int64 `json:"e"`
	// Nonce is random: it tells sessions apart (the console binds its
	// anti-forgery tokens to it).
	Nonce string `json:"n"`
}

// TokenID returns the fingerprint of a static token in sessions: 16 hex
// characters of a SHA-256 (never the token).
func TokenID(token string) string {
	h := sha256.Sum256([]byte("noetl console session\x00" + token))
	return hex.EncodeToString(h[:8])
}

// Login checks a bearer token exactly as Authenticate checks an
// Authorization header (the static token, or a Google identity token for
// one of the audiences) and opens a session for its principal lasting
// ttl, cut to an identity token's own expiry. Errors wrap
// ErrUnauthenticated (never with the token).
func (a *Authenticator) Login(ctx context.Context, token string, ttl time.Duration, now time.Time) (Session, Principal, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", nil)
	if err != nil {
		return Session{}, Principal{}, err
	}
	r.Header.Set("Authorization", "Bearer "+token)
	p, err := a.Authenticate(r)
	if err != nil {
		return Session{}, Principal{}, err
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return Session{}, Principal{}, err
	}
	s := Session{Principal: p.Name, Expires: now.Add(ttl).Unix(), Nonce: hex.EncodeToString(nonce)}
	if a.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(a.cfg.Token)) == 1 {
		s.TokenID = TokenID(a.cfg.Token)
	} else if pl, err := idtoken.ParsePayload(token); err == nil && pl.Expires > 0 && pl.Expires < s.Expires {
		s.Expires = pl.Expires
	}
	return s, p, nil
}

// Resume returns the principal of a session with the role the roles file
// gives it now. Errors wrap ErrUnauthenticated: the session has expired,
// or it was opened with a static token that is no longer the configured
// one.
func (a *Authenticator) Resume(s Session, now time.Time) (Principal, error) {
	if s.Principal == "" || now.Unix() >= s.Expires {
		return Principal{}, fmt.Errorf("%w: the console session has expired (log in again)", ErrUnauthenticated)
	}
	if s.TokenID != "" && (a.cfg.Token == "" || s.TokenID != TokenID(a.cfg.Token)) {
		return Principal{}, fmt.Errorf("%w: the token the console session was opened with has changed (log in again)", ErrUnauthenticated)
	}
	if s.TokenID == "" && (s.Principal == TokenPrincipal || len(a.cfg.Audiences) == 0) {
		return Principal{}, fmt.Errorf("%w: the console session was opened with an identity token, which the function no longer accepts (log in again)", ErrUnauthenticated)
	}
	if !a.Configured() {
		return Principal{}, fmt.Errorf("%w: the function accepts no credentials (configure NOETL_API_TOKEN or NOETL_API_AUDIENCES)", ErrUnauthenticated)
	}
	return Principal{Name: s.Principal, Role: a.cfg.Roles.Of(s.Principal)}, nil
}
