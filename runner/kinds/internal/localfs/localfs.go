// Package localfs confines the local files an object-store task (gcs, s3)
// reads or writes: under the configured directories (default the
// temporary directory), or, for a task running in a runner workspace
// (runner/sandbox), only that workspace and the operator's data roots —
// so that a playbook cannot upload the engine's own files or write beside
// them.
package localfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/noetl/gcpengine/runner/sandbox"
)

// Dirs are the directories local files may be in.
type Dirs struct {
	roots     []string
	dataRoots []string
}

// New returns the confinement to localDirs (default os.TempDir()) and,
// for a task with a workspace, to the workspace and dataRoots.
func New(localDirs, dataRoots []string) Dirs {
	if len(localDirs) == 0 {
		localDirs = []string{os.TempDir()}
	}
	d := Dirs{dataRoots: dataRoots}
	for _, dir := range localDirs {
		if abs, err := filepath.Abs(dir); err == nil {
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				abs = real
			}
			d.roots = append(d.roots, filepath.Clean(abs))
		}
	}
	return d
}

// Path resolves p (a path, or a file:// URI) to a real path inside the
// allowed directories: for reading the file itself, for writing its
// directory (the file may not exist yet; the returned path is in the real
// directory). A relative p is relative to the task's workspace when it has
// one. what names the kind in the error ("gcs tasks").
func (d Dirs) Path(ctx context.Context, p string, forWrite bool, what string) (string, error) {
	roots := d.roots
	ws := sandbox.WorkspaceFrom(ctx)
	if ws != nil {
		roots = nil
		for _, dir := range append([]string{ws.Dir}, d.dataRoots...) {
			if real, err := filepath.EvalSymlinks(dir); err == nil {
				roots = append(roots, filepath.Clean(real))
			}
		}
	}
	p = strings.TrimSpace(strings.TrimPrefix(p, "file://"))
	if p == "" {
		return "", errors.New("empty local path")
	}
	if ws != nil && !filepath.IsAbs(p) {
		p = filepath.Join(ws.Dir, p) // relative to the task's workspace
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	check := abs
	if forWrite {
		check = filepath.Dir(abs)
	}
	real, err := filepath.EvalSymlinks(check)
	if err != nil {
		return "", fmt.Errorf("local path %s: %v", p, errors.Unwrap(err))
	}
	for _, root := range roots {
		if real == root || strings.HasPrefix(real, root+string(filepath.Separator)) {
			if forWrite {
				return filepath.Join(real, filepath.Base(abs)), nil
			}
			return real, nil
		}
	}
	return "", fmt.Errorf("local path %s is outside the directories %s may use (%s)", p, what, strings.Join(roots, ", "))
}
