package credentials

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// Prepare validates c for a put and returns it with the canonical kind,
// plus the JSON text of its data (errors wrap ErrInvalid). Every Store
// driver (Memory, credfirestore.Firestore) puts through it.
func Prepare(c Credential) (Credential, string, error) {
	if err := c.Validate(); err != nil {
		return c, "", err
	}
	c.Kind, _ = NormalizeKind(c.Kind)
	b, err := json.Marshal(c.Data)
	if err != nil {
		return c, "", invalidf("data of %q cannot be encoded as JSON: %v", c.Name, err)
	}
	return c, string(b), nil
}

// DecodeData decodes the JSON text of a credential's data, as Prepare
// encoded it (whole numbers as int64, others float64); the error names
// the credential.
func DecodeData(name, s string) (map[string]any, error) {
	m := map[string]any{}
	if err := jsonx.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("credentials: decode data of %q: %w", name, err)
	}
	return m, nil
}

// StoreNow is the timestamp a store records: UTC at microsecond precision
// (what Firestore keeps), so every backend returns the same value it was
// given.
func StoreNow(now func() time.Time) time.Time {
	if now == nil {
		now = time.Now
	}
	return now().UTC().Truncate(time.Microsecond)
}
