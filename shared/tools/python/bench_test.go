package python

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/egress"
)

// BenchmarkTask measures one python task ("result = 1") under the
// default sandbox and under the runner's (isolated, own network, control
// group, workspace tmpfs): go test ./shared/tools/python -run ^$ -bench Task.
func BenchmarkTask(b *testing.B) {
	p, _ := egress.New("local", []string{"127.0.0.1:5432"}, nil)
	for _, c := range []struct {
		name string
		o    sandbox.Options
		ws   bool
	}{
		{"default", sandbox.Options{}, false},
		{"runner", sandbox.Options{Isolate: true, Network: p, Limits: sandbox.Limits{MemoryBytes: 1 << 30, Processes: 64, CPUs: 1}}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			c.o.ControlDir = b.TempDir()
			sb, err := sandbox.New(c.o)
			if err != nil {
				b.Fatal(err)
			}
			tl := New(Options{Sandbox: sb, Interpreter: "/usr/bin/python3"})
			root := b.TempDir()
			for b.Loop() {
				ctx := context.Background()
				if c.ws {
					ws, err := sandbox.NewWorkspace(root, 64<<20, false)
					if err != nil {
						b.Fatal(err)
					}
					ctx = sandbox.WithWorkspace(ctx, ws)
					defer ws.Close()
				}
				if o := tl.Exec(ctx, nil, map[string]any{"code": "result = 1"}, 30); o.Error != nil {
					b.Fatal(o.Error.Message)
				}
			}
		})
	}
}
