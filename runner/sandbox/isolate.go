//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DefaultReadOnly are the host paths an isolated command sees, read-only,
// at their own path: the system's programs, libraries and /etc. Nothing
// else of the host is visible (not /home, /root, /srv, /work, the
// engine's state directory, other tasks' workspaces): only the command's
// workspace, the operator's data roots and a private /proc, /dev and /tmp.
var DefaultReadOnly = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// isolation is what the helper builds before it drops its identity: a
// new root (tmpfs) with read-only binds of RO, read-write binds of RW, a
// private /tmp, a fresh /proc of the command's PID namespace and a minimal
// /dev, then pivot_root into it.
type isolation struct {
	// RootDir is an empty directory that becomes the new root.
	RootDir string `json:"root_dir"`
	// RO are host paths bound read-only at the same path (missing ones
	// are skipped; symbolic links are recreated, not followed).
	RO []string `json:"ro,omitempty"`
	// RW are host paths bound read-write at the same path.
	RW []string `json:"rw,omitempty"`
	// TmpBytes is the size of the command's private /tmp (a tmpfs of its
	// own, gone with the command).
	TmpBytes int64 `json:"tmp_bytes"`
	// Hosts is a file bound over /etc/hosts ("" keeps the host's).
	Hosts string `json:"hosts,omitempty"`
	// ShmBytes is the size of /dev/shm.
	ShmBytes int64 `json:"shm_bytes"`
	// Hostname is the UTS name of the command.
	Hostname string `json:"hostname,omitempty"`
	// Dir is the command's working directory in its root ("" : /).
	Dir string `json:"dir,omitempty"`
}

// lockedFlags are the mount flags a less privileged mount namespace may
// not clear on a bind of a host mount; a read-only remount must repeat
// them.
func lockedFlags(path string) uintptr {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return 0
	}
	var f uintptr
	for _, m := range []struct {
		st  int64
		mnt uintptr
	}{{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME}} {
		if int64(st.Flags)&m.st != 0 {
			f |= m.mnt
		}
	}
	return f
}

// bind binds host path src at dst under root (read-only when ro). A
// missing src is skipped; a symbolic link is recreated.
func bind(root, src, dst string, ro bool) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	target := filepath.Join(root, dst)
	if fi.Mode()&os.ModeSymlink != 0 {
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if _, err := os.Lstat(target); err == nil {
			return nil
		}
		return os.Symlink(link, target)
	}
	if fi.IsDir() {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			f.Close()
		}
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	if ro {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|lockedFlags(target), ""); err != nil {
			return fmt.Errorf("read-only %s: %w", src, err)
		}
	}
	return nil
}

// isolate builds the command's root and pivots into it (the helper, root
// of the namespaces, before it drops its identity).
func isolate(is *isolation) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	nr := is.RootDir
	if err := unix.Mount("tmpfs", nr, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4m"); err != nil {
		return fmt.Errorf("root tmpfs: %w", err)
	}
	// A private /tmp, before the binds (a workspace or a read-only path
	// under /tmp, such as a test's executable, lands inside it).
	tmp := filepath.Join(nr, "tmp")
	if err := os.MkdirAll(tmp, 0o1777); err != nil {
		return err
	}
	size := is.TmpBytes
	if size <= 0 {
		size = 64 << 20
	}
	if err := unix.Mount("tmpfs", tmp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%d", size)); err != nil {
		return fmt.Errorf("tmp: %w", err)
	}
	for _, p := range is.RO {
		if err := bind(nr, p, p, true); err != nil {
			return err
		}
	}
	for _, p := range is.RW {
		if err := bind(nr, p, p, false); err != nil {
			return err
		}
	}
	if is.Hosts != "" {
		if err := bind(nr, is.Hosts, "/etc/hosts", true); err != nil {
			return err
		}
	}
	// /proc of the command's own PID namespace; where the kernel refuses
	// a new proc (a host /proc with hidden parts), an empty one.
	proc := filepath.Join(nr, "proc")
	if err := os.MkdirAll(proc, 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		if err := unix.Mount("tmpfs", proc, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, "mode=0555,size=4k"); err != nil {
			return fmt.Errorf("proc: %w", err)
		}
	}
	if err := minimalDev(nr, is.ShmBytes); err != nil {
		return err
	}
	if is.Hostname != "" {
		_ = unix.Sethostname([]byte(is.Hostname))
	}
	if err := unix.Chdir(nr); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("read-only root: %w", err)
	}
	if is.Dir != "" {
		if err := unix.Chdir(is.Dir); err != nil {
			return fmt.Errorf("working directory %s: %w", is.Dir, err)
		}
	}
	return nil
}

// minimalDev mounts a /dev with null, zero, full, random, urandom and tty
// (binds of the host's nodes), the fd symlinks and a /dev/shm of shm
// bytes.
func minimalDev(root string, shm int64) error {
	dev := filepath.Join(root, "dev")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("dev tmpfs: %w", err)
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if err := bind(root, "/dev/"+n, "/dev/"+n, false); err != nil && n != "tty" {
			return err
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	if shm <= 0 {
		shm = 64 << 20
	}
	if err := os.Mkdir(filepath.Join(dev, "shm"), 0o1777); err != nil {
		return err
	}
	return unix.Mount("tmpfs", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%d", shm))
}
