package credentials

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// prepare validates c for a put and returns it with the canonical kind,
// plus the JSON text of its data.
func prepare(c Credential) (Credential, string, error) {
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

// decodeData decodes the JSON text of a credential's data (whole numbers
// as int64, others float64).
func decodeData(name, s string) (map[string]any, error) {
	m := map[string]any{}
	if err := jsonx.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("credentials: decode data of %q: %w", name, err)
	}
	return m, nil
}

// storeNow is the timestamp a store records: UTC at microsecond precision
// (what Firestore keeps), so every backend returns the same value it was
// given.
func storeNow(now func() time.Time) time.Time {
	if now == nil {
		now = time.Now
	}
	return now().UTC().Truncate(time.Microsecond)
}
