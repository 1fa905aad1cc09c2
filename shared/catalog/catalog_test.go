package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
)

const validPlaybook = `apiVersion: noetl.io/v2
kind: Playbook
metadata:
  name: hello
  path: examples/hello
workflow:
  - step: start
    tool:
      kind: noop
    next:
      - step: end
  - step: end
    tool:
      kind: noop
`

// secretLine is what must never appear in an error.
const secretLine = "root:x:0:0:hunter2-SECRET"

// tree builds a playbook root with an outside neighbour:
//
//	dir/outside.yaml          a playbook outside the root
//	dir/secret                a non-playbook file outside the root
//	dir/root/examples/hello.yaml
//	dir/root/examples/broken.yaml  (declares kind: Playbook, invalid)
//	dir/root/creds.yaml       (a YAML mapping that is not a playbook)
//	dir/root/link-in.yaml   -> examples/hello.yaml
//	dir/root/link-abs       -> <dir>/secret
//	dir/root/link-up.yaml   -> ../outside.yaml
func tree(t *testing.T) (dir, root string) {
	t.Helper()
	dir = t.TempDir()
	root = filepath.Join(dir, "root")
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "outside.yaml"), validPlaybook)
	write(filepath.Join(dir, "secret"), secretLine+"\n")
	write(filepath.Join(root, "examples", "hello.yaml"), validPlaybook)
	write(filepath.Join(root, "examples", "broken.yaml"), "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: b}\nworkflow: []\n")
	write(filepath.Join(root, "creds.yaml"), "password: "+secretLine+"\ntoken: abc\n")
	write(filepath.Join(root, "plain"), secretLine+"\n")
	for link, target := range map[string]string{
		"link-in.yaml": "examples/hello.yaml",
		"link-abs":     filepath.Join(dir, "secret"),
		"link-up.yaml": "../outside.yaml",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, root
}

func TestLoadConfinedToRoot(t *testing.T) {
	dir, root := tree(t)
	c := &Catalog{Root: root}
	ctx := context.Background()

	for _, p := range []string{"examples/hello", "examples/hello.yaml", "link-in.yaml", "./examples/hello", "examples/../examples/hello"} {
		e, err := c.Load(ctx, p, 0)
		if err != nil {
			t.Errorf("Load(%q): %v", p, err)
			continue
		}
		if e.Playbook.Metadata.Name != "hello" {
			t.Errorf("Load(%q) = %q", p, e.Playbook.Metadata.Name)
		}
	}

	refused := []string{
		"/etc/passwd",
		filepath.Join(dir, "secret"),
		filepath.Join(dir, "outside.yaml"),
		"../outside",
		"../outside.yaml",
		"examples/../../outside.yaml",
		"../../../../../../etc/passwd",
		"link-abs",
		"link-up.yaml",
		"link-up",
	}
	for _, p := range refused {
		_, err := c.Load(ctx, p, 0)
		if !errors.Is(err, ErrOutsideRoot) || !errors.Is(err, ErrNotFound) {
			t.Errorf("Load(%q): %v, want ErrOutsideRoot and ErrNotFound", p, err)
		}
		if err != nil && (strings.Contains(err.Error(), "root:x") || strings.Contains(err.Error(), "hunter2")) {
			t.Errorf("Load(%q) echoes file contents: %v", p, err)
		}
	}
}

func TestLoadNeverEchoesNonPlaybooks(t *testing.T) {
	_, root := tree(t)
	c := &Catalog{Root: root}
	for _, p := range []string{"creds.yaml", "creds", "plain"} {
		_, err := c.Load(context.Background(), p, 0)
		if !errors.Is(err, ErrNotPlaybook) || !errors.Is(err, ErrNotFound) {
			t.Errorf("Load(%q): %v, want ErrNotPlaybook and ErrNotFound", p, err)
			continue
		}
		var ve *dsl.ValidationError
		if errors.As(err, &ve) {
			t.Errorf("Load(%q): validation problems of a non-playbook are shown: %v", p, err)
		}
		for _, leak := range []string{"root:x", "hunter2", "password", "token"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("Load(%q) error %q contains %q", p, err, leak)
			}
		}
	}
	// A file that declares itself a playbook gets its validation problems.
	_, err := c.Load(context.Background(), "examples/broken", 0)
	var ve *dsl.ValidationError
	if !errors.As(err, &ve) {
		t.Errorf("broken playbook: %v, want a *dsl.ValidationError", err)
	}
	// A playbook with a YAML syntax error still gets the parser's message.
	if err := os.WriteFile(filepath.Join(root, "syntax.yaml"), []byte("apiVersion: noetl.io/v2\nkind: Playbook\nworkflow: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Load(context.Background(), "syntax", 0); !errors.As(err, &ve) {
		t.Errorf("syntax error: %v, want a *dsl.ValidationError", err)
	}
}

func TestLoadRefusesSpecialAndHugeFiles(t *testing.T) {
	_, root := tree(t)
	c := &Catalog{Root: root}
	fifo := filepath.Join(root, "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Load(context.Background(), "pipe.yaml", 0)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotPlaybook) {
			t.Errorf("fifo: %v, want ErrNotPlaybook", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load blocked on a FIFO")
	}
	big := filepath.Join(root, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := c.Load(context.Background(), "big.yaml", 0); !errors.Is(err, ErrNotPlaybook) {
		t.Errorf("huge file: %v, want ErrNotPlaybook", err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Load(context.Background(), "dir.yaml", 0); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotPlaybook) {
		t.Errorf("directory: %v, want plain ErrNotFound", err)
	}
}

func TestLoadMissing(t *testing.T) {
	_, root := tree(t)
	c := &Catalog{Root: root}
	_, err := c.Load(context.Background(), "examples/nope", 0)
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrOutsideRoot) || errors.Is(err, ErrNotPlaybook) {
		t.Fatalf("missing: %v", err)
	}
	if strings.Contains(err.Error(), root) {
		t.Errorf("error names the server's root directory: %v", err)
	}
	if _, err := c.Load(context.Background(), "examples/hello", 3); !errors.Is(err, ErrNotFound) {
		t.Errorf("file with a version: %v", err)
	}
}
