package cloudtasks

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
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
const OIDCIssuer = "https://accounts.google.com"

// OIDCTokenLifetime is how long a minted token is valid.
const OIDCTokenLifetime = time.Hour

// OIDCSigner mints the ID tokens of tasks with an oidc_token. Safe for
// concurrent use.
type OIDCSigner struct {
	key    *rsa.PrivateKey
	kid    string
	signer jose.Signer
}

// GenerateOIDCKey returns a new 2048-bit RSA key for an OIDCSigner.
func GenerateOIDCKey() (*rsa.PrivateKey, error) {
	return rsa.GenerateKey(rand.Reader, 2048)
}

// NewOIDCSigner returns a signer of RS256 tokens with key; the key id (JWT
// header kid) is the RFC 7638 thumbprint of its public key.
func NewOIDCSigner(key *rsa.PrivateKey) (*OIDCSigner, error) {
	if key == nil {
		return nil, fmt.Errorf("cloudtasks: OIDC signer without a key")
	}
	pub := jose.JSONWebKey{Key: &key.PublicKey, Algorithm: string(jose.RS256), Use: "sig"}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("cloudtasks: OIDC key thumbprint: %w", err)
	}
	kid := base64.RawURLEncoding.EncodeToString(tp)
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: string(jose.RS256)}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("cloudtasks: OIDC signer: %w", err)
	}
	return &OIDCSigner{key: key, kid: kid, signer: sig}, nil
}

// KeyID returns the kid of the signer's tokens.
func (s *OIDCSigner) KeyID() string { return s.kid }

// JWKS returns the JSON Web Key Set ({"keys": [<public key>]}, RFC 7517)
// that verifies the signer's tokens, the document Google serves at
// https://www.googleapis.com/oauth2/v3/certs for its own keys.
func (s *OIDCSigner) JWKS() ([]byte, error) {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &s.key.PublicKey, KeyID: s.kid, Algorithm: string(jose.RS256), Use: "sig"}}}
	return json.Marshal(set)
}

// idClaims are the claims of a Google-signed service-account ID token.
type idClaims struct {
	jwt.Claims
	AuthorizedParty string `json:"azp"`
	Email           string `json:"email"`
	EmailVerified   bool   `json:"email_verified"`
}

// Token returns an ID token for the service account email with audience
// aud, issued at now and valid for OIDCTokenLifetime.
func (s *OIDCSigner) Token(email, aud string, now time.Time) (string, error) {
	sub := subjectOf(email)
	c := idClaims{
		Claims: jwt.Claims{Issuer: OIDCIssuer, Subject: sub, Audience: jwt.Audience{aud},
			IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(OIDCTokenLifetime))},
		AuthorizedParty: sub, Email: email, EmailVerified: true,
	}
	tok, err := jwt.Signed(s.signer).Claims(c).Serialize()
	if err != nil {
		return "", fmt.Errorf("cloudtasks: sign OIDC token: %w", err)
	}
	return tok, nil
}

// subjectOf is a stable numeric id for a service account email (Google's
// sub and azp of a service account are its 21-digit unique id).
func subjectOf(email string) string {
	h := sha256.Sum256([]byte(email))
	return "1" + strconv.FormatUint(binary.BigEndian.Uint64(h[:8])%1e19, 10)
}

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
