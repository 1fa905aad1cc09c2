//go:build linux

package sandbox

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/noetl/gcpengine/shared/egress"
)

// BenchmarkCommand measures one `python3 -c pass` per containment mode
// (the runner's per-task sandbox overhead): go test ./runner/sandbox
// -run ^$ -bench Command.
func BenchmarkCommand(b *testing.B) {
	p, _ := egress.New("local", []string{"127.0.0.1:5432"}, nil)
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"plain", Options{NoCgroup: true}},
		{"cgroup", Options{}},
		{"isolated", Options{Isolate: true, NoCgroup: true}},
		{"isolated+network", Options{Isolate: true, Network: p, NoCgroup: true}},
		{"runner", Options{Isolate: true, Network: p, Limits: Limits{MemoryBytes: 1 << 30, Processes: 64, CPUs: 1}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			c.o.ControlDir = b.TempDir()
			s, err := New(c.o)
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			for b.Loop() {
				cmd := s.Command(context.Background(), python, "-S", "-c", "pass")
				cmd.Dir = dir
				cmd.Env = []string{"PATH=/usr/bin"}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
