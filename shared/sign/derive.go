package sign

import (
	"crypto/hmac"
	"crypto/sha256"
)

// Barrier is the purpose of the keys that authenticate side-effect
// barrier records (README "Security"): a barrier row lives in the task's
// own database, where user SQL can write, so the engine hands each
// barriered attempt a key derived for its barrier alone (BarrierKey) and
// the postgres tool adopts a recorded row only if its MAC verifies under
// that key.
const Barrier Purpose = "barrier"

// BarrierKey returns the MAC key of one side-effect barrier (a barrier
// key, tools.Request.Barrier): HMAC-SHA256(HMAC-SHA256(first key,
// "noetl derive barrier"), barrier), 32 bytes. The signing key never
// leaves the engine: a task holds only its own barrier's key, which
// authenticates no other barrier and no engine message. A nil Signer (or
// an empty barrier) gives nil. Only the first key derives: after a
// rotation, an attempt recorded under the old key is not adopted and runs
// again (at least once).
func (s *Signer) BarrierKey(barrier string) []byte {
	if s == nil || len(s.keys) == 0 || barrier == "" {
		return nil
	}
	return derive(s.keys[0], Barrier, []byte(barrier))
}

// derive returns HMAC-SHA256(HMAC-SHA256(key, "noetl derive <purpose>"),
// info): a key for one use of one purpose.
func derive(key []byte, p Purpose, info []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("noetl derive " + string(p)))
	sub := h.Sum(nil)
	h = hmac.New(sha256.New, sub)
	h.Write(info)
	return h.Sum(nil)
}
