package firestorestore

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/store"
)

// PlaybookPutParams registers a playbook version in the catalog
// (Firestore playbooks/{path}/versions/{version}).
type PlaybookPutParams struct {
	// Path is the catalog key (the playbook's metadata.path, or its name).
	Path string
	Name string
	// Source is the playbook YAML.
	Source string
}

// PlaybookVersion is one stored version.
type PlaybookVersion struct {
	Path      string    `json:"path"`
	Name      string    `json:"name"`
	Version   int       `json:"version"` // 1, 2, ... in registration order
	Source    string    `json:"source,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// PlaybookSummary lists one catalog entry.
type PlaybookSummary struct {
	Path      string    `json:"path"`
	Name      string    `json:"name"`
	Latest    int       `json:"latest"`
	UpdatedAt time.Time `json:"updated_at"`
}

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

// PlaybookPut implements Store: it stores Source as the next version of
// Path (versions are 1-based and assigned in a transaction) and returns it.
// Registering the same source as the latest version returns that version
// instead of adding a new one.
func (f *Firestore) PlaybookPut(ctx context.Context, p PlaybookPutParams) (int, error) {
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

// PlaybookGet implements Store: version 0 means the latest; ErrNotFound
// when the path or the version is not registered.
func (f *Firestore) PlaybookGet(ctx context.Context, path string, version int) (*PlaybookVersion, error) {
	ref := f.playbook(path)
	s, err := ref.Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, ErrNotFound
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
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("store: get playbook version: %w", err)
	}
	var v pbVersionDoc
	if err := vs.DataTo(&v); err != nil {
		return nil, err
	}
	return &PlaybookVersion{Path: d.Path, Name: d.Name, Version: v.Version, Source: v.Source, CreatedAt: v.CreatedAt}, nil
}

// PlaybookList implements Store (sorted by path).
func (f *Firestore) PlaybookList(ctx context.Context) ([]PlaybookSummary, error) {
	it := f.c.Collection("playbooks").Documents(ctx)
	defer it.Stop()
	out := []PlaybookSummary{}
	for {
		s, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("store: list playbooks: %w", err)
		}
		var d pbDoc
		if err := s.DataTo(&d); err != nil {
			return nil, err
		}
		out = append(out, PlaybookSummary{Path: d.Path, Name: d.Name, Latest: d.Latest, UpdatedAt: d.UpdatedAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// ParseVersion parses a catalog version ("" or "latest" = 0, "3" = 3).
func ParseVersion(s string) (int, error) {
	if s == "" || s == "latest" {
		return 0, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("invalid playbook version %q: want a positive integer or \"latest\"", s)
	}
	return v, nil
}
