package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
)

// Settings of the connection quotas, named in their refusals.
const (
	TaskConnectionsSetting      = "NOETL_RUNNER_TASK_CONNECTIONS"
	ExecutionConnectionsSetting = "NOETL_RUNNER_EXECUTION_CONNECTIONS"
)

// ErrQuota is wrapped by every refusal of a connection quota
// (QuotaError). Code ResourceExhausted: retried, with backoff, once the
// connections held are released.
var ErrQuota = errs.Sentinel(errs.ResourceExhausted, "egress: connection quota reached")

// QuotaError is a connection refused by a quota: the task's own, or its
// execution's on this runner.
type QuotaError struct {
	// Scope is "task" or "execution".
	Scope string
	// Limit is the quota; Setting the setting that sets it.
	Limit   int
	Setting string
}

// Error implements error.
func (e *QuotaError) Error() string {
	return fmt.Sprintf("noetl: connection refused: the %s's connection quota is reached (%d open at once, %s=%d)", e.Scope, e.Limit, e.Setting, e.Limit)
}

// Unwrap returns ErrQuota.
func (e *QuotaError) Unwrap() error { return ErrQuota }

// Conns counts the connections the tasks of each execution hold open at
// once through one runner instance (their forwarders and proxy tunnels,
// docs "Security", quotas). Safe for concurrent use; the zero value has
// no execution bound.
type Conns struct {
	// ExecutionMax bounds the connections of one execution (0: none).
	ExecutionMax int

	mu     sync.Mutex
	byExec map[string]int
}

// Task returns the counter of one task of execution, bounded at taskMax
// connections of its own (0: none) and its execution's bound.
func (c *Conns) Task(execution string, taskMax int) *TaskConns {
	return &TaskConns{c: c, exec: execution, max: taskMax}
}

// TaskConns counts one task's open connections (Conns.Task). A nil
// *TaskConns admits every connection.
type TaskConns struct {
	c    *Conns
	exec string
	max  int

	mu sync.Mutex
	n  int
}

// Acquire admits one more connection of the task, or returns a
// *QuotaError naming the quota it would exceed; release (idempotent)
// gives it back when the connection ends.
func (t *TaskConns) Acquire() (release func(), err error) {
	if t == nil {
		return func() {}, nil
	}
	t.mu.Lock()
	if t.max > 0 && t.n >= t.max {
		t.mu.Unlock()
		return nil, &QuotaError{Scope: "task", Limit: t.max, Setting: TaskConnectionsSetting}
	}
	if c := t.c; c != nil {
		c.mu.Lock()
		if c.ExecutionMax > 0 && c.byExec[t.exec] >= c.ExecutionMax {
			c.mu.Unlock()
			t.mu.Unlock()
			return nil, &QuotaError{Scope: "execution", Limit: c.ExecutionMax, Setting: ExecutionConnectionsSetting}
		}
		if c.byExec == nil {
			c.byExec = map[string]int{}
		}
		c.byExec[t.exec]++
		c.mu.Unlock()
	}
	t.n++
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			t.n--
			t.mu.Unlock()
			if c := t.c; c != nil {
				c.mu.Lock()
				if c.byExec[t.exec]--; c.byExec[t.exec] <= 0 {
					delete(c.byExec, t.exec)
				}
				c.mu.Unlock()
			}
		})
	}, nil
}

// Open returns how many connections the task holds.
func (t *TaskConns) Open() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

type connsKey struct{}

// WithConns returns ctx carrying a task's connection counter (the
// runner's, per attempt); the sandbox's forwarders and proxy of that
// task count against it.
func WithConns(ctx context.Context, t *TaskConns) context.Context {
	return context.WithValue(ctx, connsKey{}, t)
}

// ConnsFrom returns the counter ctx carries, or nil (no quota).
func ConnsFrom(ctx context.Context) *TaskConns {
	t, _ := ctx.Value(connsKey{}).(*TaskConns)
	return t
}

// refuseQuota answers a connection the quota refused in the words its
// client understands, then closes it: a PostgreSQL client (its
// SSLRequest, GSSENCRequest or StartupMessage) gets a FATAL
// ErrorResponse with SQLSTATE 53300 (too_many_connections) and the
// quota's message, so psql and psycopg print it; an HTTP client a 429
// answer; a client that waits for the server to speak first (NATS,
// SMTP, ...) a NATS-style "-ERR '<message>'" line. Nothing reaches the
// destination.
func refuseQuota(c net.Conn, qerr error) {
	defer c.Close()
	msg := qerr.Error()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	head, err := br.Peek(8)
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if err != nil || len(head) < 8 {
		_, _ = fmt.Fprintf(c, "-ERR '%s'\r\n", strings.ReplaceAll(msg, "'", ""))
		return
	}
	n, code := binary.BigEndian.Uint32(head[:4]), binary.BigEndian.Uint32(head[4:8])
	for n == 8 && (code == 80877103 || code == 80877104) { // SSLRequest, GSSENCRequest: no
		_, _ = br.Discard(8)
		if _, err := c.Write([]byte{'N'}); err != nil {
			return
		}
		if head, err = br.Peek(8); err != nil {
			return
		}
		n, code = binary.BigEndian.Uint32(head[:4]), binary.BigEndian.Uint32(head[4:8])
	}
	if code>>16 == 3 && n >= 8 && n < 10000 { // StartupMessage, protocol 3.x
		_, _ = c.Write(pgError("53300", msg))
		return
	}
	if strings.HasPrefix(string(head), "GET ") || strings.HasPrefix(string(head), "POST ") || strings.HasPrefix(string(head), "CONNECT ") ||
		strings.HasPrefix(string(head), "PUT ") || strings.HasPrefix(string(head), "HEAD ") || strings.HasPrefix(string(head), "DELETE ") {
		_, _ = fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(msg)+1, msg+"\n")
		return
	}
	_, _ = fmt.Fprintf(c, "-ERR '%s'\r\n", strings.ReplaceAll(msg, "'", ""))
}

// pgError is a PostgreSQL ErrorResponse message (severity FATAL).
func pgError(sqlstate, msg string) []byte {
	var body []byte
	for _, f := range []struct {
		t byte
		v string
	}{{'S', "FATAL"}, {'V', "FATAL"}, {'C', sqlstate}, {'M', msg}} {
		body = append(body, f.t)
		body = append(body, f.v...)
		body = append(body, 0)
	}
	body = append(body, 0)
	out := []byte{'E', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(len(body)+4))
	return append(out, body...)
}
