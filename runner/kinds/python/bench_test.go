package python

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/egress"
)

// BenchmarkTask measures one python task ("result = 1") under the
// default sandbox and under the runner's (isolated, own network, control
// group, workspace tmpfs), and under the runner's with warm interpreters
// (runner-warm: each task finds one ready; the timer stops while the pool
// replaces the one used): go test ./runner/kinds/python -run ^$ -bench Task.
func BenchmarkTask(b *testing.B) {
	p, _ := egress.New("local", []string{"127.0.0.1:5432"}, nil)
	for _, c := range []struct {
		name string
		o    sandbox.Options
		ws   bool
		warm int
	}{
		{"default", sandbox.Options{}, false, 0},
		{"runner", sandbox.Options{Isolate: true, Network: p, Limits: sandbox.Limits{MemoryBytes: 1 << 30, Processes: 64, CPUs: 1}}, true, 0},
		{"runner-warm", sandbox.Options{Isolate: true, Network: p, Limits: sandbox.Limits{MemoryBytes: 1 << 30, Processes: 64, CPUs: 1}}, true, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			c.o.ControlDir = b.TempDir()
			sb, err := sandbox.New(c.o)
			if err != nil {
				b.Fatal(err)
			}
			root := b.TempDir()
			tl := New(Options{Sandbox: sb, Interpreter: "/usr/bin/python3", Warm: c.warm,
				Workspaces: func() (*sandbox.Workspace, error) { return sandbox.NewWorkspace(root, 64<<20, false) }})
			defer tl.Close()
			for b.Loop() {
				if c.warm > 0 {
					b.StopTimer()
					for st := tl.pool().Stats(); st.Ready < c.warm || st.Starting > 0; st = tl.pool().Stats() {
						time.Sleep(time.Millisecond)
					}
					b.StartTimer()
				}
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

// BenchmarkWarmStart measures starting one warm interpreter in the
// runner's sandbox (isolated, own network, control group, workspace
// tmpfs) and destroying it: exec'd through the helper, or forked from a
// zygote (Options.Zygote): go test ./runner/kinds/python -run ^$ -bench
// WarmStart.
func BenchmarkWarmStart(b *testing.B) {
	p, _ := egress.New("local", []string{"127.0.0.1:5432"}, nil)
	for _, zygote := range []bool{false, true} {
		b.Run(map[bool]string{false: "exec", true: "zygote"}[zygote], func(b *testing.B) {
			o := sandbox.Options{Isolate: true, Network: p, Limits: sandbox.Limits{MemoryBytes: 1 << 30, Processes: 64, CPUs: 1},
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ControlDir: b.TempDir()}
			sb, err := sandbox.New(o)
			if err != nil {
				b.Fatal(err)
			}
			root := b.TempDir()
			tl := New(Options{Sandbox: sb, Interpreter: "/usr/bin/python3", Warm: 1, Zygote: zygote,
				Workspaces: func() (*sandbox.Workspace, error) { return sandbox.NewWorkspace(root, 64<<20, false) }})
			defer tl.Close()
			for b.Loop() {
				w, err := tl.startWarm(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				w.Destroy()
			}
			if zygote && tl.zyForked.Load() == 0 {
				b.Fatal("no interpreter forked from a zygote")
			}
		})
	}
}
