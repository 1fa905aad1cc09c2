package stack

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestUserDataKafkaAndS3: the stack's Kafka cluster and S3 store listen
// on their configured loopback ports; a produced record is fetched back,
// a topic named by a producer is created on first use with one
// partition, and an object put into a bucket made with PUT /<bucket> is
// read back (a bucket is not created by a write).
func TestUserDataKafkaAndS3(t *testing.T) {
	c := Config{KafkaPort: freePort(t), S3Port: freePort(t)}
	k, err := startKafka(c)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if got := k.ListenAddrs(); len(got) != 1 || got[0] != c.KafkaBrokers() {
		t.Fatalf("kafka listens on %v, want %s", got, c.KafkaBrokers())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.KafkaBrokers()), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(`{"seq": 1}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if errs := fs.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != `{"seq": 1}` {
		t.Fatalf("fetched %v", recs)
	}
	td, err := kadm.NewClient(cl).ListTopics(ctx, "orders")
	if err != nil || len(td["orders"].Partitions) != kafkaPartitions {
		t.Fatalf("topic orders: %+v %v", td["orders"], err)
	}

	s, err := startS3(c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, method, c.S3URL()+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do(http.MethodPut, "/lake/x.json", `{}`); code != http.StatusNotFound || !strings.Contains(body, "NoSuchBucket") {
		t.Fatalf("a write to a missing bucket: %d %s", code, body)
	}
	if code, body := do(http.MethodPut, "/lake", ""); code != http.StatusOK {
		t.Fatalf("create bucket: %d %s", code, body)
	}
	if code, body := do(http.MethodPut, "/lake/x.json", `{"a": 1}`); code != http.StatusOK {
		t.Fatalf("put: %d %s", code, body)
	}
	if code, body := do(http.MethodGet, "/lake/x.json", ""); code != http.StatusOK || body != `{"a": 1}` {
		t.Fatalf("get: %d %s", code, body)
	}
}
