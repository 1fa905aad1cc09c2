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

// Collection is the Firestore collection of the Firestore backend: one
// document credentials/{name} per credential.
const Collection = "credentials"

// Firestore is the Store on Cloud Firestore (or its emulator when
// FIRESTORE_EMULATOR_HOST is set): the backend of the local emulator
// stack. A document holds name, kind, description, keys (the data field
// names, so that CredentialList reads no secret), data (the JSON text of
// Data), created_at and updated_at.
type Firestore struct {
	c *firestore.Client
	// Now replaces time.Now for the timestamps when set.
	Now func() time.Time
}

// NewFirestore returns the Firestore backend on c. The client stays
// owned by the caller (typically runtime.Deps.Store.Client()).
func NewFirestore(c *firestore.Client) *Firestore { return &Firestore{c: c} }

type credDoc struct {
	Name        string    `firestore:"name"`
	Kind        string    `firestore:"kind"`
	Description string    `firestore:"description"`
	Keys        []string  `firestore:"keys"`
	Data        string    `firestore:"data,omitempty"`
	CreatedAt   time.Time `firestore:"created_at"`
	UpdatedAt   time.Time `firestore:"updated_at"`
}

func (f *Firestore) doc(name string) *firestore.DocumentRef {
	return f.c.Collection(Collection).Doc(name)
}

func isCode(err error, c codes.Code) bool { return status.Code(err) == c }

// CredentialPut implements Store (a transaction keeps created_at).
func (f *Firestore) CredentialPut(ctx context.Context, c Credential) error {
	c, data, err := prepare(c)
	if err != nil {
		return err
	}
	now := storeNow(f.Now)
	ref := f.doc(c.Name)
	err = f.c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		d := credDoc{Name: c.Name, Kind: c.Kind, Description: c.Description, Keys: DataKeys(c.Data), Data: data,
			CreatedAt: now, UpdatedAt: now}
		s, err := tx.Get(ref)
		switch {
		case err == nil:
			var old credDoc
			if err := s.DataTo(&old); err == nil && !old.CreatedAt.IsZero() {
				d.CreatedAt = old.CreatedAt
			}
		case !isCode(err, codes.NotFound):
			return err
		}
		return tx.Set(ref, d)
	})
	if err != nil {
		return fmt.Errorf("credentials: put %q: %w", c.Name, err)
	}
	return nil
}

// CredentialGet implements Store.
func (f *Firestore) CredentialGet(ctx context.Context, name string) (*Credential, error) {
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
	data, err := decodeData(name, d.Data)
	if err != nil {
		return nil, err
	}
	return &Credential{Name: name, Kind: d.Kind, Description: d.Description, Data: data,
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}, nil
}

// CredentialList implements Store. It selects the metadata fields only:
// no data leaves Firestore.
func (f *Firestore) CredentialList(ctx context.Context) ([]Summary, error) {
	it := f.c.Collection(Collection).Select("name", "kind", "description", "keys", "created_at", "updated_at").Documents(ctx)
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
		keys := d.Keys
		if keys == nil {
			keys = []string{}
		}
		out = append(out, Summary{Name: s.Ref.ID, Kind: d.Kind, Description: d.Description, Keys: keys,
			CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CredentialDelete implements Store.
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
	return nil
}
