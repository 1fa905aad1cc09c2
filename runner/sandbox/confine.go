//go:build linux

package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ConfineAttr returns the process attributes that start a program as
// root of a new user namespace, in a new mount namespace, whose uids and
// gids [0, size) are the caller's [base, base+size): the way the runner
// is started (by the local stack's supervisor, or by the runner itself
// when its container starts it as root). The program has every
// capability over its own namespaces (it can mount its tasks' tmpfs,
// create their network namespaces, give each task a uid of its range)
// and none over the host: on the host it is the unprivileged uid base,
// and files owned by uids outside the range (root's keys) are closed to
// it as to any other user. Only a caller with CAP_SETUID and CAP_SETGID
// (root) may map a range.
func ConfineAttr(base, size int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: base, Size: size}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: base, Size: size}},
		GidMappingsEnableSetgroups: true,
		Credential:                 &syscall.Credential{Uid: 0, Gid: 0},
		Setpgid:                    true,
		Pdeathsig:                  syscall.SIGKILL,
	}
}

// Confinement describes the user namespace the process runs in.
type Confinement struct {
	// Initial: the process is in the host's (initial) user namespace.
	Initial bool
	// Root: the process's effective uid is 0 in its user namespace.
	Root bool
	// UIDs is how many uids its user namespace maps (from uid 0 up, the
	// ones a dedicated task identity can come from).
	UIDs int
	// HostUID is the host uid its uid 0 maps to (-1: uid 0 is not mapped).
	HostUID int
}

// Confined reads /proc/self/uid_map: whether the process is in the
// initial user namespace, root in its own, and how many uids from 0 up
// its namespace maps.
func Confined() (Confinement, error) {
	c := Confinement{Root: os.Geteuid() == 0, HostUID: -1}
	f, err := os.Open("/proc/self/uid_map")
	if err != nil {
		return c, fmt.Errorf("sandbox: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		in, _ := strconv.ParseInt(fs[0], 10, 64)
		out, _ := strconv.ParseInt(fs[1], 10, 64)
		n, _ := strconv.ParseInt(fs[2], 10, 64)
		if in == 0 && out == 0 && n == 4294967295 {
			c.Initial = true
		}
		if in == 0 {
			c.HostUID = int(out)
			c.UIDs = int(min(n, 1<<31))
		}
	}
	return c, sc.Err()
}
