package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/noetl/gcpengine/runner/kinds/postgres"
)

// Postgres describes the stack's PostgreSQL cluster: where its binaries and
// data live and which user runs it. PostgreSQL refuses to run as root, so
// when the supervisor is root the server runs as the "postgres" system user
// (or "nobody").
type Postgres struct {
	BinDir  string // holds initdb, pg_ctl, postgres
	DataDir string // the cluster (.stack/pgdata, or the directory it links to)
	SockDir string // unix socket directory
	LogPath string // server log
	Port    int
	cred    *syscall.Credential // nil: run as the current user
	runAs   string
}

// NewPostgres resolves binaries, data directory and run-as user for cfg. It
// creates the directories it needs.
func NewPostgres(cfg Config) (*Postgres, error) {
	bin, err := findPGBin(cfg.PGBinDir)
	if err != nil {
		return nil, err
	}
	pg := &Postgres{BinDir: bin, Port: cfg.PGPort, LogPath: cfg.LogPath("postgres")}
	if os.Geteuid() == 0 {
		if err := pg.pickUser(); err != nil {
			return nil, err
		}
	}
	if err := pg.placeData(cfg.StackDir); err != nil {
		return nil, err
	}
	return pg, nil
}

// findPGBin returns the directory of initdb/pg_ctl: dir if set, else the
// one initdb on PATH resolves to, else the newest /usr/lib/postgresql/N/bin.
func findPGBin(dir string) (string, error) {
	ok := func(d string) bool {
		for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
			if st, err := os.Stat(filepath.Join(d, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if dir != "" {
		if !ok(dir) {
			return "", fmt.Errorf("NOETL_PG_BIN=%s does not hold initdb, pg_ctl and postgres", dir)
		}
		return dir, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && ok(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
		if ok(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	cands, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(cands, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(cands[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(cands[j])))
		return vi > vj
	})
	for _, d := range cands {
		if ok(d) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: install the Debian package postgresql (or postgresql-15), or set NOETL_PG_BIN")
}

// pickUser chooses the unprivileged user that runs the server when the
// supervisor is root.
func (pg *Postgres) pickUser() error {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		pg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		pg.runAs = name
		return nil
	}
	return errors.New("running as root, but there is no 'postgres' or 'nobody' user to run PostgreSQL as (it refuses root)")
}

// placeData sets DataDir and SockDir: inside the stack directory when the
// server's user can reach it, else (root supervisor, private checkout such
// as a mktemp -d clone) under /var/tmp, with .stack/pgdata a symlink to it.
func (pg *Postgres) placeData(stackDir string) error {
	link := filepath.Join(stackDir, "pgdata")
	if target, err := os.Readlink(link); err == nil {
		// A previous run chose an outside directory; keep using it.
		pg.DataDir = target
		pg.SockDir = filepath.Join(filepath.Dir(target), "pgsock")
		return pg.ensureDirs()
	}
	pg.DataDir = link
	pg.SockDir = filepath.Join(stackDir, "pgsock")
	if err := pg.ensureDirs(); err != nil {
		return err
	}
	if pg.cred == nil || pg.canReach(pg.DataDir) {
		return nil
	}
	// The server user cannot traverse to .stack: move the cluster out.
	h := fnv.New32a()
	_, _ = h.Write([]byte(stackDir))
	base := fmt.Sprintf("/var/tmp/noetl-stack-%08x", h.Sum32())
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	_ = os.Remove(pg.DataDir) // empty: we just created it
	_ = os.Remove(pg.SockDir)
	pg.DataDir = filepath.Join(base, "pgdata")
	pg.SockDir = filepath.Join(base, "pgsock")
	if err := pg.ensureDirs(); err != nil {
		return err
	}
	return os.Symlink(pg.DataDir, link)
}

// ensureDirs creates DataDir (0700) and SockDir owned by the server's user.
func (pg *Postgres) ensureDirs() error {
	for _, d := range []string{pg.DataDir, pg.SockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if pg.cred != nil {
			if err := os.Chown(d, int(pg.cred.Uid), int(pg.cred.Gid)); err != nil {
				return err
			}
		}
	}
	return os.Chmod(pg.DataDir, 0o700)
}

// canReach reports whether the server's user can enter dir.
func (pg *Postgres) canReach(dir string) bool {
	cmd := exec.Command("/bin/sh", "-c", `cd "$1"`, "sh", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: pg.cred}
	return cmd.Run() == nil
}

// command builds a PostgreSQL tool invocation that runs as the server user,
// in its own process group, with output appended to the server log.
func (pg *Postgres) command(ctx context.Context, tool string, args ...string) (*exec.Cmd, *os.File, error) {
	logf, err := os.OpenFile(pg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(pg.BinDir, tool), args...)
	cmd.Dir = "/"
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = []string{"PATH=" + pg.BinDir + ":/usr/bin:/bin", "LANG=C", "LC_ALL=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: pg.cred}
	fmt.Fprintf(logf, "==== %s: %s %s\n", time.Now().Format(time.RFC3339), tool, strings.Join(args, " "))
	return cmd, logf, nil
}

func (pg *Postgres) run(ctx context.Context, tool string, args ...string) error {
	cmd, logf, err := pg.command(ctx, tool, args...)
	if err != nil {
		return err
	}
	defer logf.Close()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	return nil
}

// Initialized reports whether the cluster exists.
func (pg *Postgres) Initialized() bool {
	_, err := os.Stat(filepath.Join(pg.DataDir, "PG_VERSION"))
	return err == nil
}

// RunningPort returns the port of the server running on DataDir, or 0 if
// none is running.
func (pg *Postgres) RunningPort() int {
	f, err := os.Open(filepath.Join(pg.DataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 4 {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	port, _ := strconv.Atoi(strings.TrimSpace(lines[3]))
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if !pidAlive(pid) || (cmdline != nil && !strings.Contains(string(cmdline), "postgres")) {
		return 0 // stale postmaster.pid (crash), or a recycled pid
	}
	return port
}

// Start initialises the cluster on first use and starts the server with
// pg_ctl (so it outlives the supervisor), unless it already runs on Port.
// It reports whether it started the server.
func (pg *Postgres) Start(ctx context.Context) (bool, error) {
	if !pg.Initialized() {
		if err := pg.run(ctx, "initdb", "-D", pg.DataDir, "-A", "trust", "-U", PGSuperuser, "-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
			return false, err
		}
	}
	if err := pg.writeHBA(); err != nil {
		return false, err
	}
	switch port := pg.RunningPort(); {
	case port == pg.Port:
		// Running from an earlier start: it reads the rules again.
		return false, pg.run(ctx, "pg_ctl", "reload", "-D", pg.DataDir)
	case port != 0:
		// Running from an earlier start on another port: restart it.
		if err := pg.Stop(ctx); err != nil {
			return false, err
		}
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", pg.Port, shellQuote(pg.SockDir))
	cmd, logf, err := pg.command(ctx, "pg_ctl", "start", "-D", pg.DataDir, "-w", "-t", "60", "-o", opts)
	if err != nil {
		return false, err
	}
	// No -l: the server keeps pg_ctl's stdout/stderr, the log file we
	// opened, so the log need not be writable by the server user by path.
	defer logf.Close()
	if err := cmd.Run(); err != nil {
		return false, fmt.Errorf("pg_ctl start: %w", err)
	}
	return true, nil
}

// Stop stops the server (fast shutdown) if it runs.
func (pg *Postgres) Stop(ctx context.Context) error {
	if pg.RunningPort() == 0 {
		return nil
	}
	return pg.run(ctx, "pg_ctl", "stop", "-D", pg.DataDir, "-m", "fast", "-w", "-t", "60")
}

// hba is the server's client authentication (pg_hba.conf), written at
// every start: the superuser connects only over the server's socket
// (SockDir, closed to everyone but root and the server's user), never over
// TCP — a playbook's task or a test connecting as the superuser could run
// programs as the server's OS user on the host (COPY ... FROM PROGRAM) and
// read its files (pg_read_file), outside every sandbox. Every other role
// (PGUser: playbooks, tests) connects over TCP from loopback without a
// password.
const hba = `# Written by the stack supervisor (emulators/stack/postgres.go) at every start.
local all all trust
host all ` + PGSuperuser + ` 0.0.0.0/0 reject
host all ` + PGSuperuser + ` ::/0 reject
host all all 127.0.0.1/32 trust
host all all ::1/128 trust
`

// writeHBA writes pg_hba.conf (owned by the server's user).
func (pg *Postgres) writeHBA() error {
	p := filepath.Join(pg.DataDir, "pg_hba.conf")
	if err := writeFileAtomic(p, []byte(hba), 0o600); err != nil {
		return fmt.Errorf("pg_hba.conf: %w", err)
	}
	if pg.cred != nil {
		return os.Chown(p, int(pg.cred.Uid), int(pg.cred.Gid))
	}
	return nil
}

// Provision creates the role PGUser (no superuser, no role or database
// creation) and the noetl database it owns, hands it the public schema
// and what earlier runs created there, provisions the side-effect
// barrier (postgres.BarrierSetupSQL: schema noetl_barrier, owned by the
// role noetl_barrier, which playbooks only call) and applies every *.sql
// file of sqlDir in name order as that role (the files must be
// idempotent). It connects as the superuser over the server's socket.
func (pg *Postgres) Provision(ctx context.Context, sqlDir string) ([]string, error) {
	super := func(db string) string {
		return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", pg.SockDir, pg.Port, PGSuperuser, db)
	}
	conn, err := connectRetry(ctx, super("postgres"))
	if err != nil {
		return nil, err
	}
	role := pgx.Identifier{PGUser}.Sanitize()
	var exists bool
	_, err = conn.Exec(ctx, `DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '`+PGUser+`') THEN CREATE ROLE `+role+` LOGIN; END IF; END $$`)
	if err == nil {
		_, err = conn.Exec(ctx, "ALTER ROLE "+role+" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS")
	}
	if err == nil {
		err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", PGDatabase).Scan(&exists)
	}
	if err == nil && !exists {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{PGDatabase}.Sanitize()+" OWNER "+role)
	} else if err == nil {
		_, err = conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{PGDatabase}.Sanitize()+" OWNER TO "+role)
	}
	conn.Close(ctx)
	if err != nil {
		return nil, fmt.Errorf("create role %s and database %s: %w", PGUser, PGDatabase, err)
	}
	db, err := connectRetry(ctx, super(PGDatabase))
	if err != nil {
		return nil, err
	}
	defer db.Close(ctx)
	// The schema and what earlier runs made there as the superuser.
	if _, err := db.Exec(ctx, `ALTER SCHEMA public OWNER TO `+role+`;
DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relowner <> '`+PGUser+`'::regrole
  LOOP EXECUTE format('ALTER TABLE public.%I OWNER TO `+PGUser+`', r.relname); END LOOP;
END $$; SET ROLE `+role, pgx.QueryExecModeSimpleProtocol); err != nil {
		return nil, fmt.Errorf("hand the noetl database to %s: %w", PGUser, err)
	}
	// The side-effect barrier belongs to a role of its own, not to the
	// playbooks' (docs "Security"); the table of engines before it, whose
	// rows held task results any playbook could read, goes.
	if _, err := db.Exec(ctx, "RESET ROLE; DROP TABLE IF EXISTS public.noetl_task_barrier; "+postgres.BarrierSetupSQL()+" SET ROLE "+role, pgx.QueryExecModeSimpleProtocol); err != nil {
		return nil, fmt.Errorf("provision the side-effect barrier: %w", err)
	}
	files, _ := filepath.Glob(filepath.Join(sqlDir, "*.sql"))
	sort.Strings(files)
	var applied []string
	for _, f := range files {
		sql, err := os.ReadFile(f)
		if err != nil {
			return applied, err
		}
		// Simple protocol: a file may hold several statements.
		if _, err := db.Exec(ctx, string(sql), pgx.QueryExecModeSimpleProtocol); err != nil {
			return applied, fmt.Errorf("apply %s: %w", f, err)
		}
		applied = append(applied, filepath.Base(f))
	}
	return applied, nil
}

// connectRetry connects to dsn, retrying for up to 30s while the server
// finishes starting.
func connectRetry(ctx context.Context, dsn string) (*pgx.Conn, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.Connect(cctx, dsn)
		cancel()
		if err == nil {
			return conn, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("connect %s: %w", dsn, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
