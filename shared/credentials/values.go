package credentials

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/sign"
)

// Values keeps credential values (the JSON text of Credential.Data) apart
// from their metadata: the Firestore store records which version of a
// credential's value is current and reads exactly that version, so a put
// racing another never pairs one put's metadata with the other's value.
// Drivers: SecretManager (GCP), FirestoreValues (the emulator stack,
// sealed), MemoryValues (tests). credentialstest.RunValues is their
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

// Sealer encrypts values at rest (FirestoreValues): shared/runtime
// passes the deployment's key (shared/sign, purpose sign.Credential).
type Sealer interface {
	Seal(plaintext []byte) (string, error)
	Open(sealed string) ([]byte, error)
}

// SealWith returns the Sealer of FirestoreValues over the deployment's
// signer (AES-256-GCM under a key derived for purpose sign.Credential).
func SealWith(s *sign.Signer) Sealer { return signerSealer{s} }

type signerSealer struct{ s *sign.Signer }

func (x signerSealer) Seal(b []byte) (string, error) { return x.s.Seal(sign.Credential, b) }
func (x signerSealer) Open(t string) ([]byte, error) { return x.s.Open(sign.Credential, t) }

// newVersion returns a random version id (16 lower-case base32
// characters).
func newVersion() string { return strings.ToLower(rand.Text()[:16]) }

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
	ver := newVersion()
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
		return nil, notFoundf("credentials: value %s of %q: not found", version, name)
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

// ValuesCollection is the Firestore collection of FirestoreValues: one
// document credential_values/{name}.{version} per version, holding the
// sealed value.
const ValuesCollection = "credential_values"

// FirestoreValues keeps credential values in Firestore, each sealed
// (AES-256-GCM under the deployment's key: Sealer) — the local emulator
// stack's driver, where no Secret Manager exists. Documents
// credential_values/{name}.{version} hold {name, sealed}; the name
// alphabet ([A-Za-z0-9_-]) has no '.', so the id is unambiguous.
type FirestoreValues struct {
	c      *firestore.Client
	sealer Sealer
}

// NewFirestoreValues returns the driver on c (owned by the caller)
// sealing with sealer (required).
func NewFirestoreValues(c *firestore.Client, sealer Sealer) *FirestoreValues {
	return &FirestoreValues{c: c, sealer: sealer}
}

type valueDoc struct {
	Name   string `firestore:"name"`
	Sealed string `firestore:"sealed"`
}

func (f *FirestoreValues) doc(name, version string) *firestore.DocumentRef {
	return f.c.Collection(ValuesCollection).Doc(name + "." + version)
}

// ValuePut implements Values.
func (f *FirestoreValues) ValuePut(ctx context.Context, name string, value []byte) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", err
	}
	if f.sealer == nil {
		return "", errors.New("credentials: FirestoreValues has no sealer")
	}
	sealed, err := f.sealer.Seal(value)
	if err != nil {
		return "", fmt.Errorf("credentials: seal the value of %q: %w", name, err)
	}
	ver := newVersion()
	if _, err := f.doc(name, ver).Create(ctx, valueDoc{Name: name, Sealed: sealed}); err != nil {
		return "", fmt.Errorf("credentials: put the value of %q: %w", name, err)
	}
	return ver, nil
}

// ValueGet implements Values.
func (f *FirestoreValues) ValueGet(ctx context.Context, name, version string) ([]byte, error) {
	if ValidateName(name) != nil || version == "" || strings.ContainsAny(version, "./") {
		return nil, notFoundf("credentials: value %s of %q: not found", version, name)
	}
	s, err := f.doc(name, version).Get(ctx)
	if isCode(err, codes.NotFound) {
		return nil, notFoundf("credentials: value %s of %q: not found", version, name)
	}
	if err != nil {
		return nil, fmt.Errorf("credentials: get the value of %q: %w", name, err)
	}
	var d valueDoc
	if err := s.DataTo(&d); err != nil || d.Name != name {
		return nil, fmt.Errorf("credentials: value %s of %q: malformed document", version, name)
	}
	if f.sealer == nil {
		return nil, errors.New("credentials: FirestoreValues has no sealer")
	}
	b, err := f.sealer.Open(d.Sealed)
	if err != nil {
		return nil, fmt.Errorf("credentials: open the value of %q (sealed under another key?): %w", name, err)
	}
	return b, nil
}

// ValueDelete implements Values.
func (f *FirestoreValues) ValueDelete(ctx context.Context, name, version string) error {
	if ValidateName(name) != nil {
		return nil
	}
	if version != "" {
		if strings.ContainsAny(version, "./") {
			return nil
		}
		if _, err := f.doc(name, version).Delete(ctx); err != nil && !isCode(err, codes.NotFound) {
			return fmt.Errorf("credentials: delete the value of %q: %w", name, err)
		}
		return nil
	}
	it := f.c.Collection(ValuesCollection).Where("name", "==", name).Select().Documents(ctx)
	defer it.Stop()
	for {
		s, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("credentials: delete the values of %q: %w", name, err)
		}
		if _, err := s.Ref.Delete(ctx); err != nil && !isCode(err, codes.NotFound) {
			return fmt.Errorf("credentials: delete the values of %q: %w", name, err)
		}
	}
}
