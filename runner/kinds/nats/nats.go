// Package nats implements the `nats` task kind: JetStream key-value
// operations and message publishing on a NATS server (github.com/nats-io/
// nats.go), with NoETL's operation names and result shapes
// (NoETL's test_nats_kv.yaml fixture).
//
// Connections are cached per server and identity and reused across tasks
// (a NATS connection is long-lived and safe for concurrent use); Close
// drains them.
package nats

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/tools/creds"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// Defaults.
const (
	// DefaultTimeout bounds one operation when the attempt timeout is 0.
	DefaultTimeout = 30 * time.Second
	// DefaultConnectTimeout bounds establishing a connection.
	DefaultConnectTimeout = 5 * time.Second
	// MaxConns bounds the connection cache; the least recently used
	// connection is drained beyond it.
	MaxConns = 16
)

// Options configures the tool.
type Options struct {
	// Credentials resolves `auth` names (nats credentials).
	Credentials credentials.Store
	// DefaultURL is the server used when a task names neither auth nor
	// url (e.g. the stack's NATS_URL); empty means such a task fails.
	DefaultURL string
	// DefaultTimeout replaces DefaultTimeout when > 0.
	DefaultTimeout time.Duration
	// Name is the client name the server sees (default noetl-gcpengine).
	Name string
	// Egress is the network policy of connections (the runner's); nil:
	// none (tests).
	Egress *egress.Policy
}

// Tool is the nats task kind. It is safe for concurrent use.
type Tool struct {
	opts Options

	mu     sync.Mutex
	conns  map[string]*entry
	closed bool
}

type entry struct {
	nc       *natsgo.Conn
	lastUsed time.Time
}

// New returns a nats tool configured by opts.
func New(opts Options) *Tool {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.Name == "" {
		opts.Name = "noetl-gcpengine"
	}
	return &Tool{opts: opts, conns: map[string]*entry{}}
}

// Close drains the cached connections. Tasks after Close fail with kind
// "internal".
func (t *Tool) Close() {
	t.mu.Lock()
	conns := t.conns
	t.conns = map[string]*entry{}
	t.closed = true
	t.mu.Unlock()
	for _, e := range conns {
		_ = e.nc.Drain()
	}
}

// server is a resolved connection.
type server struct {
	url, user, password, token string
}

func (s server) key() string {
	h := sha256.Sum256([]byte(s.user + "\x00" + s.password + "\x00" + s.token))
	return s.url + "\x00" + hex.EncodeToString(h[:8])
}

// Exec runs one operation (tools.Adapt turns Exec into a tools.Tool).
// The configuration is decoded into toolspec.NATS (its aliases: action,
// credential, nats_url/servers, nats_user/username, nats_password,
// nats_token, payload). Keys read:
//
//	operation   kv_put | kv_get | kv_delete | kv_purge | kv_keys | publish |
//	            js_publish (also action; put/get/delete/keys/purge are
//	            accepted for the kv_ forms)
//	auth        a nats credential (name or mapping {nats_url | url,
//	            nats_user | user, nats_password | password, token})
//	url, user, password, token
//	            the connection without a credential (default
//	            Options.DefaultURL)
//	bucket      KV bucket (kv_*); created when missing by kv_put
//	key         KV key (kv_put, kv_get, kv_delete, kv_purge)
//	value       kv_put value: text stored as is, anything else as JSON
//	ttl         seconds: the max age of a bucket kv_put creates
//	history     values kept per key in a bucket kv_put creates (default 1)
//	pattern     kv_keys filter (glob: * and ?)
//	subject     publish / js_publish subject
//	data        publish payload (also value or payload): text as is, else JSON
//	headers     publish headers (mapping)
//
// Results (NoETL's): kv_put {"status": "success", "bucket", "key",
// "revision"}; kv_get {"status": "success" | "not_found", "bucket", "key",
// "value" (JSON decoded when the stored bytes are JSON, else text; null
// when not found), "revision"}; kv_delete / kv_purge {"status": "success",
// "bucket", "key"}; kv_keys {"status", "bucket", "keys" (sorted), "count"};
// publish {"status", "subject"}; js_publish {"status", "subject", "stream",
// "seq", "duplicate"}. Errors: bad configuration is kind "config"; an
// authorization violation kind "auth"; no server, a lost connection or a
// JetStream failure kind "nats" (retryable); the deadline kind "timeout".
func (t *Tool) Exec(ctx context.Context, _, config map[string]any, timeoutS float64) types.Outcome {
	var cfg toolspec.NATS
	if err := toolspec.Decode(config, &cfg); err != nil {
		return conf.ConfigError("%v", err)
	}
	op := strings.ToLower(strings.TrimSpace(cfg.Operation))
	switch op {
	case "put", "get", "delete", "purge", "keys":
		op = "kv_" + op
	case "":
		return conf.ConfigError("nats task: `operation` is required (kv_put, kv_get, kv_delete, kv_purge, kv_keys, publish, js_publish)")
	}
	srv, o := t.server(ctx, cfg)
	if o != nil {
		return *o
	}
	timeout := t.opts.DefaultTimeout
	if timeoutS > 0 {
		timeout = time.Duration(timeoutS * float64(time.Second))
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res map[string]any
	var err error
	switch op {
	case "kv_put", "kv_get", "kv_delete", "kv_purge", "kv_keys":
		res, err = t.kv(rctx, srv, op, cfg)
	case "publish", "js_publish":
		res, err = t.publish(rctx, srv, op == "js_publish", cfg)
	default:
		return conf.ConfigError("nats task: operation %q is not supported (kv_put, kv_get, kv_delete, kv_purge, kv_keys, publish, js_publish)", op)
	}
	if err != nil {
		return failure(ctx, rctx, srv, err)
	}
	return types.Outcome{Status: types.StatusOK, Result: res}
}

// server resolves the connection of a task.
func (t *Tool) server(ctx context.Context, cfg toolspec.NATS) (server, *types.Outcome) {
	var s server
	if cfg.Auth != nil {
		fields, err := creds.Resolve(ctx, t.opts.Credentials, cfg.Auth, "nats task", credentials.KindNATS)
		if err != nil {
			o := creds.Outcome(err)
			return s, &o
		}
		s.url = creds.String(fields, "nats_url", "url", "servers")
		s.user = creds.String(fields, "nats_user", "user", "username")
		s.password = creds.String(fields, "nats_password", "password")
		s.token = creds.String(fields, "token", "nats_token")
	} else {
		s.url = strings.TrimSpace(cfg.URL)
		s.user = strings.TrimSpace(cfg.User)
		s.password = cfg.Password
		s.token = strings.TrimSpace(cfg.Token)
	}
	if s.url == "" {
		s.url = t.opts.DefaultURL
	}
	if s.url == "" {
		o := conf.ConfigError("nats task: no server: set auth (a nats credential) or url")
		return s, &o
	}
	return s, nil
}

// conn returns the cached connection to s (connecting once).
func (t *Tool) conn(ctx context.Context, s server) (*natsgo.Conn, error) {
	k := s.key()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errClosed
	}
	if e, ok := t.conns[k]; ok && !e.nc.IsClosed() {
		e.lastUsed = time.Now()
		t.mu.Unlock()
		return e.nc, nil
	}
	t.mu.Unlock()
	timeout := DefaultConnectTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), 10*time.Millisecond)
	}
	opts := []natsgo.Option{natsgo.Name(t.opts.Name), natsgo.Timeout(timeout), natsgo.MaxReconnects(-1)}
	if t.opts.Egress != nil {
		opts = append(opts, natsgo.SetCustomDialer(t.opts.Egress))
	}
	switch {
	case s.token != "":
		opts = append(opts, natsgo.Token(s.token))
	case s.user != "":
		opts = append(opts, natsgo.UserInfo(s.user, s.password))
	}
	nc, err := natsgo.Connect(s.url, opts...)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		nc.Close()
		return nil, errClosed
	}
	if e, ok := t.conns[k]; ok && !e.nc.IsClosed() {
		nc.Close() // another task connected first
		return e.nc, nil
	}
	t.conns[k] = &entry{nc: nc, lastUsed: time.Now()}
	for len(t.conns) > MaxConns {
		var victim string
		var oldest time.Time
		for kk, e := range t.conns {
			if kk != k && (victim == "" || e.lastUsed.Before(oldest)) {
				victim, oldest = kk, e.lastUsed
			}
		}
		go func(c *natsgo.Conn) { _ = c.Drain() }(t.conns[victim].nc)
		delete(t.conns, victim)
	}
	return nc, nil
}

var errClosed = errors.New("nats tool is closed")

// configError marks a task configuration problem found while running.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func cfgErr(format string, a ...any) error { return &configError{fmt.Sprintf(format, a...)} }

func (t *Tool) kv(ctx context.Context, s server, op string, cfg toolspec.NATS) (map[string]any, error) {
	bucket := strings.TrimSpace(cfg.Bucket)
	if bucket == "" {
		return nil, cfgErr("%s needs `bucket`", op)
	}
	key := strings.TrimSpace(cfg.Key)
	if key == "" && op != "kv_keys" {
		return nil, cfgErr("%s needs `key`", op)
	}
	var ttl time.Duration
	if v := cfg.TTL; v != nil {
		d, isNum := conf.Seconds(v)
		if !isNum || d < 0 {
			return nil, cfgErr("ttl must be a number of seconds, got %v", v)
		}
		ttl = d
	}
	history := uint8(1)
	if v := cfg.History; v != nil {
		d, isNum := conf.Seconds(v)
		n := d.Seconds()
		if !isNum || n < 1 || n > 64 || n != float64(int(n)) {
			return nil, cfgErr("history must be an integer from 1 to 64, got %v", v)
		}
		history = uint8(n)
	}
	var payload []byte
	if op == "kv_put" {
		if !cfg.Value.Set {
			return nil, cfgErr("kv_put needs `value`")
		}
		b, err := encode(cfg.Value.Value)
		if err != nil {
			return nil, cfgErr("value cannot be encoded: %v", err)
		}
		payload = b
	}
	nc, err := t.conn(ctx, s)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		switch op {
		case "kv_put":
			kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, TTL: ttl, History: history})
		case "kv_get":
			return map[string]any{"status": "not_found", "bucket": bucket, "key": key, "value": nil}, nil
		case "kv_keys":
			return map[string]any{"status": "success", "bucket": bucket, "keys": []any{}, "count": int64(0)}, nil
		default:
			return map[string]any{"status": "success", "bucket": bucket, "key": key}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	switch op {
	case "kv_put":
		rev, err := kv.Put(ctx, key, payload)
		if err != nil {
			return nil, err
		}
		return map[string]any{"status": "success", "bucket": bucket, "key": key, "revision": int64(rev)}, nil
	case "kv_get":
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return map[string]any{"status": "not_found", "bucket": bucket, "key": key, "value": nil}, nil
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"status": "success", "bucket": bucket, "key": key, "value": decode(e.Value()), "revision": int64(e.Revision())}, nil
	case "kv_delete":
		if err := kv.Delete(ctx, key); err != nil {
			return nil, err
		}
		return map[string]any{"status": "success", "bucket": bucket, "key": key}, nil
	case "kv_purge":
		if err := kv.Purge(ctx, key); err != nil {
			return nil, err
		}
		return map[string]any{"status": "success", "bucket": bucket, "key": key}, nil
	default: // kv_keys
		lister, err := kv.ListKeys(ctx)
		if err != nil {
			return nil, err
		}
		pattern := cfg.Pattern
		var keys []string
		for k := range lister.Keys() {
			if pattern == "" {
				keys = append(keys, k)
			} else if m, _ := path.Match(pattern, k); m {
				keys = append(keys, k)
			}
		}
		// The lister stops its watcher itself once every key was sent; a
		// channel closed by the deadline is an incomplete list.
		if err := ctx.Err(); err != nil {
			_ = lister.Stop()
			return nil, err
		}
		sort.Strings(keys)
		list := make([]any, len(keys))
		for i, k := range keys {
			list[i] = k
		}
		return map[string]any{"status": "success", "bucket": bucket, "keys": list, "count": int64(len(list))}, nil
	}
}

func (t *Tool) publish(ctx context.Context, s server, viaJS bool, cfg toolspec.NATS) (map[string]any, error) {
	subject := strings.TrimSpace(cfg.Subject)
	if subject == "" || strings.ContainsAny(subject, " \t\r\n") {
		return nil, cfgErr("publish needs a `subject` without spaces")
	}
	v := cfg.Data
	if v == nil {
		v = cfg.Value.Value
	}
	payload, err := encode(v)
	if err != nil {
		return nil, cfgErr("data cannot be encoded: %v", err)
	}
	msg := natsgo.NewMsg(subject)
	msg.Data = payload
	for k, v := range cfg.Headers {
		msg.Header.Set(k, conf.Stringify(v))
	}
	nc, err := t.conn(ctx, s)
	if err != nil {
		return nil, err
	}
	if !viaJS {
		if err := nc.PublishMsg(msg); err != nil {
			return nil, err
		}
		// Flush so that a publish the server rejects (permissions) fails
		// this task instead of vanishing.
		if err := nc.FlushWithContext(ctx); err != nil {
			return nil, err
		}
		if err := nc.LastError(); err != nil {
			return nil, err
		}
		return map[string]any{"status": "success", "subject": subject}, nil
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		return nil, err
	}
	return map[string]any{"status": "success", "subject": subject, "stream": ack.Stream, "seq": int64(ack.Sequence), "duplicate": ack.Duplicate}, nil
}

// encode stores text as is and other values as JSON (nil as empty).
func encode(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(x), nil
	case []byte:
		return x, nil
	}
	return json.Marshal(v)
}

// decode returns JSON-decoded bytes, else the text.
func decode(b []byte) any {
	if v, err := jsonx.Decode(b); err == nil {
		return v
	}
	return string(b)
}

// failure classifies an error.
func failure(parent, rctx context.Context, s server, err error) types.Outcome {
	msg := err.Error()
	if s.password != "" {
		msg = strings.ReplaceAll(msg, s.password, "********")
	}
	if s.token != "" {
		msg = strings.ReplaceAll(msg, s.token, "********")
	}
	var ce *configError
	switch {
	case errors.As(err, &ce):
		return conf.ConfigError("nats task: %s", msg)
	case errors.Is(err, errClosed):
		return conf.Fail(types.ErrKindInternal, true, "nats task: %s", msg)
	case egress.IsRefused(err) || strings.Contains(msg, "refused by the network policy"):
		return conf.Fail(types.ErrKindForbiddenAddress, false, "nats task: %s", msg)
	case errors.Is(parent.Err(), context.Canceled):
		return conf.Fail(types.ErrKindCanceled, true, "nats task canceled: %s", msg)
	case rctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, natsgo.ErrTimeout):
		return conf.Fail(types.ErrKindTimeout, true, "nats task timeout: %s", msg)
	case errors.Is(err, natsgo.ErrAuthorization) || errors.Is(err, natsgo.ErrAuthExpired) || errors.Is(err, natsgo.ErrPermissionViolation) ||
		strings.Contains(strings.ToLower(msg), "authorization violation"):
		return conf.Fail(types.ErrKindAuth, false, "nats task: %s (server %s)", msg, redactURL(s.url))
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return conf.Fail(types.ErrKindNATS, false, "nats task: %s: the server at %s has no JetStream (start nats-server with -js)", msg, redactURL(s.url))
	case errors.Is(err, jetstream.ErrInvalidKey) || errors.Is(err, jetstream.ErrInvalidBucketName):
		return conf.ConfigError("nats task: %s", msg)
	case errors.Is(err, natsgo.ErrNoServers):
		return conf.Fail(types.ErrKindNATS, true, "nats task: cannot reach %s: %s", redactURL(s.url), msg)
	case overLimits(err, msg):
		return conf.Fail(types.ErrKindLimit, false, "nats task: %s: the server's limits for this account are reached (%s)", msg, LimitsSettings)
	}
	return conf.Fail(types.ErrKindNATS, true, "nats task: %s", msg)
}

// LimitsSettings names where a NATS account's limits are set, in the
// message of a task the server refused for them: the server's own
// configuration, and on the local stack its settings (docs "Local
// stack").
const LimitsSettings = "the NATS server's account limits; on the local stack NOETL_NATS_TASK_STORE_MB, NOETL_NATS_TASK_MEMORY_MB and NOETL_NATS_TASK_CONNECTIONS"

// overLimits reports whether the server refused err's operation for its
// account's limits: JetStream's resource errors (account resources,
// storage, memory, insufficient resources, stream and consumer counts)
// or too many connections.
func overLimits(err error, msg string) bool {
	var ae *jetstream.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode {
		case 10002, 10023, 10026, 10027, 10028, 10047:
			return true
		}
	}
	m := strings.ToLower(msg)
	return errors.Is(err, natsgo.ErrMaxConnectionsExceeded) || strings.Contains(m, "maximum account active connections exceeded") ||
		strings.Contains(m, "resource limits exceeded") || strings.Contains(m, "insufficient resources") || strings.Contains(m, "maximum connections exceeded")
}

// redactURL drops userinfo passwords from server URLs.
func redactURL(u string) string {
	parts := strings.Split(u, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			if scheme := strings.Index(p, "://"); scheme >= 0 && scheme < at {
				parts[i] = p[:scheme+3] + "***@" + p[at+1:]
			}
		}
	}
	return strings.Join(parts, ",")
}
