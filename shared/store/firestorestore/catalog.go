package firestorestore

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/store"
)

type pbDoc struct {
	Path      string    `firestore:"path"`
	Name      string    `firestore:"name"`
	Latest    int       `firestore:"latest"`
	UpdatedAt time.Time `firestore:"updated_at"`
}

type pbVersionDoc struct {
	Version   int       `firestore:"version"`
	Source    string    `firestore:"source"`
	CreatedAt time.Time `firestore:"created_at"`
}

func (f *Firestore) playbook(path string) *firestore.DocumentRef {
	// Document ids cannot contain "/": the path is escaped.
	return f.c.Collection("playbooks").Doc(url.PathEscape(path))
}

// PlaybookPut implements store.Store: it stores Source as the next version of
// Path (versions are 1-based and assigned in a transaction) and returns it.
// Registering the same source as the latest version returns that version
// instead of adding a new one.
func (f *Firestore) PlaybookPut(ctx context.Context, p store.PlaybookPutParams) (int, error) {
	ref := f.playbook(p.Path)
	var version int
	err := f.c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		var d pbDoc
		s, err := tx.Get(ref)
		if err != nil && !isCode(err, codes.NotFound) {
			return err
		}
		if err == nil {
			if err := s.DataTo(&d); err != nil {
				return err
			}
			if d.Latest > 0 {
				ls, err := tx.Get(ref.Collection("versions").Doc(versionID(d.Latest)))
				if err == nil {
					var v pbVersionDoc
					if ls.DataTo(&v) == nil && v.Source == p.Source {
						version = d.Latest
						return nil
					}
				}
			}
		}
		version = d.Latest + 1
		now := time.Now().UTC()
		if err := tx.Set(ref, pbDoc{Path: p.Path, Name: p.Name, Latest: version, UpdatedAt: now}); err != nil {
			return err
		}
		return tx.Create(ref.Collection("versions").Doc(versionID(version)), pbVersionDoc{Version: version, Source: p.Source, CreatedAt: now})
	})
	if err != nil {
		return 0, fmt.Errorf("store: put playbook: %w", err)
	}
	return version, nil
}

func versionID(v int) string { return fmt.Sprintf("%06d", v) }

// PlaybookGet implements store.Store: version 0 means the latest; ErrNotFound
// when the path or the version is not registered.
func (f *Firestore) PlaybookGet(ctx context.Context, path string, version int) (*store.PlaybookVersion, error) {
	ref := f.playbook(path)
	s, err := ref.Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, store.ErrNotFound
		}
		return nil, fmt.Errorf("store: get playbook: %w", err)
	}
	var d pbDoc
	if err := s.DataTo(&d); err != nil {
		return nil, err
	}
	if version == 0 {
		version = d.Latest
	}
	vs, err := ref.Collection("versions").Doc(versionID(version)).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, store.ErrNotFound
		}
		return nil, fmt.Errorf("store: get playbook version: %w", err)
	}
	var v pbVersionDoc
	if err := vs.DataTo(&v); err != nil {
		return nil, err
	}
	return &store.PlaybookVersion{Path: d.Path, Name: d.Name, Version: v.Version, Source: v.Source, CreatedAt: v.CreatedAt}, nil
}

// PlaybookList implements store.Store (sorted by path).
func (f *Firestore) PlaybookList(ctx context.Context) ([]store.PlaybookSummary, error) {
	out, err := listDocs(ctx, f.c.Collection("playbooks").Query, "list playbooks", func(_ *firestore.DocumentSnapshot, d *pbDoc) (store.PlaybookSummary, error) {
		return store.PlaybookSummary{Path: d.Path, Name: d.Name, Latest: d.Latest, UpdatedAt: d.UpdatedAt}, nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
