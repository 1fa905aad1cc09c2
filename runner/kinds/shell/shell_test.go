package shell

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/types"
)

func run(t *testing.T, cfg map[string]any, timeoutS float64) types.Outcome {
	t.Helper()
	return New(Options{}).Exec(context.Background(), nil, cfg, timeoutS)
}

func result(t *testing.T, o types.Outcome) map[string]any {
	t.Helper()
	r, ok := o.Result.(map[string]any)
	if !ok {
		t.Fatalf("result %T %#v (error %+v)", o.Result, o.Result, o.Error)
	}
	return r
}

func TestCommandOK(t *testing.T) {
	o := run(t, map[string]any{"command": "echo hello; echo oops >&2"}, 0)
	if o.Status != types.StatusOK {
		t.Fatalf("status %s %+v", o.Status, o.Error)
	}
	r := result(t, o)
	if r["stdout"] != "hello\n" || r["stderr"] != "oops\n" || r["exit_code"] != 0 || r["returncode"] != 0 {
		t.Fatalf("result %#v", r)
	}
}

func TestNonZeroExit(t *testing.T) {
	o := run(t, map[string]any{"command": "echo partial; echo 'bad thing' >&2; exit 3"}, 0)
	if o.Status != types.StatusError || o.Error.Kind != "shell" || o.Error.Retryable {
		t.Fatalf("outcome %+v", o.Error)
	}
	if !strings.Contains(o.Error.Message, "code 3") || !strings.Contains(o.Error.Message, "bad thing") {
		t.Fatalf("message %q", o.Error.Message)
	}
	if r := result(t, o); r["exit_code"] != 3 || r["stdout"] != "partial\n" {
		t.Fatalf("result %#v", r)
	}
}

// TestCmdsStopAtFirstFailure: NoETL's `cmds` list runs in order and stops at
// the first failing command.
func TestCmdsStopAtFirstFailure(t *testing.T) {
	o := run(t, map[string]any{"cmds": []any{"echo one", "false", "echo three"}}, 0)
	if o.Status != types.StatusError {
		t.Fatalf("status %s", o.Status)
	}
	r := result(t, o)
	if r["stdout"] != "one\n" || len(r["commands"].([]any)) != 2 || r["exit_code"] != 1 {
		t.Fatalf("result %#v", r)
	}
}

// TestNoEngineEnvironment: nothing of the engine's environment reaches the
// command, only PATH, HOME, TMPDIR, LANG and the task's env.
func TestNoEngineEnvironment(t *testing.T) {
	t.Setenv("NOETL_TEST_SECRET", "s3cret-value")
	o := run(t, map[string]any{"command": "env | sort", "env": map[string]any{"GREETING": "hi", "N": 2, "SKIP": nil}}, 0)
	if o.Status != types.StatusOK {
		t.Fatalf("%+v", o.Error)
	}
	out := result(t, o)["stdout"].(string)
	if strings.Contains(out, "s3cret-value") || strings.Contains(out, "NOETL_TEST_SECRET") {
		t.Fatalf("engine environment leaked:\n%s", out)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, _, _ := strings.Cut(l, "=")
		switch k {
		case "PWD", "SHLVL", "_", "OLDPWD": // set by the shell itself
			continue
		}
		names = append(names, k)
	}
	if got := strings.Join(names, ","); got != "GREETING,HOME,LANG,N,PATH,TMPDIR" {
		t.Fatalf("environment names %s\n%s", got, out)
	}
	if !strings.Contains(out, "GREETING=hi\n") || !strings.Contains(out, "N=2\n") {
		t.Fatalf("env values:\n%s", out)
	}
}

// TestTimeoutKillsGroup: on timeout the whole process group dies,
// including a background grandchild, and the outcome is a retryable
// timeout.
func TestTimeoutKillsGroup(t *testing.T) {
	dir := sharedDir(t, 0o777) // the sandbox's uid must be able to write the marker
	marker := filepath.Join(dir, "alive")
	start := time.Now()
	o := run(t, map[string]any{
		"command":         "(sleep 1.5; touch " + marker + ") & sleep 30",
		"timeout_seconds": 0.3,
	}, 0)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("took %s", el)
	}
	if o.Status != types.StatusError || o.Error.Kind != "timeout" || !o.Error.Retryable {
		t.Fatalf("outcome %+v", o.Error)
	}
	time.Sleep(2 * time.Second)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the background child survived the timeout")
	}
}

// TestAttemptTimeoutBounds: the attempt timeout caps the task's own.
func TestAttemptTimeoutBounds(t *testing.T) {
	start := time.Now()
	o := run(t, map[string]any{"command": "sleep 10", "timeout_seconds": 60}, 0.2)
	if o.Status != types.StatusError || o.Error.Kind != "timeout" || time.Since(start) > 5*time.Second {
		t.Fatalf("outcome %+v after %s", o.Error, time.Since(start))
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	o := New(Options{}).Exec(ctx, nil, map[string]any{"command": "sleep 10"}, 0)
	if o.Status != types.StatusError || o.Error.Kind != "canceled" {
		t.Fatalf("%+v", o.Error)
	}
}

func TestCwdAndShell(t *testing.T) {
	dir := sharedDir(t, 0o755) // the sandbox's uid must be able to enter it
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := run(t, map[string]any{"command": "cat f.txt", "cwd": dir}, 0)
	if o.Status != types.StatusOK || result(t, o)["stdout"] != "content" {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	if _, err := os.Stat("/bin/bash"); err == nil {
		o = run(t, map[string]any{"command": "echo ${BASH_VERSION:+bash}", "shell": "bash"}, 0)
		if result(t, o)["stdout"] != "bash\n" {
			t.Fatalf("%#v", o.Result)
		}
	}
	// The default working directory is fresh, empty and removed afterwards.
	o = run(t, map[string]any{"command": "pwd; ls -A | wc -l"}, 0)
	lines := strings.Fields(result(t, o)["stdout"].(string))
	if len(lines) != 2 || lines[1] != "0" {
		t.Fatalf("%q", lines)
	}
	if _, err := os.Stat(lines[0]); err == nil {
		t.Fatalf("working directory %s not removed", lines[0])
	}
}

// sharedDir is a temporary directory with mode perm that a dedicated
// sandbox uid can reach (t.TempDir's parent is private to the engine).
func sharedDir(t *testing.T, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "noetl-sh-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOutputTruncated(t *testing.T) {
	tl := New(Options{MaxOutputBytes: 1000})
	o := tl.Exec(context.Background(), nil, map[string]any{"command": "head -c 50000 /dev/zero | tr '\\0' a; echo END"}, 0)
	r := result(t, o)
	s := r["stdout"].(string)
	if len(s) != 1000 || !strings.HasSuffix(s, "aEND\n") || r["truncated"] != true {
		t.Fatalf("len %d truncated %v tail %q", len(s), r["truncated"], s[len(s)-10:])
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []map[string]any{
		{},
		{"command": map[string]any{"a": 1}},
		{"cmds": []any{1}},
		{"cmds": []any{}},
		{"command": "true", "env": "X=1"},
		{"command": "true", "env": map[string]any{"A=B": "1"}},
		{"command": "true", "shell": "/nonexistent/sh"},
		{"command": "true", "cwd": "/nonexistent/dir"},
		{"command": "true", "timeout_seconds": "soon"},
	} {
		o := run(t, cfg, 0)
		if o.Status != types.StatusError || o.Error.Kind != "config" || o.Error.Retryable {
			t.Errorf("%v: %+v", cfg, o.Error)
		}
	}
}

func TestCommandsAliasAndNoCapture(t *testing.T) {
	o := run(t, map[string]any{"commands": []any{"echo a", "echo b >&2"}, "capture": false}, 0)
	r := result(t, o)
	if o.Status != types.StatusOK || r["stdout"] != "" || r["stderr"] != "" || len(r["commands"].([]any)) != 2 {
		t.Fatalf("%+v %#v", o.Error, r)
	}
	if o := run(t, map[string]any{"command": "true", "capture": "no"}, 0); o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("%+v", o.Error)
	}
}
