// Package catalog finds playbooks by path (NoETL DSL spec "Document": metadata.path):
// first in the playbook catalog (Firestore playbooks/{path}/versions/{v},
// registered through POST /playbooks), then as a file under the configured
// playbook root. The api (POST /executions {path, version}) and `kind:
// playbook` tasks use it.
//
// File lookups are confined to the root (README "Security"): a path must be
// local (relative, no `..` leaving the root; filepath.IsLocal), it is
// opened through os.Root, so symbolic links are followed only while they
// stay inside the root, only regular files of at most MaxFileBytes are
// read, and a file that does not declare `kind: Playbook` is refused
// without its contents appearing in the error.
package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	slashpath "path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
)

// Catalog resolves playbook paths.
type Catalog struct {
	Store store.Store
	// Root is the playbook root: the directory file paths are resolved
	// against and confined to ("" means the working directory).
	Root string
}

// ErrNotFound: neither the catalog nor the file system has the playbook.
// The errors below wrap it too, so callers that treat "not found" as a
// permanent failure (a `kind: playbook` task) do the same for them.
// Code errs.NotFound.
var ErrNotFound = errs.Sentinel(errs.NotFound, "catalog: playbook not found")

// ErrOutsideRoot is wrapped by the error for a file path that is absolute,
// climbs out of the playbook root with `..`, or reaches outside it through
// a symbolic link (README "Security").
// Code errs.InvalidArgument.
var ErrOutsideRoot = errs.Sentinel(errs.InvalidArgument, "playbook paths must be relative to the playbook root and stay inside it")

// ErrNotPlaybook is wrapped by the error for a file that is not a NoETL
// playbook (no top-level `kind: Playbook`), is not a regular file, or is
// larger than MaxFileBytes. The error names the path only, never the
// file's contents.
// Code errs.InvalidArgument.
var ErrNotPlaybook = errs.Sentinel(errs.InvalidArgument, "not a NoETL playbook")

// MaxFileBytes is the largest playbook file read (the api's request body
// limit).
const MaxFileBytes = 8 << 20

// Entry is a resolved playbook.
type Entry struct {
	Playbook *dsl.Playbook
	Source   []byte
	// Version is the catalog version (0 when loaded from a file).
	Version int
	// Origin is "catalog" or the file path (relative to the root).
	Origin string
	// Path is what the playbook is known by for credential grants
	// (engine.State.CatalogPath): the catalog path, or the file's path
	// relative to the root, cleaned ("examples/./x.yaml" is
	// "examples/x.yaml").
	Path string
}

// Load resolves path (and version; 0 = latest) to a validated playbook.
// A file is only consulted when version is 0, and only inside the root
// (see the package doc). Errors: ErrNotFound (alone, or with
// ErrOutsideRoot or ErrNotPlaybook), or a *dsl.ValidationError for a file
// or catalog entry that declares itself a playbook but is invalid.
func (c *Catalog) Load(ctx context.Context, path string, version int) (*Entry, error) {
	if c.Store != nil {
		v, err := c.Store.PlaybookGet(ctx, path, version)
		switch {
		case err == nil:
			pb, err := dsl.Load([]byte(v.Source), path)
			if err != nil {
				return nil, err
			}
			return &Entry{Playbook: pb, Source: []byte(v.Source), Version: v.Version, Origin: "catalog", Path: slashpath.Clean(path)}, nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	if version != 0 {
		return nil, fmt.Errorf("%w: %s version %d", ErrNotFound, path, version)
	}
	if !filepath.IsLocal(path) || strings.ContainsRune(path, 0) {
		return nil, fmt.Errorf("%w: %q: %w", ErrNotFound, path, ErrOutsideRoot)
	}
	root := c.Root
	if root == "" {
		root = "."
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("catalog: playbook root: %w", err)
	}
	defer r.Close()
	for _, cand := range candidates(path) {
		b, err := readFile(r, cand)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, ErrNotPlaybook):
			return nil, fmt.Errorf("%w: %q: %w", ErrNotFound, cand, err)
		case err != nil:
			// os.Root's errors for an escaping symlink or `..` name
			// the path only.
			if escapes(err) {
				return nil, fmt.Errorf("%w: %q: %w", ErrNotFound, cand, ErrOutsideRoot)
			}
			continue
		}
		if !declaresPlaybook(b) {
			return nil, fmt.Errorf("%w: %q: %w (no top-level kind: Playbook)", ErrNotFound, cand, ErrNotPlaybook)
		}
		pb, err := dsl.Load(b, cand)
		if err != nil {
			return nil, err
		}
		return &Entry{Playbook: pb, Source: b, Origin: cand, Path: slashpath.Clean(filepath.ToSlash(cand))}, nil
	}
	return nil, fmt.Errorf("%w: %s (not in the catalog, no file in the playbook root)", ErrNotFound, path)
}

// candidates are the file names tried for a path: the path itself, then
// with .yaml and .yml appended when it has neither.
func candidates(p string) []string {
	out := []string{p}
	if !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") {
		out = append(out, p+".yaml", p+".yml")
	}
	return out
}

// readFile reads a regular file of at most MaxFileBytes through the root.
func readFile(r *os.Root, name string) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading would wait for a writer.
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		if info.IsDir() {
			return nil, fs.ErrNotExist
		}
		return nil, fmt.Errorf("%w: not a regular file", ErrNotPlaybook)
	}
	if info.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrNotPlaybook, MaxFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrNotPlaybook, MaxFileBytes)
	}
	return b, nil
}

// escapes reports whether err is os.Root refusing a path that leaves the
// root.
func escapes(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes from parent")
}

// kindLine is a top-level `kind: Playbook` line.
var kindLine = regexp.MustCompile(`(?m)^kind:[ \t]*["']?Playbook["']?[ \t]*(#.*)?\r?$`)

// declaresPlaybook reports whether the first YAML document of b is a
// mapping with `kind: Playbook` at the top level (every valid playbook
// has it, the NoETL DSL spec "Document"). Only then are the validator's messages,
// which may quote the document, shown to the caller.
func declaresPlaybook(b []byte) bool {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		// A playbook with a YAML syntax error: let the validator report
		// it when a top-level `kind: Playbook` line is there.
		return kindLine.Match(b)
	}
	if len(doc.Content) == 0 {
		return false
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "kind" && m.Content[i+1].Kind == yaml.ScalarNode && m.Content[i+1].Value == "Playbook" {
			return true
		}
	}
	return false
}
