# NoETL sandbox zygote: a fork server for warm sandboxes (embedded in the Go
# sandbox package, zygote.go; run as `python3 -s -c <this source> <program>
# <module>...`, as root, in the engine's namespaces).
#
# It imports the modules once, compiles the program once, says "R" on its
# control socket (fd 3, a SOCK_SEQPACKET socket to the engine), then serves
# fork requests. It never runs the program itself and never holds anything
# of a task: a request carries only descriptors, the first a pipe on which
# the child, once forked, reads its spec (identity, limits, root, network,
# environment).
#
# Request: any byte, with descriptors [spec, stdin, stdout, stderr, extra...].
# Replies: "P <pid>" (forked) or "E <message>"; later "X <pid> <status>
# <utime_us> <stime_us>" when that child is reaped (status as waitpid's).
#
# The child (C) leaves the zygote behind at once (closes its socket), takes
# the descriptors as 0, 1, 2, 3..., joins the task's network, unshares the
# PID, mount, IPC and UTS namespaces and forks the task process (G: the
# first process of its PID namespace). C waits for G and exits as it did.
# G joins its control groups, builds its root (the same steps as the Go
# helper's isolate.go), drops to the task's uid, applies the limits,
# no_new_privs and the seccomp filter, and only then runs the program.
import os
import sys
import json
import socket
import signal
import stat
import select
import ctypes
import fcntl
import resource
import types
import base64
import builtins
import importlib

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_NOATIME = 1024
_MS_NODIRATIME = 2048
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_MS_RELATIME = 1 << 21
_MNT_DETACH = 2
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_MAXFD = 1 << 20

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _Fail(Exception):
    pass


def _check(r, what):
    if r != 0:
        e = ctypes.get_errno()
        raise _Fail("%s: %s" % (what, os.strerror(e)))


def _b(s):
    return None if s is None else s.encode()


def _mount(src, target, fstype, flags, data=None):
    _check(_libc.mount(_b(src), _b(target), _b(fstype), flags, _b(data)), "mount %s" % target)


def _prctl(option, arg):
    _check(_libc.prctl(option, arg, 0, 0, 0), "prctl %d" % option)


def main():
    program = compile(sys.argv[1], "<string>", "exec")
    for name in sys.argv[2:]:
        importlib.import_module(name)
    ctl = socket.socket(fileno=3)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    ctl.send(b"R")
    children = set()
    closing = False
    while True:
        watch = [wake_r] if closing else [wake_r, ctl]
        ready, _, _ = select.select(watch, [], [])
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        _reap(ctl, children)
        if not closing and ctl in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(ctl, 16, 64)
            except OSError:
                msg, fds = b"", []
            if not msg:
                # The engine is done with this zygote: its children end
                # their tasks, then it exits.
                for fd in fds:
                    os.close(fd)
                closing = True
            else:
                _fork(ctl, fds, program, (wake_r, wake_w), children)
        if closing and not children:
            os._exit(0)


def _reap(ctl, children):
    while children:
        try:
            pid, status, ru = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        try:
            ctl.send(b"X %d %d %d %d" % (pid, status, int(ru.ru_utime * 1e6), int(ru.ru_stime * 1e6)))
        except OSError:
            pass


def _fork(ctl, fds, program, wake, children):
    zpid = os.getpid()
    try:
        if len(fds) < 4:
            raise _Fail("a request needs the spec, stdin, stdout and stderr")
        pid = os.fork()
    except (OSError, _Fail) as e:
        for fd in fds:
            os.close(fd)
        ctl.send(b"E " + str(e).encode())
        return
    if pid == 0:
        status = 126
        try:
            _child(ctl, fds, program, wake, zpid)
        except BaseException as e:  # noqa: B902 - whatever stops the child is reported
            try:
                os.write(2, ("sandbox zygote: %s\n" % e).encode())
            except OSError:
                pass
        os._exit(status)
    children.add(pid)
    for fd in fds:
        os.close(fd)
    ctl.send(b"P %d" % pid)


def _child(ctl, fds, program, wake, zpid):
    # Leave the zygote: its socket, its wake-up pipe, its handlers.
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    ctl.close()
    for fd in wake:
        os.close(fd)
    os.setpgid(0, 0)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != zpid:
        raise _Fail("the zygote exited")
    spec_fd, given = fds[0], fds[1:]
    chunks = []
    while True:
        b = os.read(spec_fd, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(spec_fd)
    spec = json.loads(b"".join(chunks))
    # The descriptors at 0, 1, 2, 3...; the engine's stderr (for what goes
    # wrong before the program runs) right after them, closed before it.
    n = len(given)
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, n + 1) for fd in given]
    diag = fcntl.fcntl(2, fcntl.F_DUPFD, n + 1)
    for fd in given:
        os.close(fd)
    for i, fd in enumerate(moved):
        os.dup2(fd, i)
    os.dup2(diag, n)
    os.closerange(n + 1, _MAXFD)
    net = spec.get("net_fd") or 0
    if net:
        _check(_libc.setns(net, _CLONE_NEWNET), "join the task's network namespace")
        os.close(net)
    flags = 0
    if spec.get("pid_namespace"):
        flags |= _CLONE_NEWPID
    if spec.get("isolation"):
        flags |= _CLONE_NEWNS | _CLONE_NEWIPC | _CLONE_NEWUTS
    if spec.get("no_network"):
        flags |= _CLONE_NEWNET
    if flags:
        _check(_libc.unshare(flags), "unshare")
    g = os.fork()
    if g == 0:
        code = 126
        try:
            code = _task(spec, program, n)
        except BaseException as e:  # noqa: B902
            try:
                os.write(n, ("sandbox zygote: %s\n" % e).encode())
            except OSError:
                pass
        os._exit(code)
    os.closerange(0, _MAXFD)
    while True:
        try:
            _, status = os.waitpid(g, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 126)


def _task(spec, program, diag):
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    # The control groups first: nothing of the task runs outside them.
    for f in spec.get("cgroups") or []:
        with open(f, "w") as fh:
            fh.write("0")
    iso = spec.get("isolation")
    if iso:
        _isolate(iso, spec["sys"])
    elif spec.get("dir"):
        os.chdir(spec["dir"])
    uid, gid = spec.get("uid", -1), spec.get("gid", -1)
    if uid >= 0:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        # A credential change clears the parent-death signal, and makes
        # the process non-dumpable (its /proc entries root's), where an
        # exec would have made it dumpable again: as the helper's command,
        # it reads its own /proc/self/environ and its uid's processes theirs.
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        _prctl(_PR_SET_DUMPABLE, 1)
    _limits(spec["limits"])
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    filt = spec.get("seccomp")
    if filt:
        raw = base64.b64decode(filt)
        buf = ctypes.create_string_buffer(raw, len(raw))
        prog = _Fprog(len(raw) // 8, ctypes.addressof(buf))
        _check(_libc.syscall(spec["sys"]["seccomp"], _SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(prog)), "seccomp")
    os.environ.clear()
    for kv in spec.get("env") or []:
        k, sep, v = kv.partition("=")
        if sep and k:
            os.environ[k] = v
    sys.argv = list(spec.get("args") or ["-c"])
    os.close(diag)
    return _run(program)


def _run(program):
    # The program runs as `python -c` would run it: as __main__, its
    # uncaught exception printed, SystemExit its status, then the exit
    # handlers and a flush.
    code = 0
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    try:
        exec(program, main.__dict__)
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code & 0xFF
        else:
            try:
                sys.stderr.write("%s\n" % (e.code,))
            except Exception:
                pass
            code = 1
    except BaseException:  # noqa: B902
        import traceback

        try:
            traceback.print_exc()
        except Exception:
            pass
        code = 1
    try:
        import atexit

        atexit._run_exitfuncs()
    except Exception:
        pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    return code


def _limits(lim):
    def setl(res, v, hard_extra=0):
        if v is None or v < 0:
            return
        resource.setrlimit(res, (v, v + hard_extra))

    setl(resource.RLIMIT_CORE, 0)
    setl(resource.RLIMIT_AS, lim.get("as"))
    # SIGXCPU at the limit, SIGKILL a second later should it be ignored.
    setl(resource.RLIMIT_CPU, lim.get("cpu"), 1)
    setl(resource.RLIMIT_NOFILE, lim.get("nofile"))
    setl(resource.RLIMIT_FSIZE, lim.get("fsize"))
    setl(resource.RLIMIT_NPROC, lim.get("nproc"))


def _locked(path):
    # The flags a bind mount keeps from its source (a read-only remount
    # must repeat them, or the kernel refuses it).
    try:
        f = os.statvfs(path).f_flag
    except OSError:
        return 0
    out = 0
    for st, ms in ((os.ST_NOSUID, _MS_NOSUID), (os.ST_NODEV, _MS_NODEV), (os.ST_NOEXEC, _MS_NOEXEC),
                   (os.ST_NOATIME, _MS_NOATIME), (os.ST_NODIRATIME, _MS_NODIRATIME), (os.ST_RELATIME, _MS_RELATIME)):
        if f & st:
            out |= ms
    return out


def _bind(root, src, dst, ro):
    try:
        st = os.lstat(src)
    except FileNotFoundError:
        return
    target = root + dst
    if stat.S_ISLNK(st.st_mode):
        os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(src), target)
        return
    if stat.S_ISDIR(st.st_mode):
        os.makedirs(target, 0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
        if not os.path.lexists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    _mount(src, target, None, _MS_BIND | _MS_REC)
    if ro:
        _mount(None, target, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _locked(target))


def _isolate(iso, sysno):
    # The same root as the Go helper's isolate (isolate.go), step by step.
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    nr = iso["root_dir"]
    _mount("tmpfs", nr, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=4m")
    tmp = nr + "/tmp"
    os.makedirs(tmp, 0o1777, exist_ok=True)
    size = iso.get("tmp_bytes") or 0
    if size <= 0:
        size = 64 << 20
    _mount("tmpfs", tmp, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777,size=%d" % size)
    for p in iso.get("ro") or []:
        _bind(nr, p, p, True)
    for p in iso.get("rw") or []:
        _bind(nr, p, p, False)
    if iso.get("hosts"):
        _bind(nr, iso["hosts"], "/etc/hosts", True)
    proc = nr + "/proc"
    os.makedirs(proc, 0o555, exist_ok=True)
    try:
        _mount("proc", proc, "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    except _Fail:
        _mount("tmpfs", proc, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_RDONLY, "mode=0555,size=4k")
    _dev(nr, iso.get("shm_bytes") or 0)
    if iso.get("hostname"):
        try:
            socket.sethostname(iso["hostname"])
        except OSError:
            pass
    os.chdir(nr)
    _check(_libc.syscall(sysno["pivot_root"], b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", _MNT_DETACH), "detach the old root")
    os.chdir("/")
    _mount(None, "/", None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    if iso.get("dir"):
        os.chdir(iso["dir"])


def _dev(root, shm):
    dev = root + "/dev"
    os.makedirs(dev, 0o755, exist_ok=True)
    _mount("tmpfs", dev, "tmpfs", _MS_NOSUID | _MS_NOEXEC, "mode=0755,size=64k")
    for n in ("null", "zero", "full", "random", "urandom", "tty"):
        try:
            _bind(root, "/dev/" + n, "/dev/" + n, False)
        except (OSError, _Fail):
            if n != "tty":
                raise
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, dev + "/" + name)
    if shm <= 0:
        shm = 64 << 20
    os.mkdir(dev + "/shm", 0o1777)
    _mount("tmpfs", dev + "/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777,size=%d" % shm)


main()
