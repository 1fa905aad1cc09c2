package grant_test

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/shared/oidc"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/grant"
	"github.com/noetl/gcpengine/shared/results/resultstest"
)

const accessID = "results-signer@proj.iam.gserviceaccount.com"

var (
	keysOnce   sync.Once
	key, other *rsa.PrivateKey
)

func keys(t *testing.T) (*rsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if key, err = oidc.GenerateKey(); err != nil {
			panic(err)
		}
		if other, err = oidc.GenerateKey(); err != nil {
			panic(err)
		}
	})
	return key, other
}

// stack is a Gateway over memory buckets "b" and "b2" and a Signer for it.
type stack struct {
	srv     *httptest.Server
	gw      *grant.Gateway
	buckets map[string]results.Backend
	signer  *grant.Signer
	skew    atomic.Int64 // added to the Gateway's clock
}

func newStack(t *testing.T, backends ...results.Backend) *stack {
	t.Helper()
	k, _ := keys(t)
	s := &stack{buckets: map[string]results.Backend{"b": results.NewMemoryBucket("b"), "b2": results.NewMemoryBucket("b2")}}
	if len(backends) > 0 {
		s.buckets["b"] = backends[0]
	}
	s.gw = &grant.Gateway{
		Keys:    map[string]*rsa.PublicKey{accessID: &k.PublicKey},
		Backend: func(b string) (results.Backend, bool) { be, ok := s.buckets[b]; return be, ok },
		Now:     func() time.Time { return time.Now().Add(time.Duration(s.skew.Load())) },
		Log:     slog.New(slog.DiscardHandler),
	}
	s.srv = httptest.NewServer(s.gw)
	t.Cleanup(s.srv.Close)
	s.signer = &grant.Signer{GoogleAccessID: accessID, SignBytes: grant.KeySignBytes(k), Hostname: s.srv.Listener.Addr().String(), Insecure: true}
	return s
}

// onDemand is a results.Backend that signs a GET and a PUT grant for every
// key it is asked, so resultstest.ObjectSuite's arbitrary keys run through
// grant.NewBackend and the Gateway.
type onDemand struct {
	s *stack
	t *testing.T
}

func (o onDemand) backend(ctx context.Context, key string, a *results.ObjectAttrs) results.Backend {
	gs := []grant.Grant{}
	r, err := o.s.signer.Read(context.Background(), "b", key, time.Hour)
	if err != nil {
		o.t.Errorf("sign read %s: %v", key, err)
	}
	gs = append(gs, r)
	if a != nil {
		w, err := o.s.signer.Write(context.Background(), "b", key, *a, 1<<30, time.Hour)
		if err != nil {
			o.t.Errorf("sign write %s: %v", key, err)
		}
		gs = append(gs, w)
	}
	return grant.NewBackend(gs, o.s.srv.Client())
}

func (o onDemand) Put(ctx context.Context, key string, data []byte, ct string) error {
	return o.backend(ctx, key, &results.ObjectAttrs{ContentType: ct}).Put(ctx, key, data, ct)
}
func (o onDemand) Get(ctx context.Context, key string) ([]byte, error) {
	return o.backend(ctx, key, nil).Get(ctx, key)
}
func (o onDemand) Exists(ctx context.Context, key string) (bool, error) {
	return o.backend(ctx, key, nil).Exists(ctx, key)
}
func (o onDemand) NewWriter(ctx context.Context, key string, a results.ObjectAttrs) results.ObjectWriter {
	return o.backend(ctx, key, &a).NewWriter(ctx, key, a)
}
func (o onDemand) Open(ctx context.Context, key string, generation int64) (results.Object, error) {
	return o.backend(ctx, key, nil).Open(ctx, key, generation)
}
func (o onDemand) List(ctx context.Context, prefix string, fn func(results.ObjectInfo) error) error {
	return errors.New("onDemand: no List over signed URLs")
}
func (o onDemand) Delete(ctx context.Context, key string) error {
	return errors.New("onDemand: no Delete over signed URLs")
}

// TestObjectSuite runs the per-object conformance suite through signed
// URLs: grant.NewBackend → Gateway → results.NewMemory.
func TestObjectSuite(t *testing.T) {
	s := newStack(t)
	resultstest.ObjectSuite(t, onDemand{s: s, t: t})
}

// hostile keys: '/', '=', '@', '%', spaces, '+', '?', '#', unicode.
var hostileKeys = []string{
	"a",
	"noetl/env=dev/execution=e%2F1/results/step.a/0/1.feather",
	"owner@example.com/x=1@2",
	"with space/and  two spaces ",
	"plus+sign/semi;colon,comma",
	"q?x=1#frag/&amp",
	"ünïcødé/日本語/😀.json",
	"trailing/",
}

// TestLibrarySignedURLsVerify: URLs signed by cloud.google.com/go/storage
// (storage.SignedURL with a PEM key, and the Signer) verify at the Gateway
// for GET and PUT, with headers, for keys of every shape; the object lands
// at exactly the key.
func TestLibrarySignedURLsVerify(t *testing.T) {
	s := newStack(t)
	k, _ := keys(t)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	hc := s.srv.Client()
	for i, key := range hostileKeys {
		// PUT signed directly by the library, with content type and metadata.
		put, err := storage.SignedURL("b", key, &storage.SignedURLOptions{
			GoogleAccessID: accessID, PrivateKey: pemKey, Method: "PUT", Expires: time.Now().Add(time.Minute),
			Scheme: storage.SigningSchemeV4, Style: storage.PathStyle(), Hostname: s.srv.Listener.Addr().String(), Insecure: true,
			ContentType: "application/json", Headers: []string{"x-goog-meta-noetl-expires:2030-01-01T00:00:00Z", grant.ContentLengthRangeHeader + ":0,1024"},
		})
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"i":%d}`, i)
		req, _ := http.NewRequest("PUT", put, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(grant.ContentLengthRangeHeader, "0,1024")
		req.Header.Set("X-Goog-Meta-Noetl-Expires", "2030-01-01T00:00:00Z")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("PUT %q: %d %s", key, resp.StatusCode, msg)
		}
		got, err := s.buckets["b"].Get(context.Background(), key)
		if err != nil || string(got) != body {
			t.Fatalf("backend Get(%q) = %q, %v", key, got, err)
		}
		// GET through the Signer (the library's SignedURL too).
		g, err := s.signer.Read(context.Background(), "b", key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		resp, err = hc.Get(g.URL)
		if err != nil {
			t.Fatal(err)
		}
		got, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(got) != body || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Goog-Meta-Noetl-Expires") != "2030-01-01T00:00:00Z" {
			t.Fatalf("GET %q: %d %q %v", key, resp.StatusCode, got, resp.Header)
		}
		// The Signer's PUT grant, used by grant.NewBackend.
		w, err := s.signer.Write(context.Background(), "b", key, results.ObjectAttrs{ContentType: "text/plain", Metadata: map[string]string{"a": "1", "noetl-expires": "2031-01-01T00:00:00Z"}}, 1<<30, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		b := grant.NewBackend([]grant.Grant{g, w}, hc)
		if err := b.Put(context.Background(), key, []byte("v2"), "text/plain"); err != nil {
			t.Fatalf("Put %q: %v", key, err)
		}
		o, err := b.Open(context.Background(), key, 0)
		if err != nil {
			t.Fatal(err)
		}
		if a := o.Attrs(); o.Size() != 2 || a.ContentType != "text/plain" || a.Metadata["a"] != "1" || a.Metadata["noetl-expires"] != "2031-01-01T00:00:00Z" || len(a.Metadata) != 2 {
			t.Fatalf("Open %q: size %d attrs %+v", key, o.Size(), a)
		}
	}
}

// do sends method to rawURL with headers and returns status, XML code.
func do(t *testing.T, hc *http.Client, method, rawURL string, h map[string]string, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if method == "PUT" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, rawURL, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	code := ""
	if i := bytes.Index(data, []byte("<Code>")); i >= 0 {
		code = string(data[i+6 : i+bytes.Index(data[i:], []byte("</Code>"))])
	}
	return resp.StatusCode, code
}

func withQuery(u string, f func(q url.Values)) string {
	pu, _ := url.Parse(u)
	q := pu.Query()
	f(q)
	pu.RawQuery = q.Encode()
	return pu.String()
}

func withPath(u, path string) string {
	pu, _ := url.Parse(u)
	pu.Path, pu.RawPath = path, ""
	return pu.String()
}

// TestGatewayRefusesTampering: every change to a signed request is refused
// with 403 (400 for malformed V4 parameters) and nothing is stored or
// served.
func TestGatewayRefusesTampering(t *testing.T) {
	s := newStack(t)
	_, otherKey := keys(t)
	ctx := context.Background()
	const key = "noetl/env=dev/execution=e1/results/a@b/1.feather"
	for _, b := range []string{"b", "b2"} {
		for _, k := range []string{key, "noetl/env=dev/execution=e1/results/a@b/2.feather"} {
			if err := s.buckets[b].Put(ctx, k, []byte("secret"), "application/octet-stream"); err != nil {
				t.Fatal(err)
			}
		}
	}
	attrs := results.ObjectAttrs{ContentType: "application/vnd.apache.arrow.file", Metadata: map[string]string{"noetl-expires": "2030-01-01T00:00:00Z"}}
	get, err := s.signer.Read(ctx, "b", key, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	put, err := s.signer.Write(ctx, "b", "out/own.feather", attrs, 1<<30, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	onceAttrs := attrs
	onceAttrs.IfAbsent = true
	once, err := s.signer.Write(ctx, "b", "out/once.feather", onceAttrs, 1<<30, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if once.Headers[grant.IfGenerationMatchHeader] != "0" {
		t.Fatalf("write-once grant headers %v: no %s: 0", once.Headers, grant.IfGenerationMatchHeader)
	}
	onceHdr := func(mod func(map[string]string)) map[string]string {
		h := map[string]string{}
		for k, v := range once.Headers {
			h[k] = v
		}
		if mod != nil {
			mod(h)
		}
		return h
	}
	hdr := func(mod func(map[string]string)) map[string]string {
		h := map[string]string{}
		for k, v := range put.Headers {
			h[k] = v
		}
		if mod != nil {
			mod(h)
		}
		return h
	}
	otherID := *s.signer
	otherID.GoogleAccessID = "intruder@proj.iam.gserviceaccount.com"
	otherSig := *s.signer
	otherSig.SignBytes = grant.KeySignBytes(otherKey)
	byOtherID, _ := otherID.Read(ctx, "b", key, time.Hour)
	byOtherKey, _ := otherSig.Read(ctx, "b", key, time.Hour)
	host := s.srv.Listener.Addr().String()
	port := host[strings.LastIndex(host, ":"):]

	// Sanity: the untampered grants work.
	if st, code := do(t, s.srv.Client(), "GET", get.URL, nil, ""); st != 200 {
		t.Fatalf("GET grant: %d %s", st, code)
	}
	if st, code := do(t, s.srv.Client(), "PUT", put.URL, hdr(nil), "mine"); st != 200 {
		t.Fatalf("PUT grant: %d %s", st, code)
	}
	if st, code := do(t, s.srv.Client(), "PUT", once.URL, onceHdr(nil), "first"); st != 200 {
		t.Fatalf("write-once PUT grant: %d %s", st, code)
	}
	if st, code := do(t, s.srv.Client(), "PUT", once.URL, onceHdr(nil), "second"); st != 412 || code != "PreconditionFailed" {
		t.Fatalf("write-once PUT grant used again: %d %s, want 412 PreconditionFailed", st, code)
	}

	cases := []struct {
		name, method, url string
		h                 map[string]string
		skew              time.Duration
		status            int
		code              string
	}{
		{"another key in the path", "GET", withPath(get.URL, "/b/noetl/env=dev/execution=e1/results/a@b/2.feather"), nil, 0, 403, "SignatureDoesNotMatch"},
		{"another bucket", "GET", withPath(get.URL, "/b2/"+key), nil, 0, 403, "SignatureDoesNotMatch"},
		{"GET grant used to PUT", "PUT", get.URL, nil, 0, 403, "SignatureDoesNotMatch"},
		{"PUT grant used to GET", "GET", put.URL, hdr(nil), 0, 403, "SignatureDoesNotMatch"},
		{"GET grant used for HEAD", "HEAD", get.URL, nil, 0, 403, ""},
		{"query parameter added", "GET", withQuery(get.URL, func(q url.Values) { q.Set("generation", "1") }), nil, 0, 403, "SignatureDoesNotMatch"},
		{"query parameter duplicated", "GET", withQuery(get.URL, func(q url.Values) { q.Add("X-Goog-Date", q.Get("X-Goog-Date")) }), nil, 0, 400, "AuthorizationQueryParametersError"},
		{"X-Goog-Expires lengthened", "GET", withQuery(get.URL, func(q url.Values) { q.Set("X-Goog-Expires", "604800") }), nil, 0, 403, "SignatureDoesNotMatch"},
		{"X-Goog-Expires beyond 7 days", "GET", withQuery(get.URL, func(q url.Values) { q.Set("X-Goog-Expires", "604801") }), nil, 0, 400, "AuthorizationQueryParametersError"},
		{"X-Goog-Date changed", "GET", withQuery(get.URL, func(q url.Values) {
			d, _ := time.Parse("20060102T150405Z", q.Get("X-Goog-Date"))
			q.Set("X-Goog-Date", d.Add(time.Second).Format("20060102T150405Z"))
		}), nil, 0, 403, "SignatureDoesNotMatch"},
		{"signed headers list changed", "PUT", withQuery(put.URL, func(q url.Values) { q.Set("X-Goog-SignedHeaders", "host") }), map[string]string{}, 0, 403, "SignatureDoesNotMatch"},
		{"signature missing", "GET", withQuery(get.URL, func(q url.Values) { q.Del("X-Goog-Signature") }), nil, 0, 400, "AuthorizationQueryParametersError"},
		{"signature altered", "GET", withQuery(get.URL, func(q url.Values) {
			sig := []byte(q.Get("X-Goog-Signature"))
			if sig[10] == '0' { // a hex digit that differs from the one there
				sig[10] = '1'
			} else {
				sig[10] = '0'
			}
			q.Set("X-Goog-Signature", string(sig))
		}), nil, 0, 403, "SignatureDoesNotMatch"},
		{"content-type changed", "PUT", put.URL, hdr(func(h map[string]string) { h["content-type"] = "text/html" }), 0, 403, "SignatureDoesNotMatch"},
		{"metadata changed", "PUT", put.URL, hdr(func(h map[string]string) { h["x-goog-meta-noetl-expires"] = "2099-01-01T00:00:00Z" }), 0, 403, "SignatureDoesNotMatch"},
		{"signed header missing", "PUT", put.URL, hdr(func(h map[string]string) { delete(h, "x-goog-meta-noetl-expires") }), 0, 403, "SignatureDoesNotMatch"},
		{"unsigned metadata added", "PUT", put.URL, hdr(func(h map[string]string) { h["x-goog-meta-owner"] = "me" }), 0, 403, "AccessDenied"},
		{"unsigned content-type on GET", "GET", get.URL, map[string]string{"Content-Type": "text/html"}, 0, 403, "AccessDenied"},
		{"write-once precondition dropped", "PUT", once.URL, onceHdr(func(h map[string]string) { delete(h, grant.IfGenerationMatchHeader) }), 0, 403, "SignatureDoesNotMatch"},
		{"write-once precondition changed", "PUT", once.URL, onceHdr(func(h map[string]string) { h[grant.IfGenerationMatchHeader] = "7" }), 0, 403, "SignatureDoesNotMatch"},
		{"unsigned precondition added", "PUT", put.URL, hdr(func(h map[string]string) { h[grant.IfGenerationMatchHeader] = "0" }), 0, 403, "AccessDenied"},
		{"another host", "GET", strings.Replace(get.URL, "127.0.0.1"+port, "localhost"+port, 1), nil, 0, 403, "SignatureDoesNotMatch"},
		{"expired", "GET", get.URL, nil, time.Hour + time.Second, 403, "ExpiredToken"},
		{"X-Goog-Date in the future", "GET", get.URL, nil, -grant.MaxClockSkew - time.Minute, 403, "RequestNotValidYet"},
		{"unknown access id", "GET", byOtherID.URL, nil, 0, 403, "AccessDenied"},
		{"signed by another key", "GET", byOtherKey.URL, nil, 0, 403, "SignatureDoesNotMatch"},
		{"DELETE", "DELETE", get.URL, nil, 0, 405, "MethodNotAllowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.skew.Store(int64(c.skew))
			defer s.skew.Store(0)
			st, code := do(t, s.srv.Client(), c.method, c.url, c.h, "tampered")
			if st != c.status || code != c.code {
				t.Errorf("%s: %d %q, want %d %q", c.name, st, code, c.status, c.code)
			}
		})
	}
	// Nothing tampered was stored: the own key holds the sanity PUT, the others the originals.
	if got, _ := s.buckets["b"].Get(ctx, "out/own.feather"); string(got) != "mine" {
		t.Errorf("own key = %q, want the untampered PUT", got)
	}
	if got, _ := s.buckets["b"].Get(ctx, "out/once.feather"); string(got) != "first" {
		t.Errorf("write-once key = %q, want the first PUT", got)
	}
	for _, b := range []string{"b", "b2"} {
		if got, _ := s.buckets[b].Get(ctx, key); string(got) != "secret" {
			t.Errorf("%s/%s = %q", b, key, got)
		}
	}
}

// TestGatewayRanges: single ranges answer 206 with Content-Range, an
// unsatisfiable one 416, HEAD the headers.
func TestGatewayRanges(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	_ = s.buckets["b"].Put(ctx, "r", []byte("0123456789"), "text/plain")
	_ = s.buckets["b"].Put(ctx, "empty", nil, "text/plain")
	g, _ := s.signer.Read(ctx, "b", "r", time.Minute)
	ge, _ := s.signer.Read(ctx, "b", "empty", time.Minute)
	// HEAD, with a HEAD-signed URL: the headers, no body.
	k, _ := keys(t)
	head, err := storage.SignedURL("b", "r", &storage.SignedURLOptions{GoogleAccessID: accessID, SignBytes: grant.KeySignBytes(k), Method: "HEAD",
		Expires: time.Now().Add(time.Minute), Scheme: storage.SigningSchemeV4, Hostname: s.srv.Listener.Addr().String(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.srv.Client().Head(head)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != 10 || resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("HEAD: %d, length %d, %v", resp.StatusCode, resp.ContentLength, resp.Header)
	}
	for _, c := range []struct {
		url, rng string
		status   int
		body, cr string
	}{
		{g.URL, "", 200, "0123456789", ""},
		{g.URL, "bytes=2-4", 206, "234", "bytes 2-4/10"},
		{g.URL, "bytes=7-", 206, "789", "bytes 7-9/10"},
		{g.URL, "bytes=8-100", 206, "89", "bytes 8-9/10"},
		{g.URL, "bytes=-3", 206, "789", "bytes 7-9/10"},
		{g.URL, "bytes=10-", 416, "", "bytes */10"},
		{g.URL, "bytes=5-2", 200, "0123456789", ""},
		{ge.URL, "bytes=0-0", 416, "", "bytes */0"},
		{ge.URL, "", 200, "", ""},
	} {
		req, _ := http.NewRequest("GET", c.url, nil)
		if c.rng != "" {
			req.Header.Set("Range", c.rng)
		}
		resp, err := s.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("Content-Range") != c.cr || (c.status != 416 && string(body) != c.body) {
			t.Errorf("Range %q: %d %q %q, want %d %q %q", c.rng, resp.StatusCode, resp.Header.Get("Content-Range"), body, c.status, c.cr, c.body)
		}
	}
}

// counting is a results.Backend whose writers count what they receive and
// how far the producer (sent) was ahead at each Write: a Gateway that
// buffered the body would be a whole object ahead.
type counting struct {
	results.Backend
	sent                       *atomic.Int64
	mu                         sync.Mutex
	received, maxLag, maxWrite int64
	closed, aborted            int
	sum                        uint64
	ended                      chan struct{} // one send per Close or Abort (nil: none)
}

func (c *counting) NewWriter(ctx context.Context, key string, a results.ObjectAttrs) results.ObjectWriter {
	return &countWriter{c: c}
}

type countWriter struct{ c *counting }

func (w *countWriter) Write(p []byte) (int, error) {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxLag = max(c.maxLag, c.sent.Load()-c.received) // ahead of what had arrived before p
	c.received += int64(len(p))
	c.maxWrite = max(c.maxWrite, int64(len(p)))
	for _, b := range p {
		c.sum = c.sum*31 + uint64(b)
	}
	return len(p), nil
}
func (w *countWriter) Close() error {
	w.c.mu.Lock()
	w.c.closed++
	w.c.mu.Unlock()
	w.c.end()
	return nil
}
func (w *countWriter) Abort()            { w.c.mu.Lock(); w.c.aborted++; w.c.mu.Unlock(); w.c.end() }
func (w *countWriter) Generation() int64 { return 0 }

func (c *counting) end() {
	if c.ended != nil {
		c.ended <- struct{}{}
	}
}

// TestLargePutStreams: a 64 MiB object written through NewBackend's
// streamed PUT reaches the backend while it is being produced: the
// producer is never more than a few buffers ahead of what the backend
// received (a buffering client or Gateway would be 64 MiB ahead).
func TestLargePutStreams(t *testing.T) {
	var sent atomic.Int64
	cb := &counting{Backend: results.NewMemory(), sent: &sent}
	s := newStack(t, cb)
	ctx := context.Background()
	w, err := s.signer.Write(ctx, "b", "big.feather", results.ObjectAttrs{ContentType: results.ContentTypeFeather}, 1<<30, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ow := grant.NewBackend([]grant.Grant{w}, s.srv.Client()).NewWriter(ctx, "big.feather", results.ObjectAttrs{ContentType: results.ContentTypeFeather})
	const total, chunk = 64 << 20, 1 << 20
	buf := make([]byte, chunk)
	var want uint64
	for off := 0; off < total; off += chunk {
		for i := range buf {
			buf[i] = byte((off + i) * 13 >> 3)
			want = want*31 + uint64(buf[i])
		}
		sent.Add(chunk)
		if _, err := ow.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := ow.Close(); err != nil {
		t.Fatal(err)
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.received != total || cb.sum != want || cb.closed != 1 || cb.aborted != 0 {
		t.Fatalf("backend received %d bytes (sum ok %v), closed %d aborted %d", cb.received, cb.sum == want, cb.closed, cb.aborted)
	}
	if cb.maxLag > 16<<20 {
		t.Fatalf("the producer was %d bytes ahead of the backend: the body was buffered", cb.maxLag)
	}
	if cb.maxWrite > 1<<20 {
		t.Fatalf("the backend received a %d-byte write: the body was buffered", cb.maxWrite)
	}
	t.Logf("max lag %d bytes, max backend write %d bytes", cb.maxLag, cb.maxWrite)
}

// TestWriteAbortAndCancel: Abort and a cancelled ctx cut the PUT: the
// Gateway aborts the backend writer and nothing is stored.
func TestWriteAbortAndCancel(t *testing.T) {
	var sent atomic.Int64
	cb := &counting{Backend: results.NewMemory(), sent: &sent, ended: make(chan struct{}, 4)}
	s := newStack(t, cb)
	ctx := context.Background()
	w, _ := s.signer.Write(ctx, "b", "k", results.ObjectAttrs{ContentType: "application/json"}, 1<<30, time.Minute)
	b := grant.NewBackend([]grant.Grant{w}, s.srv.Client())
	wait := func(what string) {
		// The Gateway ends the backend writer once it sees the cut body
		// (Abort and Close waited for the client side only).
		<-cb.ended
		cb.mu.Lock()
		defer cb.mu.Unlock()
		if cb.closed != 0 || cb.aborted != 1 {
			t.Fatalf("%s: backend closed %d aborted %d, want 0, 1", what, cb.closed, cb.aborted)
		}
		cb.aborted = 0
	}
	ow := b.NewWriter(ctx, "k", results.ObjectAttrs{ContentType: "application/json"})
	if _, err := ow.Write(bytes.Repeat([]byte("x"), 300<<10)); err != nil {
		t.Fatal(err)
	}
	ow.Abort()
	wait("Abort")

	cctx, cancel := context.WithCancel(ctx)
	ow = b.NewWriter(cctx, "k", results.ObjectAttrs{ContentType: "application/json"})
	if _, err := ow.Write(bytes.Repeat([]byte("x"), 300<<10)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := ow.Close(); err == nil {
		t.Fatal("Close after cancel: err = nil")
	}
	wait("cancelled ctx")
}

// TestBackendRefusesUngranted: the real NewBackend refuses every key and
// method it holds no grant for with results.ErrForbidden naming the key,
// and attributes other than the signed ones.
func TestBackendRefusesUngranted(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	_ = s.buckets["b"].Put(ctx, "in/r", []byte("r"), "text/plain")
	_ = s.buckets["b"].Put(ctx, "other", []byte("o"), "text/plain")
	r, _ := s.signer.Read(ctx, "b", "in/r", time.Minute)
	w, _ := s.signer.Write(ctx, "b", "out/w", results.ObjectAttrs{ContentType: "application/json", Metadata: map[string]string{"noetl-expires": "2030-01-01T00:00:00Z"}}, 1<<30, time.Minute)
	b := grant.NewBackend([]grant.Grant{r, w}, s.srv.Client())
	if bn, ok := b.(results.BucketNamer); !ok || bn.Bucket() != "b" {
		t.Fatalf("one bucket: BucketNamer %v", ok)
	}
	forbidden := func(what, key string, err error) {
		t.Helper()
		if !errors.Is(err, results.ErrForbidden) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err = %v, want ErrForbidden naming %q", what, err, key)
		}
	}
	_, err := b.Get(ctx, "other")
	forbidden("Get ungranted", "other", err)
	_, err = b.Exists(ctx, "other")
	forbidden("Exists ungranted", "other", err)
	_, err = b.Open(ctx, "other", 0)
	forbidden("Open ungranted", "other", err)
	_, err = b.Get(ctx, "out/w")
	forbidden("Get of the PUT-only key", "out/w", err)
	forbidden("Put of the GET-only key", "in/r", b.Put(ctx, "in/r", []byte("x"), "text/plain"))
	ow := b.NewWriter(ctx, "in/r", results.ObjectAttrs{ContentType: "text/plain"})
	_, err = ow.Write([]byte("x"))
	forbidden("NewWriter of the GET-only key: Write", "in/r", err)
	forbidden("NewWriter of the GET-only key: Close", "in/r", ow.Close())
	forbidden("Put with another content type", "out/w", b.Put(ctx, "out/w", []byte("x"), "text/html"))
	ow = b.NewWriter(ctx, "out/w", results.ObjectAttrs{ContentType: "application/json"}) // metadata missing
	forbidden("NewWriter with other attributes", "out/w", ow.Close())
	forbidden("List", "out/", b.List(ctx, "out/", func(results.ObjectInfo) error { return nil }))
	forbidden("Delete", "in/r", b.Delete(ctx, "in/r"))
	if got, _ := s.buckets["b"].Get(ctx, "in/r"); string(got) != "r" {
		t.Fatalf("in/r = %q", got)
	}
	// The granted ones work.
	if got, err := b.Get(ctx, "in/r"); err != nil || string(got) != "r" {
		t.Fatalf("Get granted = %q, %v", got, err)
	}
	ow = b.NewWriter(ctx, "out/w", results.ObjectAttrs{ContentType: "application/json", Metadata: map[string]string{"noetl-expires": "2030-01-01T00:00:00Z"}})
	_, _ = ow.Write([]byte(`{}`))
	if err := ow.Close(); err != nil {
		t.Fatal(err)
	}
	// A refused streamed PUT (the grant expired): the server's early 403 ends
	// the writes, and the error wraps ErrForbidden.
	s.skew.Store(int64(2 * time.Minute))
	ow = b.NewWriter(ctx, "out/w", results.ObjectAttrs{ContentType: "application/json", Metadata: map[string]string{"noetl-expires": "2030-01-01T00:00:00Z"}})
	var werr error
	for i := 0; i < 64 && werr == nil; i++ {
		_, werr = ow.Write(make([]byte, 1<<20))
	}
	if cerr := ow.Close(); !errors.Is(cerr, results.ErrForbidden) || werr != nil && !errors.Is(werr, results.ErrForbidden) {
		t.Errorf("expired streamed PUT: Write %v, Close %v", werr, cerr)
	}
	s.skew.Store(0)
	if got, _ := s.buckets["b"].Get(ctx, "out/w"); string(got) != `{}` {
		t.Errorf("out/w = %q after a refused PUT", got)
	}
	// Two buckets: not a BucketNamer.
	r2, _ := s.signer.Read(ctx, "b2", "x", time.Minute)
	if _, ok := grant.NewBackend([]grant.Grant{r, r2}, nil).(results.BucketNamer); ok {
		t.Error("two buckets: BucketNamer")
	}
	// An expired grant: the server's 403 wraps ErrForbidden; a missing object ErrNotFound.
	s.skew.Store(int64(2 * time.Minute))
	_, err = b.Get(ctx, "in/r")
	if !errors.Is(err, results.ErrForbidden) || !strings.Contains(err.Error(), "ExpiredToken") {
		t.Errorf("expired: %v", err)
	}
	s.skew.Store(0)
	m, _ := s.signer.Read(ctx, "b", "missing", time.Minute)
	mb := grant.NewBackend([]grant.Grant{m}, s.srv.Client())
	if _, err := mb.Get(ctx, "missing"); !errors.Is(err, results.ErrNotFound) {
		t.Errorf("missing Get: %v", err)
	}
	if ok, err := mb.Exists(ctx, "missing"); ok || err != nil {
		t.Errorf("missing Exists = %v, %v", ok, err)
	}
}

// fakeGCS answers signed-URL requests without checking them, as scripted,
// for responses the Gateway does not give (200 for a 0-byte object, a
// generation that changes, a 503 with an XML error).
func fakeGCS(t *testing.T, h http.HandlerFunc) []grant.Grant {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return []grant.Grant{{Bucket: "b", Key: "k", Method: "GET", URL: srv.URL + "/b/k?X-Goog-Signature=00"}, {Bucket: "b", Key: "k", Method: "PUT", URL: srv.URL + "/b/k?X-Goog-Signature=00"}}
}

func TestBackendStatuses(t *testing.T) {
	ctx := context.Background()
	// A 0-byte object answering 200 with no body to bytes=0-0.
	b := grant.NewBackend(fakeGCS(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "0")
	}), nil)
	o, err := b.Open(ctx, "k", 0)
	if err != nil || o.Size() != 0 || o.Attrs().ContentType != "application/json" {
		t.Fatalf("0-byte 200: %v", err)
	}
	// A 0-byte object through the Gateway (416 to bytes=0-0): size 0 and its attributes.
	s := newStack(t)
	_ = s.buckets["b"].Put(ctx, "empty", nil, "text/csv")
	ge, _ := s.signer.Read(ctx, "b", "empty", time.Minute)
	o, err = grant.NewBackend([]grant.Grant{ge}, s.srv.Client()).Open(ctx, "empty", 0)
	if err != nil || o.Size() != 0 || o.Attrs().ContentType != "text/csv" {
		t.Fatalf("0-byte 416: %v", err)
	}
	if r, err := o.NewReader(ctx, 0, -1); err != nil {
		t.Fatal(err)
	} else if data, err := io.ReadAll(r); err != nil || len(data) != 0 {
		t.Fatalf("0-byte read: %q, %v", data, err)
	}
	// A generation that changes between Open and a read: ErrNotFound.
	var gen atomic.Int64
	b = grant.NewBackend(fakeGCS(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Goog-Generation", fmt.Sprint(gen.Add(1)))
		w.Header().Set("Content-Range", "bytes 0-0/10")
		w.WriteHeader(206)
		_, _ = w.Write([]byte("0"))
	}), nil)
	o, err = b.Open(ctx, "k", 0)
	if err != nil || o.Size() != 10 {
		t.Fatalf("Open: %v", err)
	}
	if _, err := o.ReadAt(make([]byte, 1), 0); !errors.Is(err, results.ErrNotFound) || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("replaced object: %v", err)
	}
	// Another status: the status and the XML code and message.
	b = grant.NewBackend(fakeGCS(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(503)
		_, _ = io.WriteString(w, "<?xml version='1.0' encoding='UTF-8'?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>")
	}), nil)
	err = b.Put(ctx, "k", nil, "")
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "SlowDown") || !strings.Contains(err.Error(), "reduce your request rate") || errors.Is(err, results.ErrForbidden) {
		t.Errorf("503: %v", err)
	}
	ow := b.NewWriter(ctx, "k", results.ObjectAttrs{})
	_, _ = ow.Write([]byte("x"))
	if err := ow.Close(); err == nil || !strings.Contains(err.Error(), "SlowDown") {
		t.Errorf("503 on a streamed write: %v", err)
	}
}

// TestSigner: ttl bounds, Expires, JSON shape, key files (PKCS#1, and
// PKCS#8 as shared/oidc writes it), attribute rules.
func TestSigner(t *testing.T) {
	k, _ := keys(t)
	ctx := context.Background()
	dir := t.TempDir()
	o, err := oidc.NewSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := o.PrivateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	p1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	for name, data := range map[string][]byte{"pkcs8.pem": p8, "pkcs1.pem": p1, "junk.pem": []byte("not a key")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := grant.NewKeySigner(filepath.Join(dir, "junk.pem"), accessID, "", false); err == nil {
		t.Error("junk key: err = nil")
	}
	s := newStack(t)
	for _, f := range []string{"pkcs8.pem", "pkcs1.pem"} {
		sg, err := grant.NewKeySigner(filepath.Join(dir, f), accessID, s.srv.Listener.Addr().String(), true)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		g, err := sg.Read(ctx, "b", "nothing", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if st, code := do(t, s.srv.Client(), "GET", g.URL, nil, ""); st != 404 || code != "NoSuchKey" {
			t.Errorf("%s: GET = %d %s, want 404 NoSuchKey (signature accepted)", f, st, code)
		}
	}
	sg, _ := grant.NewKeySigner(filepath.Join(dir, "pkcs1.pem"), accessID, "", false)
	for _, ttl := range []time.Duration{0, -time.Second, grant.MaxTTL + time.Second} {
		if _, err := sg.Read(ctx, "b", "k", ttl); err == nil {
			t.Errorf("ttl %v: err = nil", ttl)
		}
	}
	g, err := sg.Read(ctx, "b", "k", grant.MaxTTL)
	if err != nil {
		t.Fatalf("ttl MaxTTL: %v", err)
	}
	if !strings.HasPrefix(g.URL, "https://storage.googleapis.com/b/k?") || g.Method != "GET" || g.Headers != nil {
		t.Errorf("grant %+v", g)
	}
	if d := time.Until(g.Expires); d > grant.MaxTTL || d < grant.MaxTTL-time.Minute {
		t.Errorf("Expires in %v, want about %v", d, grant.MaxTTL)
	}
	w, err := sg.Write(ctx, "b", "k", results.ObjectAttrs{ContentType: "application/json", Metadata: map[string]string{"noetl-expires": "x"}}, 1<<30, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(w)
	var back grant.Grant
	if err := json.Unmarshal(js, &back); err != nil || back.URL != w.URL || back.Headers["x-goog-meta-noetl-expires"] != "x" || back.Headers["content-type"] != "application/json" || !back.Expires.Equal(w.Expires) {
		t.Errorf("JSON round trip %s: %+v %v", js, back, err)
	}
	for _, a := range []results.ObjectAttrs{
		{Metadata: map[string]string{"Upper": "x"}},
		{Metadata: map[string]string{"a b": "x"}},
		{Metadata: map[string]string{"k": "two  spaces"}},
		{Metadata: map[string]string{"k": "line\nbreak"}},
		{Metadata: map[string]string{"k": "ünï"}},
		{ContentType: "text/plain\r\nx-evil: 1"},
	} {
		if _, err := sg.Write(ctx, "b", "k", a, 1<<30, time.Minute); err == nil {
			t.Errorf("attrs %+v: err = nil", a)
		}
	}
	for _, bk := range [][2]string{{"", "k"}, {"b/c", "k"}, {"b", ""}, {"b", "a\nb"}, {"b", strings.Repeat("x", 1025)}} {
		if _, err := sg.Read(ctx, bk[0], bk[1], time.Minute); err == nil {
			t.Errorf("bucket %q key %q: err = nil", bk[0], bk[1])
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := sg.Read(cctx, "b", "k", time.Minute); err == nil {
		t.Error("cancelled ctx: err = nil")
	}
	if _, err := (&grant.Signer{GoogleAccessID: accessID}).Read(ctx, "b", "k", time.Minute); err == nil {
		t.Error("no SignBytes nor Client: err = nil")
	}
}

// TestGatewayPreconditions: a PUT signed by the library with
// x-goog-if-generation-match "0" creates the object once (then 412
// PreconditionFailed, the object unchanged); any other generation is not
// served (501 NotImplemented), and nothing is stored.
func TestGatewayPreconditions(t *testing.T) {
	s := newStack(t)
	k, _ := keys(t)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	sign := func(key, gen string) string {
		u, err := storage.SignedURL("b", key, &storage.SignedURLOptions{
			GoogleAccessID: accessID, PrivateKey: pemKey, Method: "PUT", Expires: time.Now().Add(time.Minute),
			Scheme: storage.SigningSchemeV4, Style: storage.PathStyle(), Hostname: s.srv.Listener.Addr().String(), Insecure: true,
			Headers: []string{grant.IfGenerationMatchHeader + ":" + gen, grant.ContentLengthRangeHeader + ":0,1024"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	once := sign("pre/once", "0")
	h := map[string]string{grant.IfGenerationMatchHeader: "0", grant.ContentLengthRangeHeader: "0,1024"}
	if st, code := do(t, s.srv.Client(), "PUT", once, h, "first"); st != 200 {
		t.Fatalf("first create-only PUT: %d %s", st, code)
	}
	if st, code := do(t, s.srv.Client(), "PUT", once, h, "second"); st != 412 || code != "PreconditionFailed" {
		t.Fatalf("second create-only PUT: %d %s, want 412 PreconditionFailed", st, code)
	}
	if got, _ := s.buckets["b"].Get(context.Background(), "pre/once"); string(got) != "first" {
		t.Fatalf("after the refused PUT: %q", got)
	}
	other := sign("pre/gen7", "7")
	if st, code := do(t, s.srv.Client(), "PUT", other, map[string]string{grant.IfGenerationMatchHeader: "7", grant.ContentLengthRangeHeader: "0,1024"}, "x"); st != 501 || code != "NotImplemented" {
		t.Fatalf("generation 7: %d %s, want 501 NotImplemented", st, code)
	}
	if ok, _ := s.buckets["b"].Exists(context.Background(), "pre/gen7"); ok {
		t.Fatal("a refused PUT stored its object")
	}
}

// TestWriteQuota: a PUT grant signs its size bound
// (x-goog-content-length-range "0,<max>"): the Gateway refuses a larger
// body, announced (Content-Length) or streamed (chunked), with 400
// EntityTooLarge and stores nothing; the range cannot be dropped or
// widened (the signature breaks), nor left out of a PUT grant; the
// runner's backend stops a larger write itself with an error wrapping
// results.ErrQuota that names NOETL_RESULT_MAX_OBJECT_MB, and reports the
// server's refusal the same way.
func TestWriteQuota(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	hc := s.srv.Client()
	g, err := s.signer.Write(ctx, "b", "q/obj", results.ObjectAttrs{ContentType: "application/json"}, 100, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if g.MaxBytes != 100 || g.Headers[grant.ContentLengthRangeHeader] != "0,100" {
		t.Fatalf("grant %+v", g)
	}
	if _, err := s.signer.Write(ctx, "b", "q/none", results.ObjectAttrs{ContentType: "application/json"}, 0, time.Minute); err == nil {
		t.Fatal("a write grant without a size bound was signed")
	}
	hdr := func(mod func(map[string]string)) map[string]string {
		h := map[string]string{}
		for k, v := range g.Headers {
			h[k] = v
		}
		if mod != nil {
			mod(h)
		}
		return h
	}
	stored := func() bool { ok, _ := s.buckets["b"].Exists(ctx, "q/obj"); return ok }
	if st, code := do(t, hc, "PUT", g.URL, hdr(nil), strings.Repeat("x", 101)); st != 400 || code != "EntityTooLarge" || stored() {
		t.Fatalf("101 bytes with Content-Length: %d %s, stored %v", st, code, stored())
	}
	// Chunked: the size is known only while reading.
	req, _ := http.NewRequest("PUT", g.URL, io.MultiReader(strings.NewReader(strings.Repeat("x", 60)), strings.NewReader(strings.Repeat("y", 60))))
	for k, v := range hdr(nil) {
		req.Header.Set(k, v)
	}
	req.ContentLength = -1
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "EntityTooLarge") || stored() {
		t.Fatalf("120 bytes chunked: %d %s, stored %v", resp.StatusCode, body, stored())
	}
	for name, c := range map[string]struct {
		h          map[string]string
		st         int
		code, body string
	}{
		"range widened": {hdr(func(h map[string]string) { h[grant.ContentLengthRangeHeader] = "0,1000000" }), 403, "SignatureDoesNotMatch", "x"},
		"range dropped": {hdr(func(h map[string]string) { delete(h, grant.ContentLengthRangeHeader) }), 403, "SignatureDoesNotMatch", "x"},
	} {
		if st, code := do(t, hc, "PUT", g.URL, c.h, strings.Repeat("x", 500)); st != c.st || code != c.code || stored() {
			t.Errorf("%s: %d %s, want %d %s (stored %v)", name, st, code, c.st, c.code, stored())
		}
	}
	k, _ := keys(t)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	unbounded, err := storage.SignedURL("b", "q/obj", &storage.SignedURLOptions{GoogleAccessID: accessID, PrivateKey: pemKey, Method: "PUT",
		Expires: time.Now().Add(time.Minute), Scheme: storage.SigningSchemeV4, Style: storage.PathStyle(), Hostname: s.srv.Listener.Addr().String(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if st, code := do(t, hc, "PUT", unbounded, nil, "x"); st != 403 || code != "AccessDenied" || stored() {
		t.Fatalf("a PUT signed without a size range: %d %s", st, code)
	}
	if st, code := do(t, hc, "PUT", g.URL, hdr(nil), strings.Repeat("x", 100)); st != 200 || !stored() {
		t.Fatalf("100 bytes: %d %s", st, code)
	}
	// The runner's backend.
	b := grant.NewBackend([]grant.Grant{g}, hc)
	w := b.NewWriter(ctx, "q/obj", results.ObjectAttrs{ContentType: "application/json"})
	_, werr := w.Write([]byte(strings.Repeat("z", 80)))
	if werr == nil {
		_, werr = w.Write([]byte(strings.Repeat("z", 80)))
	}
	cerr := w.Close()
	if !errors.Is(werr, results.ErrQuota) || !errors.Is(cerr, results.ErrQuota) || !strings.Contains(werr.Error(), results.QuotaSetting) {
		t.Fatalf("writer over the quota: write %v, close %v", werr, cerr)
	}
	if err := b.Put(ctx, "q/obj", []byte(strings.Repeat("z", 101)), "application/json"); !errors.Is(err, results.ErrQuota) {
		t.Fatalf("Put over the quota: %v", err)
	}
	if got, _ := s.buckets["b"].Get(ctx, "q/obj"); string(got) != strings.Repeat("x", 100) {
		t.Fatalf("the object changed: %q", got)
	}
	// A backend that does not know the bound (MaxBytes cleared) is
	// refused by the server, and says so the same way.
	blind := g
	blind.MaxBytes = 0
	if err := grant.NewBackend([]grant.Grant{blind}, hc).Put(ctx, "q/obj", []byte(strings.Repeat("z", 101)), "application/json"); !errors.Is(err, results.ErrQuota) {
		t.Fatalf("the server's refusal: %v", err)
	}
}
