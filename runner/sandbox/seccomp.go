//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The kernel surface of a sandboxed command (README "Security", runner
// boundary): the helper installs a seccomp filter as the last step before
// it execs the command, so the command and every descendant run under it
// (a filter is inherited across fork and exec and cannot be removed).
// The model is Docker's default profile (the moby project's
// profiles/seccomp/default.json): everything it refuses to a container
// without capabilities is refused here too, by name:
//
//   - new namespaces: unshare (any flags), setns, and clone with a
//     namespace flag (CLONE_NEWUSER, NEWNS, NEWPID, NEWNET, NEWIPC,
//     NEWUTS, NEWCGROUP, NEWTIME); clone3 answers ENOSYS, so that libc
//     falls back to clone, whose flags the filter can read (clone3 passes
//     them in memory, out of a filter's reach);
//   - mounts: mount, umount2, pivot_root, chroot and the new mount API
//     (fsopen, fsconfig, fsmount, fspick, move_mount, open_tree,
//     mount_setattr);
//   - other processes: ptrace, process_vm_readv/writev, kcmp,
//     pidfd_getfd, process_madvise;
//   - the kernel's own state: bpf, perf_event_open, keyring calls
//     (add_key, keyctl, request_key), module loading, kexec, reboot,
//     swapon/swapoff, acct, quotactl, the clocks (settimeofday,
//     clock_settime, clock_adjtime, adjtimex, stime), syslog, sysfs,
//     _sysctl, uselib, ustat, lookup_dcookie, nfsservctl,
//     name_to_handle_at/open_by_handle_at, userfaultfd, io_uring, vhangup,
//     ioperm/iopl, fanotify_init, NUMA policy calls, and personality
//     except the values Docker allows.
//
// A refused call fails with EPERM (clone3: ENOSYS); the process goes on.
// 32-bit (x32 and i386) calls on x86-64 are refused by the library's own
// architecture check.

// namespaceFlags are the clone flags that create a namespace.
const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// DeniedSyscalls are the system calls a sandboxed command may not make at
// all (EPERM); clone is refused only with a namespace flag, clone3 answers
// ENOSYS and personality is refused except for Docker's values. Names the
// running architecture does not have are skipped.
var DeniedSyscalls = []string{
	// namespaces
	"unshare", "setns",
	// mounts
	"mount", "umount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	// other processes
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
	// kernel state
	"bpf", "perf_event_open", "add_key", "keyctl", "request_key",
	"create_module", "init_module", "finit_module", "delete_module", "get_kernel_syms", "query_module",
	"kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
	"syslog", "sysfs", "_sysctl", "uselib", "ustat", "lookup_dcookie", "nfsservctl",
	"name_to_handle_at", "open_by_handle_at", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"vhangup", "ioperm", "iopl", "vm86", "vm86old", "fanotify_init",
	"mbind", "set_mempolicy", "get_mempolicy", "move_pages",
}

// allowedPersonalities are the personality(2) values Docker's profile
// admits (PER_LINUX, UNAME26, PER_LINUX32, their combination, and the
// query 0xffffffff).
var allowedPersonalities = []uint64{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// policy returns the filter's policy for the running architecture.
func policy() (seccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return seccomp.Policy{}, err
	}
	var names []string
	for _, n := range DeniedSyscalls {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	groups := []seccomp.SyscallGroup{{Names: names, Action: seccomp.ActionErrno}}
	if _, ok := info.SyscallNames["clone3"]; ok {
		groups = append(groups, seccomp.SyscallGroup{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)})
	}
	// clone's first argument holds the flags on every architecture
	// this engine runs on (amd64, arm64).
	groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{
		Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags}},
	}}})
	var pers seccomp.ArgumentConditions
	for _, v := range allowedPersonalities {
		pers = append(pers, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: v})
	}
	groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{Name: "personality", Conditions: pers}}})
	return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}, nil
}

// filter is the policy, checked once (an unknown name or a program the
// library cannot assemble is a programming error the tests catch).
var filter = sync.OnceValues(func() (seccomp.Filter, error) {
	p, err := policy()
	if err != nil {
		return seccomp.Filter{}, err
	}
	if _, err := p.Assemble(); err != nil {
		return seccomp.Filter{}, fmt.Errorf("sandbox: seccomp policy: %w", err)
	}
	return seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: p}, nil
})

// compiledFilter is the filter as the kernel takes it.
type compiledFilter struct {
	prog    unix.SockFprog
	filters []unix.SockFilter
}

// compileFilter assembles the filter (the helper does it before its
// limits apply: installing it must not allocate).
func compileFilter() (*compiledFilter, error) {
	f, err := filter()
	if err != nil {
		return nil, err
	}
	insts, err := f.Policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	c := &compiledFilter{filters: make([]unix.SockFilter, len(raw))}
	for i, r := range raw {
		c.filters[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	c.prog = unix.SockFprog{Len: uint16(len(c.filters)), Filter: &c.filters[0]}
	return c, nil
}

// install loads the filter on every thread of the calling process
// (SECCOMP_FILTER_FLAG_TSYNC; no_new_privs must be set: the helper sets
// it just before). It allocates nothing.
func (c *compiledFilter) install() error {
	if _, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&c.prog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}

// loadFilter compiles and installs the filter (the seccomp probe).
func loadFilter() error {
	c, err := compileFilter()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return c.install()
}

// closeInherited closes every descriptor from first up that is not
// close-on-exec: what the helper inherited beyond what its program was
// given (the helper's own files, and its Go runtime's, are all
// close-on-exec and stay open for the in-process program it runs).
func closeInherited(first int) error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("close descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("close descriptors: %w", err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < first {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			_ = unix.Close(fd)
		}
	}
	return nil
}

// InheritNothing makes every descriptor of the process above 2
// close-on-exec: what it inherited from whoever started it (a shell's or a
// supervisor's descriptors opened without O_CLOEXEC) then reaches none of
// the programs it starts. The runner calls it first thing; the helper does
// the same for each task (closeFrom).
func InheritNothing() error { return closeFrom(3) }

// closeFrom makes every descriptor from first up close-on-exec, so that
// the command inherits exactly stdin, stdout, stderr and the descriptors
// it was given (Cmd.ExtraFiles), whatever else the helper's process holds
// (a descriptor the engine opened without O_CLOEXEC, from C code or a raw
// system call, and a fork inherited). close_range(CLOSE_RANGE_CLOEXEC)
// where the kernel has it (5.11), else every entry of /proc/self/fd. The
// descriptors stay open until the exec: the helper's Go runtime may still
// use its own.
func closeFrom(first int) error {
	if err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("close descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("close descriptors: %w", err)
	}
	var errs []error
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < first {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			errs = append(errs, fmt.Errorf("descriptor %d: %w", fd, err))
		}
	}
	return errors.Join(errs...)
}
