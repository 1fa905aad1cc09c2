package store

import (
	"encoding/json"
	"fmt"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/redact"
)

// Sealer encrypts values at rest and opens them again (shared/sign: the
// deployment's key, purpose sign.Workload; see SignerSealer in runtime).
type Sealer interface {
	Seal(plaintext []byte) (string, error)
	Open(sealed string) ([]byte, error)
}

// sealedKey marks a sealed value: {"$sealed": "s1...."}.
const sealedKey = "$sealed"

// ErrSealed is returned (wrapped) when a document holds sealed values and
// no sealer is configured, or they do not open. Code Internal: the
// engine's own state does not open with its keys (a key dropped from the
// rotation); retried and reported.
var ErrSealed = errs.Sentinel(errs.Internal, "store: the execution's sealed workload values cannot be opened")

// SealWorkload returns a copy of w with every value under a secret-named
// key (redact.IsSecretKey, at any depth) replaced by its sealed form
// {"$sealed": "..."}; w itself when sealer is nil. Errors: the sealer's,
// or a value that does not encode as JSON. A driver seals the workload
// it writes in a document with it.
func SealWorkload(sealer Sealer, w map[string]any) (map[string]any, error) {
	if sealer == nil || w == nil {
		return w, nil
	}
	v, err := sealValue(sealer, w)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func sealValue(sealer Sealer, v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if redact.IsSecretKey(k) && e != nil {
				b, err := json.Marshal(e)
				if err != nil {
					return nil, fmt.Errorf("store: seal workload.%s: %w", k, err)
				}
				s, err := sealer.Seal(b)
				if err != nil {
					return nil, fmt.Errorf("store: seal workload.%s: %w", k, err)
				}
				out[k] = map[string]any{sealedKey: s}
				continue
			}
			ne, err := sealValue(sealer, e)
			if err != nil {
				return nil, err
			}
			out[k] = ne
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			ne, err := sealValue(sealer, e)
			if err != nil {
				return nil, err
			}
			out[i] = ne
		}
		return out, nil
	}
	return v, nil
}

// OpenWorkload returns w with every sealed value opened (in place); the
// inverse of SealWorkload. Errors wrap ErrSealed: a sealed value and no
// sealer, or one that does not open or decode.
func OpenWorkload(sealer Sealer, w map[string]any) (map[string]any, error) {
	v, err := openValue(sealer, w)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	return m, nil
}

func openValue(sealer Sealer, v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if s, ok := x[sealedKey].(string); ok && len(x) == 1 {
			if sealer == nil {
				return nil, fmt.Errorf("%w: no key is configured", ErrSealed)
			}
			b, err := sealer.Open(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrSealed, err)
			}
			var out any
			if err := jsonx.Unmarshal(b, &out); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrSealed, err)
			}
			return out, nil
		}
		for k, e := range x {
			ne, err := openValue(sealer, e)
			if err != nil {
				return nil, err
			}
			x[k] = ne
		}
		return x, nil
	case []any:
		for i, e := range x {
			ne, err := openValue(sealer, e)
			if err != nil {
				return nil, err
			}
			x[i] = ne
		}
	}
	return v, nil
}
