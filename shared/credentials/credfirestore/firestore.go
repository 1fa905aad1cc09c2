// Package credfirestore is the Firestore driver of the credential store
// (shared/credentials): the metadata in Firestore documents (Firestore)
// and, on the emulator stack, the values sealed in Firestore documents
// (FirestoreValues). Only the control plane's wiring (shared/wiring)
// imports it: the runner resolves the credentials it was granted through
// the light shared/credentials package and links no Firestore client (the
// boundary test, shared/planes).
package credfirestore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/credentials"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/sign"
)

// Collection is the Firestore collection of the credentials' metadata:
// one document credentials/{name} per credential.
const Collection = "credentials"

// Firestore is the Store of GCP and of the emulator stack: the metadata
// (name, kind, description, the data field names, grants, the current
// value version, timestamps) in Firestore documents credentials/{name},
// the value (the JSON text of Data) in a Values driver — Secret Manager in
// GCP, sealed Firestore documents on the stack. No value is ever in a
// credentials document, so CredentialList and CredentialInfo read no
// secret and grant checks never touch a value.
//
// A put writes a new value version first, then the metadata naming it (a
// transaction that keeps created_at), then deletes the version it
// replaced (best effort: a failure leaves an unreferenced version); a get
// reads the metadata, then exactly the version it names. A delete removes
// the metadata, then every version.
type Firestore struct {
	c      *firestore.Client
	values credentials.Values
	// Now replaces time.Now for the timestamps when set.
	Now func() time.Time
}

// NewFirestore returns the store on c (owned by the caller, typically
// wiring.Deps.Store.Client()) with values kept in v.
func NewFirestore(c *firestore.Client, v credentials.Values) *Firestore {
	return &Firestore{c: c, values: v}
}

type credDoc struct {
	Name        string    `firestore:"name"`
	Kind        string    `firestore:"kind"`
	Description string    `firestore:"description"`
	Keys        []string  `firestore:"keys"`
	Grants      []string  `firestore:"grants"`
	Version     string    `firestore:"version"`
	CreatedAt   time.Time `firestore:"created_at"`
	UpdatedAt   time.Time `firestore:"updated_at"`
}

func (d credDoc) summary(name string) credentials.Summary {
	keys := d.Keys
	if keys == nil {
		keys = []string{}
	}
	return credentials.Summary{Name: name, Kind: d.Kind, Description: d.Description, Keys: keys, Grants: credentials.GrantsOrEmpty(d.Grants),
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
}

func (f *Firestore) doc(name string) *firestore.DocumentRef {
	return f.c.Collection(Collection).Doc(name)
}

func isCode(err error, c codes.Code) bool { return status.Code(err) == c }

// CredentialPut implements Store.
func (f *Firestore) CredentialPut(ctx context.Context, c credentials.Credential) error {
	c, data, err := credentials.Prepare(c)
	if err != nil {
		return err
	}
	if f.values == nil {
		return errors.New("credentials: the Firestore store has no credentials.Values driver")
	}
	ver, err := f.values.ValuePut(ctx, c.Name, []byte(data))
	if err != nil {
		return fmt.Errorf("credentials: put %q: %w", c.Name, err)
	}
	now := credentials.StoreNow(f.Now)
	ref := f.doc(c.Name)
	replaced := ""
	err = f.c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		d := credDoc{Name: c.Name, Kind: c.Kind, Description: c.Description, Keys: credentials.DataKeys(c.Data), Grants: credentials.GrantsOrEmpty(c.Grants),
			Version: ver, CreatedAt: now, UpdatedAt: now}
		replaced = ""
		s, err := tx.Get(ref)
		switch {
		case err == nil:
			var old credDoc
			if err := s.DataTo(&old); err == nil {
				if !old.CreatedAt.IsZero() {
					d.CreatedAt = old.CreatedAt
				}
				replaced = old.Version
			}
		case !isCode(err, codes.NotFound):
			return err
		}
		return tx.Set(ref, d)
	})
	if err != nil {
		_ = f.values.ValueDelete(context.WithoutCancel(ctx), c.Name, ver) // unreferenced
		return fmt.Errorf("credentials: put %q: %w", c.Name, err)
	}
	if replaced != "" && replaced != ver {
		_ = f.values.ValueDelete(ctx, c.Name, replaced)
	}
	return nil
}

// info reads the metadata document of name.
func (f *Firestore) info(ctx context.Context, name string) (*credDoc, error) {
	if credentials.ValidateName(name) != nil {
		return nil, credentials.ErrNotFound // no document can have that id
	}
	s, err := f.doc(name).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, credentials.ErrNotFound
		}
		return nil, fmt.Errorf("credentials: get %q: %w", name, err)
	}
	var d credDoc
	if err := s.DataTo(&d); err != nil {
		return nil, fmt.Errorf("credentials: decode %q: %w", name, err)
	}
	return &d, nil
}

// CredentialInfo implements Store: the metadata document only.
func (f *Firestore) CredentialInfo(ctx context.Context, name string) (*credentials.Summary, error) {
	d, err := f.info(ctx, name)
	if err != nil {
		return nil, err
	}
	s := d.summary(name)
	return &s, nil
}

// CredentialGet implements Store.
func (f *Firestore) CredentialGet(ctx context.Context, name string) (*credentials.Credential, error) {
	d, err := f.info(ctx, name)
	if err != nil {
		return nil, err
	}
	if d.Version == "" {
		return nil, fmt.Errorf("credentials: %q has no value (stored before values moved out of Firestore documents): set it again with `noetl credentials set %s`", name, name)
	}
	if f.values == nil {
		return nil, errors.New("credentials: the Firestore store has no credentials.Values driver")
	}
	b, err := f.values.ValueGet(ctx, name, d.Version)
	if err != nil {
		if errors.Is(err, credentials.ErrNotFound) {
			// The metadata names a version that is gone: not the
			// caller's "no such credential".
			return nil, fmt.Errorf("credentials: the value of %q (version %s) is missing from the value store", name, d.Version)
		}
		return nil, fmt.Errorf("credentials: get %q: %w", name, err)
	}
	data, err := credentials.DecodeData(name, string(b))
	if err != nil {
		return nil, err
	}
	return &credentials.Credential{Name: name, Kind: d.Kind, Description: d.Description, Grants: credentials.GrantsOrEmpty(d.Grants), Data: data,
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}, nil
}

// CredentialList implements Store. It reads metadata documents only.
func (f *Firestore) CredentialList(ctx context.Context) ([]credentials.Summary, error) {
	it := f.c.Collection(Collection).Select("name", "kind", "description", "keys", "grants", "created_at", "updated_at").Documents(ctx)
	defer it.Stop()
	out := []credentials.Summary{}
	for {
		s, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("credentials: list: %w", err)
		}
		var d credDoc
		if err := s.DataTo(&d); err != nil {
			return nil, fmt.Errorf("credentials: decode %q: %w", s.Ref.ID, err)
		}
		out = append(out, d.summary(s.Ref.ID))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CredentialDelete implements Store: the metadata, then every value
// version (a failure there is returned; the credential is already gone).
func (f *Firestore) CredentialDelete(ctx context.Context, name string) error {
	if credentials.ValidateName(name) != nil {
		return credentials.ErrNotFound
	}
	if _, err := f.doc(name).Delete(ctx, firestore.Exists); err != nil {
		if isCode(err, codes.NotFound) {
			return credentials.ErrNotFound
		}
		return fmt.Errorf("credentials: delete %q: %w", name, err)
	}
	if f.values != nil {
		if err := f.values.ValueDelete(ctx, name, ""); err != nil {
			return fmt.Errorf("credentials: %q deleted, but its values were not: %w", name, err)
		}
	}
	return nil
}

// SealWith returns the Sealer of FirestoreValues over the deployment's
// signer (AES-256-GCM under a key derived for purpose sign.Credential).
func SealWith(s *sign.Signer) credentials.Sealer { return signerSealer{s} }

type signerSealer struct{ s *sign.Signer }

func (x signerSealer) Seal(b []byte) (string, error) { return x.s.Seal(sign.Credential, b) }
func (x signerSealer) Open(t string) ([]byte, error) { return x.s.Open(sign.Credential, t) }

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
	sealer credentials.Sealer
}

// NewFirestoreValues returns the driver on c (owned by the caller)
// sealing with sealer (required).
func NewFirestoreValues(c *firestore.Client, sealer credentials.Sealer) *FirestoreValues {
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
	if err := credentials.ValidateName(name); err != nil {
		return "", err
	}
	if f.sealer == nil {
		return "", errors.New("credentials: FirestoreValues has no sealer")
	}
	sealed, err := f.sealer.Seal(value)
	if err != nil {
		return "", fmt.Errorf("credentials: seal the value of %q: %w", name, err)
	}
	ver := credentials.NewVersion()
	if _, err := f.doc(name, ver).Create(ctx, valueDoc{Name: name, Sealed: sealed}); err != nil {
		return "", fmt.Errorf("credentials: put the value of %q: %w", name, err)
	}
	return ver, nil
}

// ValueGet implements Values.
func (f *FirestoreValues) ValueGet(ctx context.Context, name, version string) ([]byte, error) {
	if credentials.ValidateName(name) != nil || version == "" || strings.ContainsAny(version, "./") {
		return nil, credentials.NotFoundf("credentials: value %s of %q: not found", version, name)
	}
	s, err := f.doc(name, version).Get(ctx)
	if isCode(err, codes.NotFound) {
		return nil, credentials.NotFoundf("credentials: value %s of %q: not found", version, name)
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
	if credentials.ValidateName(name) != nil {
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
