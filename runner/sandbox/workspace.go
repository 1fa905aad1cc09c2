//go:build linux

package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Workspace is one task's private directory: a tmpfs of a fixed size
// when the process may mount one (the runner, root of its user and mount
// namespaces), else a plain directory. A sandboxed command sees it at its
// own path and as /tmp, a duckdb task keeps its spill files in it, and it
// is removed, whatever it holds, when the task ends. Its size is the
// task's disk limit: a task that fills it fails with error kind "limit"
// (disk).
type Workspace struct {
	// Dir is the directory (absolute).
	Dir string
	// Tmpfs reports whether Dir is a tmpfs of SizeBytes.
	Tmpfs bool
	// SizeBytes is the tmpfs size (0 when Dir is a plain directory).
	SizeBytes int64
}

// NewWorkspace creates a workspace under root (created 0711 if missing;
// the workspace itself 0700) and mounts a tmpfs of sizeBytes on it when
// sizeBytes > 0 and the process may mount; requireTmpfs makes a refused
// mount an error instead of a plain directory.
func NewWorkspace(root string, sizeBytes int64, requireTmpfs bool) (*Workspace, error) {
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, fmt.Errorf("sandbox: workspace root: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	dir := filepath.Join(root, "task-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: workspace: %w", err)
	}
	w := &Workspace{Dir: dir}
	if sizeBytes > 0 {
		err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size="+strconv.FormatInt(sizeBytes, 10))
		switch {
		case err == nil:
			w.Tmpfs, w.SizeBytes = true, sizeBytes
		case requireTmpfs:
			_ = os.Remove(dir)
			return nil, fmt.Errorf("sandbox: cannot mount the workspace tmpfs (the runner must be root of its user and mount namespaces): %w", err)
		}
	}
	return w, nil
}

// Full reports whether the workspace's tmpfs has (almost) no space left:
// less than 64 KiB, the mark of a task that hit its disk limit.
func (w *Workspace) Full() bool {
	if w == nil || !w.Tmpfs {
		return false
	}
	var st unix.Statfs_t
	if unix.Statfs(w.Dir, &st) != nil {
		return false
	}
	return int64(st.Bavail)*int64(st.Bsize) < 64<<10
}

// Close unmounts the tmpfs and removes the directory.
func (w *Workspace) Close() error {
	if w == nil {
		return nil
	}
	var errs []error
	if w.Tmpfs {
		if err := unix.Unmount(w.Dir, unix.MNT_DETACH); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(w.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

type workspaceKey struct{}

// WithWorkspace returns ctx carrying the task's workspace: the python,
// shell, duckdb and gcs kinds work in it instead of a directory of their
// own.
func WithWorkspace(ctx context.Context, w *Workspace) context.Context {
	return context.WithValue(ctx, workspaceKey{}, w)
}

// WorkspaceFrom returns the workspace ctx carries (nil: none).
func WorkspaceFrom(ctx context.Context) *Workspace {
	w, _ := ctx.Value(workspaceKey{}).(*Workspace)
	return w
}

// TaskDir returns the working directory of a task's programs: the
// context's workspace (removed with it; remove does nothing), else a new
// temporary directory under tempDir (remove deletes it).
func TaskDir(ctx context.Context, tempDir, pattern string) (dir string, remove func(), err error) {
	if w := WorkspaceFrom(ctx); w != nil {
		return w.Dir, func() {}, nil
	}
	d, err := os.MkdirTemp(tempDir, pattern)
	if err != nil {
		return "", nil, err
	}
	return d, func() { _ = os.RemoveAll(d) }, nil
}
