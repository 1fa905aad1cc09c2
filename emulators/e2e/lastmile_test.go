package e2e

// The last mile of running today's NoETL playbooks (this project's own
// conformance playbooks, testdata/conformance/lastmile): postgres result
// shapes, the pipeline's result variable, a flat-table save, and scripts
// beside a playbook run from another directory.

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/launch"
)

func lastmile(name string) string { return Conformance("lastmile", name) }

// TestLastMileConformance runs each construct's playbook on the stack;
// the asserts inside fail the run when a shape is off.
func TestLastMileConformance(t *testing.T) {
	setupV2(t)
	cases := []struct {
		file string
		step string
		want map[string]any
	}{
		{"postgres_result_shapes.yaml", "check", map[string]any{"status": "passed", "selected": int64(3), "updated": int64(1)}},
		{"pipeline_result.yaml", "end", map[string]any{"status": "passed", "doubled": int64(12)}},
		{"save_flat_table.yaml", "end", map[string]any{"status": "passed", "stored": int64(1)}},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".yaml"), func(t *testing.T) {
			r := Run(t, lastmile(c.file), "")
			if r.Code != 0 || r.Status != "ok" {
				t.Fatalf("exit %d status %q\nstdout %s\nstderr %s", r.Code, r.Status, r.Stdout, r.Stderr)
			}
			got, _ := r.Steps[c.step].(map[string]any)
			for k, v := range c.want {
				if got[k] != v {
					t.Fatalf("%s.%s = %#v, want %#v (%v)", c.step, k, got[k], v, got)
				}
			}
		})
	}
}

// runFrom runs scripts/run on playbook with dir as the working directory.
func runFrom(t *testing.T, dir, playbook string) (int, string, string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "run"), playbook, "--quiet", "--timeout", "5m")
	cmd.Dir = dir
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), so.String(), se.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, so.String(), se.String()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestScriptBesidePlaybook: a playbook copied with its script
// (scripts/create_test_table.sql) to a directory outside the repository
// runs from yet another working directory, by an absolute and by a
// relative path: the CLI sends the file with the execution. A script path
// that leaves the playbook's directory is refused before anything runs.
func TestScriptBesidePlaybook(t *testing.T) {
	setupV2(t)
	elsewhere := t.TempDir()
	pb := filepath.Join(elsewhere, "playbook.yaml")
	copyFile(t, lastmile("script_beside/playbook.yaml"), pb)
	copyFile(t, lastmile("script_beside/scripts/create_test_table.sql"), filepath.Join(elsewhere, "scripts", "create_test_table.sql"))
	cwd := t.TempDir()
	for _, path := range []string{pb, mustRel(t, cwd, pb)} {
		code, out, errOut := runFrom(t, cwd, path)
		if code != 0 || !strings.Contains(out, `"status":"ok"`) || !strings.Contains(out, `"rows":2`) {
			t.Fatalf("scripts/run %s from %s: exit %d\nstdout %s\nstderr %s", path, cwd, code, out, errOut)
		}
	}

	// A script outside the playbook's directory: refused by the CLI (exit 2).
	secret := filepath.Join(t.TempDir(), "outside.sql")
	if err := os.WriteFile(secret, []byte("SELECT 'not to be sent'"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{secret, "../" + filepath.Base(filepath.Dir(secret)) + "/outside.sql"} {
		src, _ := os.ReadFile(pb)
		bad := filepath.Join(elsewhere, "bad.yaml")
		if err := os.WriteFile(bad, []byte(strings.Replace(string(src), "uri: scripts/create_test_table.sql", "uri: "+uri, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runFrom(t, cwd, bad)
		if code != 2 || !strings.Contains(errOut, "outside the playbook's directory") || strings.Contains(out, "execution_id") {
			t.Fatalf("script %s: exit %d, stdout %s stderr %s; want exit 2 naming the directory, nothing started", uri, code, out, errOut)
		}
	}
}

func mustRel(t *testing.T, base, target string) string {
	t.Helper()
	r, err := filepath.Rel(base, target)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPlaybookFilesRefused (red team): the api takes with an inline
// playbook only the script files it reads, as they are: a file the
// playbook does not name (a way to plant content), a digest that does not
// match, and files with a catalog path are refused with 400 and start
// nothing.
func TestPlaybookFilesRefused(t *testing.T) {
	RequireStack(t)
	src, err := os.ReadFile(lastmile("script_beside/playbook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sql := "CREATE TABLE planted (id int);"
	base := os.Getenv("NOETL_FUNCTIONS_URL") + "/api/executions"
	cases := []struct {
		name string
		body map[string]any
		want string
	}{
		{"unnamed file", map[string]any{"playbook": string(src), "files": map[string]any{
			"scripts/other.sql": map[string]any{"sha256": launch.Digest(sql), "content": sql}}}, "not a script file the playbook reads"},
		{"digest", map[string]any{"playbook": string(src), "files": map[string]any{
			"scripts/create_test_table.sql": map[string]any{"sha256": launch.Digest("something else"), "content": sql}}}, "does not match its sha256"},
		{"catalog path", map[string]any{"path": "lastmile/script_beside", "files": map[string]any{
			"scripts/create_test_table.sql": map[string]any{"sha256": launch.Digest(sql), "content": sql}}}, "inline playbook only"},
	}
	for _, c := range cases {
		code, body := post(t, base, []byte(MustJSON(c.body)))
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) || strings.Contains(body, "execution_id") {
			t.Errorf("%s: %d %s; want 400 with %q and no execution", c.name, code, body, c.want)
		}
	}
}

// s3Request sends one request to the stack's S3 store (NOETL_S3_URL;
// path-style, no signature needed) and returns its status and body.
func s3Request(t *testing.T, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, os.Getenv("NOETL_S3_URL")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestLastMileS3 runs s3_objects.yaml on the stack's S3 store: put, list,
// get, delete, and transfers in (json and csv objects into PostgreSQL)
// and out (csv and jsonl objects); its asserts check every shape. The
// test then reads the store itself: the one object the playbook keeps is
// there with the exported rows, the deleted ones are gone; and the table
// holds the four rows loaded.
func TestLastMileS3(t *testing.T) {
	setupV2(t)
	bucket := "lastmile-" + randSuffix()
	if code, body := s3Request(t, http.MethodPut, "/"+bucket); code != http.StatusOK {
		t.Fatalf("create bucket %s on %s: %d %s", bucket, os.Getenv("NOETL_S3_URL"), code, body)
	}
	r := Run(t, lastmile("s3_objects.yaml"), MustJSON(map[string]any{"bucket": bucket}))
	if r.Code != 0 || r.Status != "ok" {
		t.Fatalf("exit %d status %q\nstdout %s\nstderr %s", r.Code, r.Status, r.Stdout, r.Stderr)
	}
	eq(t, "end", step(t, r, "end"), map[string]any{"status": "passed", "listed": 2, "loaded": 4, "exported": 4, "left": 1})
	prefix := "/" + bucket + "/" + r.ExecutionID
	if code, body := s3Request(t, http.MethodGet, prefix+"/out/big"); code != http.StatusOK ||
		body != "{\"amount\":12.5,\"who\":\"ada\"}\n{\"amount\":7,\"who\":\"bob\"}\n{\"amount\":30.25,\"who\":\"cy\"}\n" {
		t.Errorf("the kept object: %d %q", code, body)
	}
	for _, k := range []string{"/in/orders.json", "/in/more.csv", "/out/orders.csv"} {
		if code, _ := s3Request(t, http.MethodGet, prefix+k); code != http.StatusNotFound {
			t.Errorf("deleted object %s: %d, want 404", k, code)
		}
	}
	eq(t, "table", pgQuery(t, "SELECT id, customer, total::text FROM lastmile_s3_orders ORDER BY id"),
		[][]any{{1, "ada", "12.5"}, {2, "bob", "7"}, {3, "cy", "30.25"}, {4, "dee", "1.5"}})
}
