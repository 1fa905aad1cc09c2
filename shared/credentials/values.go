package credentials

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
)

// Values keeps credential values (the JSON text of Credential.Data) apart
// from their metadata: the Firestore store records which version of a
// credential's value is current and reads exactly that version, so a put
// racing another never pairs one put's metadata with the other's value.
// Drivers: credsecretmanager.SecretManager (GCP),
// credfirestore.FirestoreValues (the emulator stack, sealed), MemoryValues
// (tests). credentialstest.RunValues is their
// conformance suite. Implementations are safe for concurrent use and
// never retry.
type Values interface {
	// ValuePut stores a new version of the value of credential name
	// (a valid name, ValidateName) and returns its version: an opaque,
	// non-empty string that ValueGet and ValueDelete take. Earlier
	// versions stay readable until deleted.
	ValuePut(ctx context.Context, name string, value []byte) (version string, err error)
	// ValueGet returns the value of one version of credential name, a
	// fresh copy; ErrNotFound when that version is not there (never put,
	// deleted, or a version of another credential).
	ValueGet(ctx context.Context, name, version string) ([]byte, error)
	// ValueDelete deletes one version of credential name, or every
	// version when version is ""; deleting what is not there is not an
	// error.
	ValueDelete(ctx context.Context, name, version string) error
}

// Sealer encrypts values at rest (credfirestore.FirestoreValues):
// shared/wiring passes the deployment's key (credfirestore.SealWith over
// shared/sign, purpose sign.Credential).
type Sealer interface {
	Seal(plaintext []byte) (string, error)
	Open(sealed string) ([]byte, error)
}

// NewVersion returns a random value version id (16 lower-case base32
// characters): the versions MemoryValues and the Firestore values driver
// (credfirestore.FirestoreValues) hand out.
func NewVersion() string { return strings.ToLower(rand.Text()[:16]) }

// MemoryValues is an in-process Values driver for tests. The zero value
// is not usable; call NewMemoryValues.
type MemoryValues struct {
	mu sync.Mutex
	m  map[string]map[string][]byte // name → version → value
}

// NewMemoryValues returns an empty MemoryValues.
func NewMemoryValues() *MemoryValues { return &MemoryValues{m: map[string]map[string][]byte{}} }

// ValuePut implements Values.
func (v *MemoryValues) ValuePut(ctx context.Context, name string, value []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := ValidateName(name); err != nil {
		return "", err
	}
	ver := NewVersion()
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m[name] == nil {
		v.m[name] = map[string][]byte{}
	}
	v.m[name][ver] = append([]byte(nil), value...)
	return ver, nil
}

// ValueGet implements Values.
func (v *MemoryValues) ValueGet(ctx context.Context, name, version string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	b, ok := v.m[name][version]
	if !ok {
		return nil, NotFoundf("credentials: value %s of %q: not found", version, name)
	}
	return append([]byte(nil), b...), nil
}

// ValueDelete implements Values.
func (v *MemoryValues) ValueDelete(ctx context.Context, name, version string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if version == "" {
		delete(v.m, name)
	} else {
		delete(v.m[name], version)
	}
	return nil
}
