// Package http implements the `http` task kind (NoETL DSL spec "Tasks" and "Outcome
// envelope"): one HTTP request per attempt, with the decoded body under
// result.data and the status under result.status_code and outcome.http.
//
// The tool never retries: a 408/429/5xx answer or a network failure is
// reported as a retryable error and the task policy decides (NoETL canonical v10 retry spec §3.1).
package http

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	nethttp "net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/propagation"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// Defaults used when Options leaves a field zero.
const (
	// DefaultTimeout bounds one request (connect + headers + body) when
	// neither config["timeout"] nor the attempt timeout is set.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxBodyBytes is the largest response body read (32 MiB); a
	// larger body fails the attempt with a non-retryable "http" error.
	DefaultMaxBodyBytes int64 = 32 << 20
	// DefaultUserAgent is sent when the task sets no User-Agent header.
	DefaultUserAgent = "noetl-gcpengine"
)

// Options configures the tool. The zero value is usable.
type Options struct {
	// Client sends the requests; nil means SharedClient(). Per-request
	// connect timeouts (Config timeout.connect) only apply with the shared
	// client; with a custom client only the overall deadline applies.
	Client *nethttp.Client
	// MaxBodyBytes caps the response body read; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// DefaultTimeout replaces DefaultTimeout when non-zero.
	DefaultTimeout time.Duration
	// UserAgent replaces DefaultUserAgent when non-empty.
	UserAgent string
	// Credentials resolves an `auth` that names a credential (auth.go).
	Credentials credentials.Store
	// Egress is the network policy every request (and redirect) passes
	// (shared/egress); nil means LinkLocalOnly, the policy of a tool that
	// runs outside the engine's planes (tests, single-process tools).
	Egress *egress.Policy
	// AllowLinkLocal adds link-local addresses (169.254.0.0/16,
	// fe80::/10: the cloud metadata server) to the policy's allowed
	// destinations (NOETL_HTTP_ALLOW_LINK_LOCAL, set by shared/wiring
	// and the runner; NOETL_EGRESS_ALLOW is the general knob).
	AllowLinkLocal bool
}

// ErrForbiddenAddress is wrapped by the error of a request to a
// destination the egress policy refuses; the task fails with error kind
// "forbidden_address" (not retryable).
var ErrForbiddenAddress = egress.ErrForbidden

// LinkLocalOnly is the policy of an http tool built without one: it
// refuses what the tool always refused — the metadata server, link-local,
// unspecified and multicast addresses and their IPv6 forms — and allows
// loopback and private addresses.
func LinkLocalOnly() *egress.Policy {
	p, _ := egress.New("local", []string{"127.0.0.0/8", "::1"}, nil)
	return p
}

// Tool is the http task kind. It is safe for concurrent use.
type Tool struct {
	creds      credentials.Store
	client     *nethttp.Client
	maxBody    int64
	defTimeout time.Duration
	userAgent  string
	policy     *egress.Policy
}

// New returns an http tool configured by opts.
func New(opts Options) *Tool {
	p := opts.Egress
	if p == nil {
		p = LinkLocalOnly()
	}
	if opts.AllowLinkLocal {
		cp := *p
		for _, r := range []string{"169.254.0.0/16", "fe80::/10"} {
			rule, _ := egress.ParseRule(r)
			cp.Allow = append(append([]egress.Rule(nil), cp.Allow...), rule)
		}
		p = &cp
	}
	t := &Tool{creds: opts.Credentials, client: opts.Client, maxBody: opts.MaxBodyBytes, defTimeout: opts.DefaultTimeout, userAgent: opts.UserAgent, policy: p}
	if t.client == nil {
		t.client = clientOf(p)
	}
	if t.maxBody <= 0 {
		t.maxBody = DefaultMaxBodyBytes
	}
	if t.defTimeout <= 0 {
		t.defTimeout = DefaultTimeout
	}
	if t.userAgent == "" {
		t.userAgent = DefaultUserAgent
	}
	return t
}

type connectTimeoutKey struct{}

// clients caches one client per policy (connections are reused across
// tools sharing a policy).
var clients sync.Map // *egress.Policy → *nethttp.Client

// clientOf returns the client of policy p: keep-alive on, up to 64 idle
// connections per host, 90 s idle timeout, HTTP/2 when offered, never a
// proxy of the environment (the policy must see the real destination),
// no client-wide timeout (every request carries its own deadline), and
// every connection — redirects' included — dialled through p.
func clientOf(p *egress.Policy) *nethttp.Client {
	if c, ok := clients.Load(p); ok {
		return c.(*nethttp.Client)
	}
	tr := p.Transport()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 512, 64
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if d, ok := ctx.Value(connectTimeoutKey{}).(time.Duration); ok && d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		return p.DialContext(ctx, network, addr)
	}
	c, _ := clients.LoadOrStore(p, &nethttp.Client{Transport: tr})
	return c.(*nethttp.Client)
}

var defaultPolicy = sync.OnceValue(LinkLocalOnly)

// SharedClient returns the client of tools built without a policy or a
// client (clientOf of LinkLocalOnly).
func SharedClient() *nethttp.Client { return clientOf(defaultPolicy()) }

// Client returns the client the tool sends its requests with (its
// policy's): `script:` sources of the same plane load through it.
func (t *Tool) Client() *nethttp.Client { return t.client }

// Exec sends one request (tools.Adapt turns Exec into a tools.Tool; args
// are not used, config is the rendered task configuration, timeoutS the
// attempt timeout in seconds, 0 = none):
//
//	url      string, required (absolute http/https URL); `endpoint` is
//	         accepted as another spelling (NoETL v2 playbooks)
//	method   string, default GET
//	params   map of query parameters merged into the URL's query; values are
//	         stringified (ints as "2", bools as "true", lists repeat the key,
//	         maps as JSON, nil skipped)
//	headers  map of request headers (values stringified)
//	json | body | data
//	         request body, first present wins: a map/list/number/bool is sent
//	         as JSON with Content-Type application/json; a string is sent raw
//	         (for `json` with Content-Type application/json)
//	timeout  seconds (number) or {connect, read} seconds; also read from
//	         spec.timeout. Bounded by timeoutS; default 30 s.
//	auth     a credential name (http_bearer, http_basic or http_header,
//	         resolved through Options.Credentials) or a mapping with
//	         "headers"; its headers are sent unless the task sets the same
//	         header (auth.go)
//
// Any response yields result {"data": decoded JSON body (or the text, or
// base64 with "encoding": "base64" for binary bodies; nil when empty),
// "status_code": int, "headers": {lower-case name: value}, "url": final URL,
// "elapsed_ms": int64} and outcome.http {status, headers}. Status < 400 is
// "ok"; 4xx/5xx are "error" with error {kind, status, retryable} and the
// result still filled: kind rate_limit (429), auth (401, 403), not_found
// (404), client_error (other 4xx) or server_error (5xx), retryable for
// 408, 429 and 5xx (StatusKind, NoETL's taxonomy). Transport failures are
// error kind "connection" or "timeout" (retryable, no result, outcome.http
// nil); a cancelled ctx is kind "canceled"; a link-local or metadata
// destination is kind "forbidden_address" (not retryable) unless
// Options.AllowLinkLocal. Invalid configuration is kind
// "config". A W3C traceparent header is injected from ctx's span unless the
// task sets one.
func (t *Tool) Exec(ctx context.Context, _, config map[string]any, timeoutS float64) types.Outcome {
	var spec toolspec.HTTP
	if err := toolspec.Decode(config, &spec); err != nil {
		return conf.ConfigError("%v", err)
	}
	cfg, failed := t.applyAuth(ctx, spec) // auth: <credential> (auth.go)
	if failed != nil {
		return *failed
	}
	rawURL := cfg.URL
	if strings.TrimSpace(rawURL) == "" {
		return conf.ConfigError("http task: `url` is required")
	}
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return conf.ConfigError("http task: invalid url: %v", redactErr(err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return conf.ConfigError("http task: url %q must be an absolute http:// or https:// URL", redactURL(u, true))
	}
	if _, err := t.policy.CheckHost(u.Hostname(), portOf(u)); err != nil {
		return conf.Fail(types.ErrKindForbiddenAddress, false, "http task: %s: %v", redactURL(u, true), err)
	}
	method := "GET"
	if m := strings.TrimSpace(cfg.Method); m != "" {
		method = strings.ToUpper(m)
	}
	if p := cfg.Params; p != nil {
		if err := mergeParams(u, p); err != nil {
			return conf.ConfigError("http task: %v", err)
		}
	}
	body, contentType, err := buildBody(cfg)
	if err != nil {
		return conf.ConfigError("http task: %v", err)
	}
	total, connect, err := t.timeouts(cfg, timeoutS)
	if err != nil {
		return conf.ConfigError("http task: %v", err)
	}

	rctx, cancel := context.WithTimeout(ctx, total)
	defer cancel()
	if connect > 0 {
		rctx = context.WithValue(rctx, connectTimeoutKey{}, connect)
	}
	var bodyReader io.Reader
	if body != nil {
		bodyReader = bytes.NewReader(body)
	}
	hreq, err := nethttp.NewRequestWithContext(rctx, method, u.String(), bodyReader)
	if err != nil {
		return conf.ConfigError("http task: %v", redactErr(err))
	}
	if contentType != "" {
		hreq.Header.Set("Content-Type", contentType)
	}
	if hm := cfg.Headers; hm != nil {
		for k, v := range hm {
			if v == nil {
				continue
			}
			if strings.EqualFold(k, "host") {
				hreq.Host = conf.Stringify(v)
				continue
			}
			hreq.Header.Set(k, conf.Stringify(v))
		}
	}
	if hreq.Header.Get("User-Agent") == "" {
		hreq.Header.Set("User-Agent", t.userAgent)
	}
	if hreq.Header.Get("Traceparent") == "" {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(hreq.Header))
	}

	start := time.Now()
	resp, err := t.client.Do(hreq)
	if err != nil {
		return transportError(ctx, err, method, u)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, t.maxBody+1))
	elapsed := time.Since(start).Milliseconds()
	if err != nil {
		return transportError(ctx, err, method, u)
	}

	headers := make(map[string]string, len(resp.Header))
	resultHeaders := make(map[string]any, len(resp.Header))
	for k, vs := range resp.Header {
		v := strings.Join(vs, ", ")
		headers[strings.ToLower(k)] = v
		resultHeaders[strings.ToLower(k)] = v
	}
	finalURL := u
	if resp.Request != nil && resp.Request.URL != nil {
		finalURL = resp.Request.URL
	}
	result := map[string]any{
		"data":        nil,
		"status_code": resp.StatusCode,
		"headers":     resultHeaders,
		"url":         redactURL(finalURL, false),
		"elapsed_ms":  elapsed,
	}
	out := types.Outcome{
		Status: types.StatusOK,
		Result: result,
		HTTP:   &types.HTTPOutcome{Status: resp.StatusCode, Headers: headers},
	}
	if int64(len(raw)) > t.maxBody {
		out.Status = types.StatusError
		out.Error = &types.TaskError{
			Kind:    types.ErrKindHTTP,
			Message: fmt.Sprintf("response body of %s %s exceeds the %s limit (status %d)", method, redactURL(finalURL, true), humanBytes(t.maxBody), resp.StatusCode),
			Status:  resp.StatusCode,
		}
		return out
	}
	data, b64 := decodeBody(resp.Header.Get("Content-Type"), raw)
	result["data"] = data
	if b64 {
		result["encoding"] = "base64"
	}
	if resp.StatusCode >= 400 {
		code := resp.StatusCode
		msg := fmt.Sprintf("HTTP %d %s from %s %s", code, nethttp.StatusText(code), method, redactURL(finalURL, true))
		if s := snippet(raw); s != "" {
			msg += ": " + s
		}
		kind, retryable := StatusKind(code) // NoETL's taxonomy (kinds.go)
		out.Status = types.StatusError
		out.Error = &types.TaskError{Kind: kind, Message: msg, Retryable: retryable, Status: code}
	}
	return out
}

// timeouts returns the overall request deadline and the connect timeout (0 =
// dialer default).
func (t *Tool) timeouts(cfg toolspec.HTTP, attemptS float64) (total, connect time.Duration, err error) {
	v := cfg.Timeout
	if v == nil {
		v = cfg.TimeoutSeconds
	}
	if v != nil {
		var ok bool
		if m, isMap := conf.Map(v); isMap {
			var c, r, tot time.Duration
			if x, has := conf.Lookup(m, "connect"); has {
				if c, ok = conf.Seconds(x); !ok {
					return 0, 0, fmt.Errorf("timeout.connect must be a number of seconds, got %v", x)
				}
			}
			if x, has := conf.Lookup(m, "read"); has {
				if r, ok = conf.Seconds(x); !ok {
					return 0, 0, fmt.Errorf("timeout.read must be a number of seconds, got %v", x)
				}
			}
			if x, has := conf.Lookup(m, "total"); has {
				if tot, ok = conf.Seconds(x); !ok {
					return 0, 0, fmt.Errorf("timeout.total must be a number of seconds, got %v", x)
				}
			}
			connect = max(c, 0)
			switch {
			case tot > 0:
				total = tot
			case r > 0:
				total = connect + r
			}
		} else if d, isNum := conf.Seconds(v); isNum {
			total = d
		} else {
			return 0, 0, fmt.Errorf("timeout must be seconds or {connect, read}, got %v", v)
		}
	}
	if attemptS > 0 {
		a := time.Duration(attemptS * float64(time.Second))
		if total <= 0 || a < total {
			total = a
		}
	}
	if total <= 0 {
		total = t.defTimeout
	}
	return total, connect, nil
}

// mergeParams adds the params mapping (or query string) to u's query.
func mergeParams(u *url.URL, p any) error {
	q := u.Query()
	switch x := p.(type) {
	case string:
		extra, err := url.ParseQuery(strings.TrimPrefix(x, "?"))
		if err != nil {
			return fmt.Errorf("invalid `params` query string: %v", err)
		}
		for k, vs := range extra {
			for _, v := range vs {
				q.Add(k, v)
			}
		}
	default:
		m, ok := conf.Map(p)
		if !ok {
			return fmt.Errorf("`params` must be a mapping, got %T", p)
		}
		for k, v := range m {
			switch vv := v.(type) {
			case nil:
			case []any:
				for _, e := range vv {
					if e != nil {
						q.Add(k, conf.Stringify(e))
					}
				}
			case []string:
				for _, e := range vv {
					q.Add(k, e)
				}
			default:
				q.Add(k, conf.Stringify(v))
			}
		}
	}
	u.RawQuery = q.Encode()
	return nil
}

// buildBody returns the request body and its content type from json / body /
// data (first present wins).
func buildBody(cfg toolspec.HTTP) ([]byte, string, error) {
	for _, b := range []struct {
		key string
		v   any
	}{{"json", cfg.JSON}, {"body", cfg.Body}, {"data", cfg.Data}} {
		key, v := b.key, b.v
		if v == nil {
			continue
		}
		switch x := v.(type) {
		case string:
			if key == "json" {
				return []byte(x), "application/json", nil
			}
			return []byte(x), "", nil
		case []byte:
			if key == "json" {
				return x, "application/json", nil
			}
			return x, "", nil
		default:
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(x); err != nil {
				return nil, "", fmt.Errorf("`%s` cannot be encoded as JSON: %v", key, err)
			}
			return bytes.TrimRight(buf.Bytes(), "\n"), "application/json", nil
		}
	}
	return nil, "", nil
}

// decodeBody returns the JSON value of a JSON body, else the text, else (not
// UTF-8) the base64 encoding with b64 = true. An empty body is nil.
func decodeBody(contentType string, raw []byte) (v any, b64 bool) {
	if len(raw) == 0 {
		return nil, false
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	mt = strings.ToLower(mt)
	trimmed := bytes.TrimSpace(raw)
	if strings.Contains(mt, "json") || mt == "" || (len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')) {
		if d, err := jsonx.Decode(raw); err == nil {
			return d, false
		}
	}
	if utf8.Valid(raw) {
		return string(raw), false
	}
	return base64.StdEncoding.EncodeToString(raw), true
}

// portOf is the URL's port (the scheme's default when none is written).
func portOf(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// transportError classifies a failure that produced no (complete) response.
func transportError(parent context.Context, err error, method string, u *url.URL) types.Outcome {
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	var re *egress.RefusedError
	if errors.As(err, &re) {
		return conf.Fail(types.ErrKindForbiddenAddress, false, "%s %s: %v", method, redactURL(u, true), re)
	}
	kind := KindConnection
	var ne net.Error
	switch {
	case errors.Is(parent.Err(), context.Canceled):
		kind = types.ErrKindCanceled
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(parent.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		kind = types.ErrKindTimeout
	}
	return conf.Fail(kind, true, "%s %s: %v", method, redactURL(u, true), cause)
}

// redactURL drops the userinfo password (and, when noQuery, the query and
// fragment, which often carry API keys) for messages.
func redactURL(u *url.URL, noQuery bool) string {
	c := *u
	if c.User != nil {
		c.User = url.User(c.User.Username())
	}
	if noQuery {
		c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = "", false, "", ""
	}
	return c.String()
}

// redactErr strips URLs with credentials from url parse errors.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if pu, perr := url.Parse(ue.URL); perr == nil {
			return fmt.Errorf("%s %q: %v", ue.Op, redactURL(pu, true), ue.Err)
		}
		return fmt.Errorf("%s: %v", ue.Op, ue.Err)
	}
	return err
}

// snippet returns the first 200 characters of a body as one line.
func snippet(raw []byte) string {
	const n = 200
	s := strings.ToValidUTF8(string(raw[:min(len(raw), 4*n)]), "?")
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "..."
	}
	return s
}

func humanBytes(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
