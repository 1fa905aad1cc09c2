package stack

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestStartNATS starts the embedded server the way the supervisor does and
// uses JetStream key-value through it; the data survives a restart.
func TestStartNATS(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	c := Config{StackDir: dir, NATSPort: port}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(write bool) string {
		n, err := startNATS(c)
		if err != nil {
			t.Fatal(err)
		}
		defer n.stop()
		nc, err := nats.Connect(c.NATSURL(), nats.UserInfo("any", "thing"))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "sessions"})
		if err != nil {
			t.Fatal(err)
		}
		if write {
			if _, err := kv.Put(ctx, "k", []byte("v1")); err != nil {
				t.Fatal(err)
			}
		}
		e, err := kv.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		return string(e.Value())
	}
	if got := put(true); got != "v1" {
		t.Fatalf("got %q", got)
	}
	if got := put(false); got != "v1" {
		t.Fatalf("after restart got %q", got)
	}
}
