package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
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
	c := Config{StackDir: dir, NATSPort: port, NATSTaskPassword: "task-secret", NATSAdminPassword: "admin-secret", NATSTaskStoreMB: 4, NATSTaskMemoryMB: 1, NATSTaskConnections: 3}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(write bool) string {
		n, err := startNATS(c)
		if err != nil {
			t.Fatal(err)
		}
		defer n.stop()
		nc, err := nats.Connect(c.NATSURL(), nats.UserInfo(NATSTaskUser, "task-secret"))
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

// TestNATSAuthAndLimits: the stack's NATS refuses a client without the
// tasks' (or the operators') password, keeps the two accounts' JetStream
// apart, and bounds the tasks' account: its file storage
// (NOETL_NATS_TASK_STORE_MB), its memory and its connections
// (NOETL_NATS_TASK_CONNECTIONS); writes over them are refused by the
// server.
func TestNATSAuthAndLimits(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	c := Config{StackDir: dir, NATSPort: port, NATSTaskPassword: "task-secret", NATSAdminPassword: "admin-secret", NATSTaskStoreMB: 2, NATSTaskMemoryMB: 1, NATSTaskConnections: 3}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := startNATS(c)
	if err != nil {
		t.Fatal(err)
	}
	defer n.stop()
	for _, opt := range []nats.Option{nil, nats.UserInfo("", ""), nats.UserInfo("any", "thing"), nats.UserInfo(NATSTaskUser, "admin-secret")} {
		opts := []nats.Option{nats.MaxReconnects(0)}
		if opt != nil {
			opts = append(opts, opt)
		}
		if nc, err := nats.Connect(c.NATSURL(), opts...); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			if nc != nil {
				nc.Close()
			}
			t.Fatalf("a client without the tasks' password: %v", err)
		}
	}
	task, err := nats.Connect(c.NATSURL(), nats.UserInfo(NATSTaskUser, "task-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close()
	admin, err := nats.Connect(c.NATSURL(), nats.UserInfo(NATSAdminUser, "admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tjs, _ := jetstream.New(task)
	ajs, _ := jetstream.New(admin)
	if _, err := ajs.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "engine"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tjs.KeyValue(ctx, "engine"); err == nil {
		t.Fatal("the tasks' account sees the operators' bucket")
	}
	// Storage: 2 MiB of the tasks' account, then refused.
	kv, err := tjs.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "park", MaxValueSize: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	val := []byte(strings.Repeat("x", 256<<10))
	stored, refused := 0, error(nil)
	for i := 0; i < 40 && refused == nil; i++ {
		if _, refused = kv.Put(ctx, fmt.Sprintf("k%d", i), val); refused == nil {
			stored++
		}
	}
	if refused == nil || stored*len(val) > 2<<20 {
		t.Fatalf("stored %d × 256 KiB, refusal %v: want refused at the 2 MiB account limit", stored, refused)
	}
	t.Logf("refused after %d × 256 KiB: %v", stored, refused)
	// A stream asking for more than the account's memory is refused.
	if _, err := tjs.CreateStream(ctx, jetstream.StreamConfig{Name: "big", Subjects: []string{"big.>"}, Storage: jetstream.MemoryStorage, MaxBytes: 8 << 20}); err == nil {
		t.Fatal("a memory stream of 8 MiB in an account of 1 MiB was created")
	}
	// Connections: 3 for the tasks' account (task is one).
	var extra []*nats.Conn
	var connErr error
	for i := 0; i < 5 && connErr == nil; i++ {
		var nc *nats.Conn
		if nc, connErr = nats.Connect(c.NATSURL(), nats.UserInfo(NATSTaskUser, "task-secret"), nats.MaxReconnects(0)); connErr == nil {
			extra = append(extra, nc)
		}
	}
	for _, nc := range extra {
		nc.Close()
	}
	if connErr == nil || len(extra) != 2 {
		t.Fatalf("%d more connections of the tasks' account, then %v; want 2 and refused", len(extra), connErr)
	}
}
