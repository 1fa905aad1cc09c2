// Package catalog finds playbooks by path (DSL.md "Document": metadata.path):
// first in the playbook catalog (Firestore playbooks/{path}/versions/{v},
// registered through POST /playbooks), then as a file under the repository
// root. The api (POST /executions {path, version}) and `kind: playbook`
// tasks use it.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/store"
)

// Catalog resolves playbook paths.
type Catalog struct {
	Store store.Store
	// Root is the directory relative file paths are resolved against.
	Root string
}

// ErrNotFound: neither the catalog nor the file system has the playbook.
var ErrNotFound = errors.New("catalog: playbook not found")

// Entry is a resolved playbook.
type Entry struct {
	Playbook *dsl.Playbook
	Source   []byte
	// Version is the catalog version (0 when loaded from a file).
	Version int
	// Origin is "catalog" or the file path.
	Origin string
}

// Load resolves path (and version; 0 = latest) to a validated playbook.
// A file is only consulted when version is 0. Errors: ErrNotFound, or a
// *dsl.ValidationError for an invalid playbook.
func (c *Catalog) Load(ctx context.Context, path string, version int) (*Entry, error) {
	if c.Store != nil {
		v, err := c.Store.PlaybookGet(ctx, path, version)
		switch {
		case err == nil:
			pb, err := dsl.Load([]byte(v.Source), path)
			if err != nil {
				return nil, err
			}
			return &Entry{Playbook: pb, Source: []byte(v.Source), Version: v.Version, Origin: "catalog"}, nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	if version != 0 {
		return nil, fmt.Errorf("%w: %s version %d", ErrNotFound, path, version)
	}
	for _, cand := range candidates(c.Root, path) {
		b, err := os.ReadFile(cand)
		if err != nil {
			continue
		}
		pb, err := dsl.Load(b, cand)
		if err != nil {
			return nil, err
		}
		return &Entry{Playbook: pb, Source: b, Origin: cand}, nil
	}
	return nil, fmt.Errorf("%w: %s (not in the catalog, no file under %s)", ErrNotFound, path, c.Root)
}

func candidates(root, p string) []string {
	base := p
	if !filepath.IsAbs(p) {
		base = filepath.Join(root, p)
	}
	out := []string{base}
	if !strings.HasSuffix(base, ".yaml") && !strings.HasSuffix(base, ".yml") {
		out = append(out, base+".yaml", base+".yml")
	}
	return out
}
