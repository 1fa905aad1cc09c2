package cloudtasks

import (
	"crypto/rsa"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/oidc"
)

// OIDC tokens. The real service attaches to an HTTP task whose request has
// an oidc_token an ID token that Google signs for the token's service
// account (Authorization: Bearer <JWT>; audience the token's audience, or
// the task's URL when it has none), minted for each dispatch attempt. The
// emulator does the same with a local RSA key (OIDCSigner): the tokens
// have the claims of a Google-signed service-account ID token (issuer
// https://accounts.google.com, email, email_verified, azp, sub, iat, exp
// one hour later), so a receiver verifies them exactly as in GCP — with
// the key's JWK set (OIDCSigner.JWKS) in place of Google's certificates.

// OIDCIssuer is the iss claim of the tokens (Google's).
const OIDCIssuer = oidc.Issuer

// OIDCTokenLifetime is how long a minted token is valid.
const OIDCTokenLifetime = oidc.TokenLifetime

// OIDCSigner mints the ID tokens of tasks with an oidc_token (shared/oidc's
// Signer: the stack's stand-in for Google's token service). Safe for
// concurrent use.
type OIDCSigner = oidc.Signer

// GenerateOIDCKey returns a new 2048-bit RSA key for an OIDCSigner.
func GenerateOIDCKey() (*rsa.PrivateKey, error) { return oidc.GenerateKey() }

// NewOIDCSigner returns a signer of RS256 tokens with key (oidc.NewSigner).
func NewOIDCSigner(key *rsa.PrivateKey) (*OIDCSigner, error) { return oidc.NewSigner(key) }

// authorizeLocked adds the Authorization header of an attempt of t: an ID
// token for the oidc_token of the task's request, else of the queue's
// HTTP target (the real service's precedence), when the server has an
// OIDCSigner. A token that cannot be minted is logged and the attempt goes
// without one (the target refuses it; the task is retried).
func (s *Server) authorizeLocked(q *queue, t *task, spec *attemptSpec, now time.Time) {
	if s.oidc == nil {
		return
	}
	tok := t.pb.GetHttpRequest().GetOidcToken()
	if tok == nil {
		tok = q.pb.GetHttpTarget().GetOidcToken()
	}
	if tok == nil {
		return
	}
	aud := tok.GetAudience()
	if aud == "" {
		aud = spec.url
	}
	jwt, err := s.oidc.Token(tok.GetServiceAccountEmail(), aud, now)
	if err != nil {
		s.log.Error("minting the task's OIDC token failed; dispatching without it", "queue", q.id, "task", spec.task, "error", err.Error())
		return
	}
	for k := range spec.header {
		if strings.EqualFold(k, "Authorization") {
			delete(spec.header, k)
		}
	}
	spec.header["Authorization"] = []string{"Bearer " + jwt}
}
