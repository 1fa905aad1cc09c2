package store

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/redact"
)

// Sealer encrypts values at rest and opens them again (shared/sign: the
// deployment's key, purpose sign.Workload; see SignerSealer in runtime).
type Sealer interface {
	Seal(plaintext []byte) (string, error)
	Open(sealed string) ([]byte, error)
}

// WorkloadSealer seals the secret-named values of an execution's workload
// (redact.IsSecretKey: api_token, db.password, ...) in the Firestore
// execution document (issue 10 item 6: no secret value in any document);
// the functions set it at start. Nil writes them as they are. The engine
// and the API see the opened values (they are the execution's input).
var WorkloadSealer Sealer

// sealedKey marks a sealed value: {"$sealed": "s1...."}.
const sealedKey = "$sealed"

// ErrSealed is returned (wrapped) when a document holds sealed values and
// no sealer is configured, or they do not open.
var ErrSealed = errors.New("store: the execution's sealed workload values cannot be opened")

// sealWorkload returns a copy of w with every value under a secret-named
// key (at any depth) replaced by its sealed form; w when WorkloadSealer is
// nil or nothing is secret.
func sealWorkload(w map[string]any) (map[string]any, error) {
	if WorkloadSealer == nil || w == nil {
		return w, nil
	}
	v, err := sealValue(w)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func sealValue(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if redact.IsSecretKey(k) && e != nil {
				b, err := json.Marshal(e)
				if err != nil {
					return nil, fmt.Errorf("store: seal workload.%s: %w", k, err)
				}
				s, err := WorkloadSealer.Seal(b)
				if err != nil {
					return nil, fmt.Errorf("store: seal workload.%s: %w", k, err)
				}
				out[k] = map[string]any{sealedKey: s}
				continue
			}
			ne, err := sealValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = ne
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			ne, err := sealValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = ne
		}
		return out, nil
	}
	return v, nil
}

// openWorkload returns w with every sealed value opened (in place).
func openWorkload(w map[string]any) (map[string]any, error) {
	v, err := openValue(w)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	return m, nil
}

func openValue(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if s, ok := x[sealedKey].(string); ok && len(x) == 1 {
			if WorkloadSealer == nil {
				return nil, fmt.Errorf("%w: no key is configured", ErrSealed)
			}
			b, err := WorkloadSealer.Open(s)
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
			ne, err := openValue(e)
			if err != nil {
				return nil, err
			}
			x[k] = ne
		}
		return x, nil
	case []any:
		for i, e := range x {
			ne, err := openValue(e)
			if err != nil {
				return nil, err
			}
			x[i] = ne
		}
	}
	return v, nil
}
