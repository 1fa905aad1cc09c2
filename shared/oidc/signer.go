package oidc

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Signer mints ID tokens with the claims of a Google-signed
// service-account ID token (issuer https://accounts.google.com, email,
// email_verified, azp, sub, iat, exp) with a local RSA key: the local
// stack's stand-in for Google's token service (the Cloud Tasks emulator's
// tokens, execute's tokens for the runner). A Verifier built on the key's
// JWK set (JWKS) checks them exactly as it checks Google's. Safe for
// concurrent use.
type Signer struct {
	key    *rsa.PrivateKey
	kid    string
	signer jose.Signer
}

// Issuer is the iss claim of the tokens a Signer mints (Google's).
const Issuer = "https://accounts.google.com"

// TokenLifetime is how long a minted token is valid (as Google's).
const TokenLifetime = time.Hour

// GenerateKey returns a new 2048-bit RSA key for a Signer.
func GenerateKey() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) }

// NewSigner returns a signer of RS256 tokens with key; the key id (JWT
// header kid) is the RFC 7638 thumbprint of its public key.
func NewSigner(key *rsa.PrivateKey) (*Signer, error) {
	if key == nil {
		return nil, errors.New("oidc: signer without a key")
	}
	pub := jose.JSONWebKey{Key: &key.PublicKey, Algorithm: string(jose.RS256), Use: "sig"}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("oidc: key thumbprint: %w", err)
	}
	kid := base64.RawURLEncoding.EncodeToString(tp)
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: string(jose.RS256)}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("oidc: signer: %w", err)
	}
	return &Signer{key: key, kid: kid, signer: sig}, nil
}

// LoadSigner reads a PKCS #8 PEM RSA private key file (PrivateKeyPEM's
// format) and returns its Signer.
func LoadSigner(path string) (*Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("oidc: signing key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("oidc: signing key %s is not PEM", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("oidc: signing key %s: %w", path, err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("oidc: signing key %s is a %T, want RSA", path, k)
	}
	return NewSigner(rk)
}

// PrivateKeyPEM returns the signer's private key as PKCS #8 PEM.
func (s *Signer) PrivateKeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(s.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// KeyID returns the kid of the signer's tokens.
func (s *Signer) KeyID() string { return s.kid }

// JWKS returns the JSON Web Key Set ({"keys": [<public key>]}, RFC 7517)
// that verifies the signer's tokens, the document Google serves at
// https://www.googleapis.com/oauth2/v3/certs for its own keys.
func (s *Signer) JWKS() ([]byte, error) {
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
// aud, issued at now and valid for TokenLifetime.
func (s *Signer) Token(email, aud string, now time.Time) (string, error) {
	sub := SubjectOf(email)
	c := idClaims{
		Claims: jwt.Claims{Issuer: Issuer, Subject: sub, Audience: jwt.Audience{aud},
			IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(TokenLifetime))},
		AuthorizedParty: sub, Email: email, EmailVerified: true,
	}
	tok, err := jwt.Signed(s.signer).Claims(c).Serialize()
	if err != nil {
		return "", fmt.Errorf("oidc: sign token: %w", err)
	}
	return tok, nil
}

// SubjectOf is a stable numeric id for a service account email (Google's
// sub and azp of a service account are its 21-digit unique id).
func SubjectOf(email string) string {
	h := sha256.Sum256([]byte(email))
	return "1" + strconv.FormatUint(binary.BigEndian.Uint64(h[:8])%1e19, 10)
}
