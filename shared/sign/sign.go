// Package sign authenticates the engine's own messages (README "Security":
// only the engine drives the engine). Every event batch the functions
// publish on the events topic, every command they publish on the commands
// topic and every unit of work they hand to Cloud Tasks carries an
// HMAC-SHA256 of its exact bytes under a per-deployment key; route,
// materialize, dispatch and execute verify it before acting, so a message
// posted by anyone else — a forged step.done, a unit with its own args, a
// push body sent straight to a function's URL — is refused (acked and
// dead-lettered by the caller, never retried).
//
// Where the signature travels: the Pub/Sub message attribute Attribute
// ("noetl_sig") and the Cloud Task HTTP header Header
// ("X-Noetl-Signature"). Its text is "v1=" followed by the unpadded
// base64url HMAC-SHA256 of the purpose, a zero byte and the body, so a
// batch's signature never verifies as a command's.
//
// Keys come from NOETL_SIGNING_KEY (shared/config; a Secret Manager secret
// in GCP, generated into .stack/ by the local stack): one or more
// comma-separated keys of at least MinKeyLen bytes each. The first key
// signs; every key verifies, so a key is rotated by prepending the new one,
// redeploying, and dropping the old one once no message signed with it can
// still be delivered (the queues' and subscriptions' retention).
package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/noetl/gcpengine/shared/errs"
)

// Attribute is the Pub/Sub message attribute that carries a signature.
const Attribute = "noetl_sig"

// Header is the HTTP header of a Cloud Task that carries the signature of
// its body.
const Header = "X-Noetl-Signature"

// MinKeyLen is the shortest key accepted, in bytes (a 256-bit key, the
// size of the HMAC-SHA256 output; RFC 2104 §3).
const MinKeyLen = 32

// MaxSignatureLen bounds the text of a signature read from a message
// (longer text is refused before any decoding).
const MaxSignatureLen = 128

// version prefixes every signature (the scheme can change without
// ambiguity).
const version = "v1="

// Purpose separates the kinds of signed messages: a signature made for one
// purpose never verifies for another.
type Purpose string

// Purposes.
const (
	// Batch is an event batch (types.Batch JSON) on the events topic.
	Batch Purpose = "batch"
	// Command is a unit of work (types.Command JSON): a message on the
	// commands topic or the body of a Cloud Task.
	Command Purpose = "command"
	// Session is a console session cookie (sealed: functions/api/console).
	Session Purpose = "console-session"
	// CSRF is a console form's anti-forgery token (signed).
	CSRF Purpose = "console-csrf"
)

// Errors of Verify (wrapped with detail; branch with errors.Is or on their
// errs code, InvalidArgument: a message that fails verification is
// dead-lettered, never retried).
var (
	// ErrUnsigned: the message carries no signature.
	ErrUnsigned = errs.Sentinel(errs.InvalidArgument, "sign: the message carries no signature")
	// ErrForged: the signature is malformed or does not match the body
	// under any configured key.
	ErrForged = errs.Sentinel(errs.InvalidArgument, "sign: the signature does not match the message")
	// ErrNoKey: no signing key is configured.
	ErrNoKey = errs.Sentinel(errs.InvalidArgument, "sign: no signing key is configured (NOETL_SIGNING_KEY)")
)

// Signer signs with its first key and verifies with any of its keys. It is
// immutable and safe for concurrent use. A nil *Signer signs nothing
// (Sign returns "") and verifies nothing (Verify returns ErrNoKey).
type Signer struct {
	keys [][]byte
}

// New returns a Signer over keys (the first signs). Each key must be at
// least MinKeyLen bytes; at least one key is required.
func New(keys ...[]byte) (*Signer, error) {
	if len(keys) == 0 {
		return nil, ErrNoKey
	}
	s := &Signer{}
	for i, k := range keys {
		if len(k) < MinKeyLen {
			return nil, fmt.Errorf("sign: key %d is %d bytes, want at least %d", i+1, len(k), MinKeyLen)
		}
		s.keys = append(s.keys, append([]byte(nil), k...))
	}
	return s, nil
}

// Parse reads the NOETL_SIGNING_KEY text: comma-separated keys, each used
// as its bytes (surrounding space ignored; e.g. 64 hex characters from
// `openssl rand -hex 32`). Empty text is ErrNoKey. The error never
// contains key material.
func Parse(text string) (*Signer, error) {
	var keys [][]byte
	for _, part := range strings.Split(text, ",") {
		if p := strings.TrimSpace(part); p != "" {
			keys = append(keys, []byte(p))
		}
	}
	return New(keys...)
}

func mac(key []byte, p Purpose, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(p))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// Sign returns the signature of body for purpose p under the first key
// ("v1=<base64url>", 46 characters), or "" for a nil Signer.
func (s *Signer) Sign(p Purpose, body []byte) string {
	if s == nil || len(s.keys) == 0 {
		return ""
	}
	return version + base64.RawURLEncoding.EncodeToString(mac(s.keys[0], p, body))
}

// Verify checks that sig is a signature of body for purpose p under one of
// the keys. Errors: ErrNoKey (nil Signer), ErrUnsigned (sig is empty),
// ErrForged (malformed, too long, or no key matches). It runs in time
// independent of where a wrong signature differs (hmac.Equal).
func (s *Signer) Verify(p Purpose, body []byte, sig string) error {
	if s == nil || len(s.keys) == 0 {
		return ErrNoKey
	}
	if sig == "" {
		return ErrUnsigned
	}
	if len(sig) > MaxSignatureLen || !strings.HasPrefix(sig, version) {
		return fmt.Errorf("%w (not a %s signature)", ErrForged, strings.TrimSuffix(version, "="))
	}
	got, err := base64.RawURLEncoding.DecodeString(sig[len(version):])
	// The decoder skips CR and LF: only the canonical spelling is a
	// signature (FuzzVerify finding, kept in its corpus).
	if err != nil || len(got) != sha256.Size || base64.RawURLEncoding.EncodeToString(got) != sig[len(version):] {
		return fmt.Errorf("%w (malformed)", ErrForged)
	}
	for _, k := range s.keys {
		if hmac.Equal(got, mac(k, p, body)) {
			return nil
		}
	}
	return ErrForged
}

// Rejected reports whether err is a signature refusal (ErrUnsigned,
// ErrForged or ErrNoKey): the message must be dead-lettered, not retried.
func Rejected(err error) bool {
	return errors.Is(err, ErrUnsigned) || errors.Is(err, ErrForged) || errors.Is(err, ErrNoKey)
}
