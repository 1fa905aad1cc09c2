package stack

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process started in its own process group, with stdout and
// stderr appended to a log file.
type proc struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	pgid    int
	started time.Time
	done    chan struct{} // closed when the process has been reaped
	err     error         // exit status, valid after done
}

// startProc starts argv[0] with env in its own process group.
func startProc(name string, argv, env []string, dir, logPath string) (*proc, error) {
	return startProcWith(name, argv, env, dir, logPath, &syscall.SysProcAttr{Setpgid: true})
}

// startProcWith is startProc with the process attributes attr.
func startProcWith(name string, argv, env []string, dir, logPath string, attr *syscall.SysProcAttr) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "==== %s: starting %s\n", time.Now().Format(time.RFC3339), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p := &proc{name: name, logPath: logPath, cmd: cmd, pgid: cmd.Process.Pid, started: time.Now(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, waits up to grace for every
// member of the group (the emulators' java children included) to go, then
// sends SIGKILL.
func (p *proc) stop(grace time.Duration) {
	killGroup(p.pgid, grace)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// killGroup terminates process group pgid: SIGTERM, then SIGKILL after grace.
func killGroup(pgid int, grace time.Duration) {
	if pgid <= 1 {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGone(func() bool { return groupAlive(pgid) }, grace) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitGone(func() bool { return groupAlive(pgid) }, 5*time.Second)
}

// waitGone polls alive until it reports false or d passes; it reports
// whether alive went false.
func waitGone(alive func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !alive() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procInfo is what /proc says about one process.
type procInfo struct {
	pid, pgid int
	state     byte
}

// readStat parses /proc/<pid>/stat.
func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may contain spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return procInfo{}, false
	}
	pgid, _ := strconv.Atoi(f[2])
	return procInfo{pid: pid, pgid: pgid, state: f[0][0]}, true
}

// allPIDs lists the pids in /proc.
func allPIDs() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// groupAlive reports whether process group pgid has a member that is not a
// zombie.
func groupAlive(pgid int) bool {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		// No /proc: fall back to signal 0 (counts zombies as alive).
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, pid := range allPIDs() {
		if st, ok := readStat(pid); ok && st.pgid == pgid && st.state != 'Z' {
			return true
		}
	}
	return false
}

// pidAlive reports whether pid runs and is not a zombie.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if st, ok := readStat(pid); ok {
		return st.state != 'Z'
	}
	return syscall.Kill(pid, 0) == nil
}

// ownedProcesses lists the live processes whose environment carries
// NOETL_STACK_OWNER=stackDir: the children this stack started (and theirs),
// possibly left over by a supervisor that was killed with SIGKILL.
func ownedProcesses(stackDir string) []int {
	marker := []byte(ownerEnv + "=" + stackDir)
	self := os.Getpid()
	var out []int
	for _, pid := range allPIDs() {
		if pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, marker) {
				if pidAlive(pid) {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

// killOwned terminates every process ownedProcesses finds (SIGTERM, then
// SIGKILL after grace) and returns how many there were.
func killOwned(stackDir string, grace time.Duration) int {
	pids := ownedProcesses(stackDir)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	alive := func() bool {
		for _, pid := range pids {
			if pidAlive(pid) {
				return true
			}
		}
		return false
	}
	if !waitGone(alive, grace) {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		waitGone(alive, 5*time.Second)
	}
	return len(pids)
}

// tail returns the last n lines of the file at path, from the latest
// "==== " start marker on (logs are appended across runs).
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := bytes.LastIndex(b, []byte("\n==== ")); i >= 0 {
		b = b[i+1:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// childEnv returns the supervisor's environment with extra set (overriding
// variables of the same name) plus the ownership marker.
func childEnv(stackDir string, extra []EnvVar) []string {
	set := map[string]bool{ownerEnv: true}
	for _, kv := range extra {
		set[kv.Key] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !set[k] {
			env = append(env, kv)
		}
	}
	for _, kv := range extra {
		env = append(env, kv.Key+"="+kv.Value)
	}
	return append(env, ownerEnv+"="+stackDir)
}

// writeFileAtomic writes data to path via a temporary file and rename.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
