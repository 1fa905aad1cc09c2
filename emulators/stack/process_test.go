package stack

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProcStopKillsWholeGroup(t *testing.T) {
	dir := t.TempDir()
	// The child forks a grandchild, as gcloud forks java.
	p, err := startProc("t", []string{"/bin/sh", "-c", "sleep 60 & echo started; wait"}, os.Environ(), dir, filepath.Join(dir, "t.log"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(tail(filepath.Join(dir, "t.log"), 5), "started") {
		if time.Now().After(deadline) {
			t.Fatal("child did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !groupAlive(p.pgid) {
		t.Fatal("group not alive")
	}
	p.stop(2 * time.Second)
	if groupAlive(p.pgid) {
		t.Fatal("group survived stop")
	}
	if !p.exited() {
		t.Fatal("process not reaped")
	}
}

func TestOwnedProcessesFoundAndKilled(t *testing.T) {
	owner := t.TempDir()
	p, err := startProc("o", []string{"/bin/sleep", "60"}, childEnv(owner, nil), owner, filepath.Join(owner, "o.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop(time.Second)
	pid := p.cmd.Process.Pid
	found := false
	for _, q := range ownedProcesses(owner) {
		found = found || q == pid
	}
	if !found {
		t.Fatalf("pid %d not found among owned processes of %s", pid, owner)
	}
	if len(ownedProcesses(owner+"-other")) != 0 {
		t.Fatal("another owner matched")
	}
	if n := killOwned(owner, 2*time.Second); n != 1 {
		t.Fatalf("killOwned = %d, want 1", n)
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		t.Fatal("owned process survived")
	}
}

func TestPortFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if portFree(port) == nil {
		t.Fatal("a bound port reported free")
	}
	l.Close()
	if err := portFree(port); err != nil {
		t.Fatalf("a released port reported busy: %v", err)
	}
}
