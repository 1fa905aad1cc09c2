// Package pgtest starts a throwaway PostgreSQL server for the tests of the
// tool kinds that talk to PostgreSQL (postgres, transfer): initdb into a
// temporary directory, postgres on a free loopback port, trust
// authentication, stopped and removed by the returned function. The server
// binaries come from $NOETL_PG_BIN (default /usr/local/bin, then PATH).
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Start starts a server and returns its DSN (database postgres, user
// postgres), its port and the function that stops it and removes its data.
func Start() (dsn string, port int, stop func(), err error) { return startPostgres() }

func pgBin(name string) (string, error) {
	dir := os.Getenv("NOETL_PG_BIN")
	if dir == "" {
		dir = "/usr/local/bin"
	}
	p := filepath.Join(dir, name)
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found in %s nor on PATH: install the PostgreSQL 15 server binaries (initdb, postgres) or set NOETL_PG_BIN to their directory", name, dir)
}

func startPostgres() (dsn string, port int, stop func(), err error) {
	initdb, err := pgBin("initdb")
	if err != nil {
		return "", 0, nil, err
	}
	postgresBin, err := pgBin("postgres")
	if err != nil {
		return "", 0, nil, err
	}
	dir, err := os.MkdirTemp("", "noetl-pgtest-")
	if err != nil {
		return "", 0, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	attr := &syscall.SysProcAttr{}
	if os.Geteuid() == 0 {
		// initdb and postgres refuse to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		if err != nil {
			cleanup()
			return "", 0, nil, fmt.Errorf("running as root and no postgres/nobody user to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			cleanup()
			return "", 0, nil, err
		}
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--locale=C")
	cmd.SysProcAttr = attr
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", 0, nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cleanup()
		return "", 0, nil, err
	}
	port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		cleanup()
		return "", 0, nil, err
	}
	srv := exec.Command(postgresBin, "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=50")
	srv.Stdout, srv.Stderr = logf, logf
	sattr := *attr
	sattr.Pdeathsig = syscall.SIGTERM
	srv.SysProcAttr = &sattr
	if err := srv.Start(); err != nil {
		logf.Close()
		cleanup()
		return "", 0, nil, fmt.Errorf("start postgres: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	stop = func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = srv.Process.Kill()
			<-exited
		}
		logf.Close()
		cleanup()
	}
	dsn = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgx.Connect(ctx, dsn)
		cancel()
		if err == nil {
			c.Close(context.Background())
			return dsn, port, stop, nil
		}
		select {
		case werr := <-exited:
			exited <- werr
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			stop()
			return "", 0, nil, fmt.Errorf("postgres exited (%v):\n%s", werr, log)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return "", 0, nil, fmt.Errorf("postgres not ready after 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
