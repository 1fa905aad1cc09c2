package sign

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/noetl/gcpengine/shared/errs"
)

// Workload is the purpose of sealed workload values (shared/store keeps
// the secret-named values of an execution's workload sealed at rest).
const Workload Purpose = "workload"

// Credential is the purpose of sealed credential values (the local
// stack's credential value store, shared/credentials FirestoreValues).
const Credential Purpose = "credential"

// sealVersion prefixes every sealed text.
const sealVersion = "s1."

// ErrSealed: a sealed text that none of the keys opens (or that is
// malformed). Code InvalidArgument: opening it again cannot succeed.
var ErrSealed = errs.Sentinel(errs.InvalidArgument, "sign: the sealed value does not open with the configured keys")

// sealKey derives the AES-256 key of a purpose from a signing key
// (HMAC-SHA256 of "noetl seal <purpose>": one key, separate uses).
func sealKey(key []byte, p Purpose) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("noetl seal " + string(p)))
	return h.Sum(nil)
}

func gcm(key []byte, p Purpose) (cipher.AEAD, error) {
	b, err := aes.NewCipher(sealKey(key, p))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// Seal encrypts plaintext for purpose p with AES-256-GCM under a key
// derived from the first key (random nonce; the purpose is authenticated
// data): "s1." + unpadded base64url(nonce ‖ ciphertext). A nil Signer is
// ErrNoKey.
func (s *Signer) Seal(p Purpose, plaintext []byte) (string, error) {
	if s == nil || len(s.keys) == 0 {
		return "", ErrNoKey
	}
	a, err := gcm(s.keys[0], p)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return sealVersion + base64.RawURLEncoding.EncodeToString(a.Seal(nonce, nonce, plaintext, []byte(p))), nil
}

// Open decrypts a Seal text of purpose p with any of the keys. Errors:
// ErrNoKey, ErrSealed (malformed, altered, another purpose or key).
func (s *Signer) Open(p Purpose, sealed string) ([]byte, error) {
	if s == nil || len(s.keys) == 0 {
		return nil, ErrNoKey
	}
	if !strings.HasPrefix(sealed, sealVersion) {
		return nil, ErrSealed
	}
	raw, err := base64.RawURLEncoding.DecodeString(sealed[len(sealVersion):])
	if err != nil {
		return nil, ErrSealed
	}
	for _, k := range s.keys {
		a, err := gcm(k, p)
		if err != nil || len(raw) < a.NonceSize() {
			return nil, ErrSealed
		}
		if out, err := a.Open(nil, raw[:a.NonceSize()], raw[a.NonceSize():], []byte(p)); err == nil {
			return out, nil
		}
	}
	return nil, ErrSealed
}
