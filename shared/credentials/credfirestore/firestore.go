package credentials

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
	values Values
	// Now replaces time.Now for the timestamps when set.
	Now func() time.Time
}

// NewFirestore returns the store on c (owned by the caller, typically
// runtime.Deps.Store.Client()) with values kept in v.
func NewFirestore(c *firestore.Client, v Values) *Firestore { return &Firestore{c: c, values: v} }

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

func (d credDoc) summary(name string) Summary {
	keys := d.Keys
	if keys == nil {
		keys = []string{}
	}
	return Summary{Name: name, Kind: d.Kind, Description: d.Description, Keys: keys, Grants: grantsOrEmpty(d.Grants),
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
}

func (f *Firestore) doc(name string) *firestore.DocumentRef {
	return f.c.Collection(Collection).Doc(name)
}

func isCode(err error, c codes.Code) bool { return status.Code(err) == c }

// CredentialPut implements Store.
func (f *Firestore) CredentialPut(ctx context.Context, c Credential) error {
	c, data, err := prepare(c)
	if err != nil {
		return err
	}
	if f.values == nil {
		return errors.New("credentials: the Firestore store has no Values driver")
	}
	ver, err := f.values.ValuePut(ctx, c.Name, []byte(data))
	if err != nil {
		return fmt.Errorf("credentials: put %q: %w", c.Name, err)
	}
	now := storeNow(f.Now)
	ref := f.doc(c.Name)
	replaced := ""
	err = f.c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		d := credDoc{Name: c.Name, Kind: c.Kind, Description: c.Description, Keys: DataKeys(c.Data), Grants: grantsOrEmpty(c.Grants),
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
	if ValidateName(name) != nil {
		return nil, ErrNotFound // no document can have that id
	}
	s, err := f.doc(name).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, ErrNotFound
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
func (f *Firestore) CredentialInfo(ctx context.Context, name string) (*Summary, error) {
	d, err := f.info(ctx, name)
	if err != nil {
		return nil, err
	}
	s := d.summary(name)
	return &s, nil
}

// CredentialGet implements Store.
func (f *Firestore) CredentialGet(ctx context.Context, name string) (*Credential, error) {
	d, err := f.info(ctx, name)
	if err != nil {
		return nil, err
	}
	if d.Version == "" {
		return nil, fmt.Errorf("credentials: %q has no value (stored before values moved out of Firestore documents): set it again with `noetl credentials set %s`", name, name)
	}
	if f.values == nil {
		return nil, errors.New("credentials: the Firestore store has no Values driver")
	}
	b, err := f.values.ValueGet(ctx, name, d.Version)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			// The metadata names a version that is gone: not the
			// caller's "no such credential".
			return nil, fmt.Errorf("credentials: the value of %q (version %s) is missing from the value store", name, d.Version)
		}
		return nil, fmt.Errorf("credentials: get %q: %w", name, err)
	}
	data, err := decodeData(name, string(b))
	if err != nil {
		return nil, err
	}
	return &Credential{Name: name, Kind: d.Kind, Description: d.Description, Grants: grantsOrEmpty(d.Grants), Data: data,
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}, nil
}

// CredentialList implements Store. It reads metadata documents only.
func (f *Firestore) CredentialList(ctx context.Context) ([]Summary, error) {
	it := f.c.Collection(Collection).Select("name", "kind", "description", "keys", "grants", "created_at", "updated_at").Documents(ctx)
	defer it.Stop()
	out := []Summary{}
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
	if ValidateName(name) != nil {
		return ErrNotFound
	}
	if _, err := f.doc(name).Delete(ctx, firestore.Exists); err != nil {
		if isCode(err, codes.NotFound) {
			return ErrNotFound
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
