package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestConnectionQuotas: a task holds at most its quota of connections
// through its forwarder, and the tasks of one execution together at most
// theirs; a refused connection never reaches the destination and gets
// the quota's message in its client's protocol (PostgreSQL: a FATAL
// ErrorResponse with SQLSTATE 53300 after its SSLRequest; a server-first
// protocol: an "-ERR" line); a closed connection gives its place back;
// another execution is not counted.
func TestConnectionQuotas(t *testing.T) {
	var reached atomic.Int32
	dest, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dest.Close()
	go func() {
		for {
			c, err := dest.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	p := mustPolicy(t, "local", []string{dest.Addr().String()}, nil)
	conns := &Conns{ExecutionMax: 3}
	forwarder := func(q *TaskConns) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go Forward(l, dest.Addr().String(), p, nil, q)
		return l.Addr().String()
	}
	dial := func(addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	waitReached := func(n int32) {
		for deadline := time.Now().Add(5 * time.Second); reached.Load() < n && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if got := reached.Load(); got != n {
			t.Fatalf("the destination saw %d connections, want %d", got, n)
		}
	}
	a := forwarder(conns.Task("exec-1", 2))
	held := []net.Conn{dial(a), dial(a)}
	waitReached(2)
	// The third of task a: a PostgreSQL client is told why.
	pg := dial(a)
	ssl := make([]byte, 8)
	binary.BigEndian.PutUint32(ssl[:4], 8)
	binary.BigEndian.PutUint32(ssl[4:], 80877103)
	startup := []byte{0, 0, 0, 9, 0, 3, 0, 0, 0}
	_, _ = pg.Write(ssl)
	br := bufio.NewReader(pg)
	if b, err := br.ReadByte(); err != nil || b != 'N' {
		t.Fatalf("SSLRequest answer %q %v, want N", b, err)
	}
	_, _ = pg.Write(startup)
	msg, _ := io.ReadAll(br)
	if len(msg) < 5 || msg[0] != 'E' || !strings.Contains(string(msg), "53300") || !strings.Contains(string(msg), TaskConnectionsSetting+"=2") {
		t.Fatalf("PostgreSQL refusal %q", msg)
	}
	// Another task of the same execution: one more, then the
	// execution's quota (a server-first client gets an -ERR line).
	b := forwarder(conns.Task("exec-1", 10))
	held = append(held, dial(b))
	waitReached(3)
	line, _ := bufio.NewReader(dial(b)).ReadString('\n')
	if !strings.HasPrefix(line, "-ERR '") || !strings.Contains(line, ExecutionConnectionsSetting+"=3") {
		t.Fatalf("execution quota refusal %q", line)
	}
	// Another execution is not counted.
	c := forwarder(conns.Task("exec-2", 10))
	held = append(held, dial(c))
	waitReached(4)
	// A closed connection gives its place back.
	held[0].Close()
	time.Sleep(100 * time.Millisecond)
	held = append(held, dial(a))
	waitReached(5)
	if reached.Load() != 5 {
		t.Fatalf("refused connections reached the destination: %d", reached.Load())
	}
	_ = held
}

// TestProxyQuota: the proxy of a task's namespace counts its requests
// and tunnels against the task's quota and answers 429 beyond it.
func TestProxyQuota(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release; io.WriteString(w, "ok") }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	p := mustPolicy(t, "local", []string{u.Host}, nil)
	q := (&Conns{}).Task("exec", 1)
	px := httptest.NewServer(&Proxy{Policy: p, Conns: q})
	defer px.Close()
	defer close(release) // first: the slow request ends
	pu, _ := url.Parse(px.URL)
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	go func() { _, _ = hc.Get(srv.URL + "/slow") }()
	for deadline := time.Now().Add(5 * time.Second); q.Open() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}).Get(srv.URL + "/second")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), TaskConnectionsSetting) {
		t.Fatalf("second request: %d %s", resp.StatusCode, body)
	}
	var qe *QuotaError
	if _, err := q.Acquire(); !errors.As(err, &qe) || !errors.Is(err, ErrQuota) || qe.Scope != "task" {
		t.Fatalf("Acquire at the quota: %v", err)
	}
}
