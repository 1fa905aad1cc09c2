package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/runner/sandbox"
)

// The runner's image cannot be built here (no Docker engine): these tests
// check runner/Dockerfile offline — a cgo build of ./runner on the
// runtime's Debian release with a Go at least go.mod's, a runtime that
// installs exactly runner/packages.txt, the list the local stack installs
// too (scripts/lib.sh), parsed the same way by both.

func repoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// packages are the entries of runner/packages.txt as the Go side reads
// them.
func packages(t *testing.T) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(repoFile(t, "runner/packages.txt")))
	for sc.Scan() {
		line := strings.TrimSpace(strings.SplitN(sc.Text(), "#", 2)[0])
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

func TestPackageList(t *testing.T) {
	p := packages(t)
	for _, want := range []string{"python3", "python3-psycopg2", "python3-psycopg"} {
		if !slices.Contains(p, want) {
			t.Errorf("runner/packages.txt lacks %s (NoETL's python tasks import psycopg and psycopg2)", want)
		}
	}
	for _, name := range p {
		if !regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]+$`).MatchString(name) {
			t.Errorf("%q is not a Debian package name", name)
		}
	}
}

// Both consumers read the same file and get the same list out of it: the
// Dockerfile's install command and scripts/lib.sh's runner_packages are
// run here on runner/packages.txt.
func TestOneListTwoConsumers(t *testing.T) {
	want := strings.Join(packages(t), "\n")
	df := repoFile(t, "runner/Dockerfile")
	if !strings.Contains(df, "COPY runner/packages.txt /tmp/packages.txt") {
		t.Fatal("runner/Dockerfile does not copy runner/packages.txt")
	}
	m := regexp.MustCompile(`apt-get install -y --no-install-recommends \$\((sed [^)]*) /tmp/packages.txt\)`).FindStringSubmatch(df)
	if m == nil {
		t.Fatal("runner/Dockerfile does not apt-get install the packages of /tmp/packages.txt")
	}
	out, err := exec.Command("sh", "-c", m[1]+" ../runner/packages.txt").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("the Dockerfile installs\n%s\nwant\n%s", got, want)
	}
	lib := repoFile(t, "scripts/lib.sh")
	if !strings.Contains(lib, `"$REPO_ROOT/runner/packages.txt"`) || !strings.Contains(lib, "done < <(runner_packages)") {
		t.Fatal("scripts/lib.sh does not install runner_packages from runner/packages.txt")
	}
	cmd := exec.Command("bash", "-c", `. scripts/lib.sh && runner_packages`)
	cmd.Dir = ".."
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("runner_packages: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("scripts/lib.sh installs\n%s\nwant\n%s", got, want)
	}
}

func TestDockerfile(t *testing.T) {
	df := repoFile(t, "runner/Dockerfile")
	arg := func(name string) string {
		m := regexp.MustCompile(`(?m)^ARG ` + name + `=(\S+)$`).FindStringSubmatch(df)
		if m == nil {
			t.Fatalf("runner/Dockerfile has no ARG %s", name)
		}
		return m[1]
	}
	gover := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(repoFile(t, "go.mod"))[1]
	if v := arg("GO_VERSION"); versionLess(v, gover) {
		t.Errorf("the image builds with Go %s, go.mod needs %s", v, gover)
	}
	rel := arg("DEBIAN_RELEASE")
	stages := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(df, -1)
	if len(stages) != 2 || stages[0][1] != "golang:${GO_VERSION}-${DEBIAN_RELEASE}" || stages[1][1] != "debian:${DEBIAN_RELEASE}-slim" {
		t.Errorf("stages %v: want a golang builder and a debian runtime of one release (%s): the cgo binary links against the runtime's glibc", stages, rel)
	}
	if !strings.Contains(df, "CGO_ENABLED=1 go build") || !strings.Contains(df, "./runner") {
		t.Error("the runner must be built with CGO_ENABLED=1 (DuckDB)")
	}
	if strings.Contains(df, "-tags") {
		t.Error("the build must not set tags: the duckdb kind is selected by the cgo constraint alone")
	}
	// The duckdb kind's engine is behind the cgo build constraint (its
	// stub is !cgo): the build above selects it.
	for file, want := range map[string]string{"runner/kinds/duckdb/duckdb.go": "//go:build cgo", "runner/kinds/duckdb/stub.go": "//go:build !cgo"} {
		if !strings.HasPrefix(repoFile(t, file), want+"\n") {
			t.Errorf("%s does not start with %q", file, want)
		}
	}
	if !strings.Contains(df, `ENTRYPOINT ["/usr/local/bin/runner"]`) || !strings.Contains(df, "NOETL_REPO_ROOT=/srv/noetl") {
		t.Error("the image must run the runner with the repository as the script root")
	}
	for _, secret := range append(slices.Clone(forbiddenEnv), "NOETL_SIGNING_KEY", "NOETL_API_TOKEN") {
		if strings.Contains(df, secret) {
			t.Errorf("runner/Dockerfile mentions %s", secret)
		}
	}
	cb := repoFile(t, "runner/cloudbuild.yaml")
	if !strings.Contains(cb, `"-f", "runner/Dockerfile"`) || !strings.Contains(cb, `images: ["${_IMAGE}"]`) {
		t.Error("runner/cloudbuild.yaml must build runner/Dockerfile and push ${_IMAGE}")
	}
	di := repoFile(t, ".dockerignore")
	for _, p := range []string{".git", ".stack", "**/*.tfstate"} {
		if !strings.Contains(di, "\n"+p+"\n") {
			t.Errorf(".dockerignore lacks %s (the build context must not carry the stack's keys or state)", p)
		}
	}
}

// versionLess compares dotted Go versions.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			x = atoi(pa[i])
		}
		if i < len(pb) {
			y = atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// In the image the duckdb worker is the runner's own binary, started in
// the task's room: the binary must sit in a directory every room sees
// read-only (sandbox.DefaultReadOnly), and nothing may turn the rooms'
// seccomp filter off (the runner refuses to start without it: run).
func TestImageRooms(t *testing.T) {
	df := repoFile(t, "runner/Dockerfile")
	m := regexp.MustCompile(`COPY --from=build /out/runner (\S+)`).FindStringSubmatch(df)
	if m == nil {
		t.Fatal("runner/Dockerfile does not install the runner binary")
	}
	in := false
	for _, d := range sandbox.DefaultReadOnly {
		in = in || strings.HasPrefix(m[1], d+"/")
	}
	if !in {
		t.Errorf("the runner binary is installed at %s, outside the directories a room sees (%v): the duckdb worker could not start", m[1], sandbox.DefaultReadOnly)
	}
	if requireRooms(sandbox.Mode{Seccomp: false, DedicatedUID: true, PIDNamespace: true}) == nil {
		t.Error("the runner would run authors' code without the seccomp filter")
	}
	if err := requireRooms(sandbox.Mode{Seccomp: true}); err != nil {
		t.Error(err)
	}
	if !strings.Contains(repoFile(t, "runner/main.go"), "if err := requireRooms(sb.Mode()); err != nil {") {
		t.Error("run no longer checks requireRooms")
	}
	if strings.Contains(strings.ToUpper(df), "SECCOMP") {
		t.Error("runner/Dockerfile mentions seccomp: the filter is the runner's own and has no switch")
	}
}
