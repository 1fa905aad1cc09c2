package grant

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/results"
)

// MaxClockSkew is how far in the future a request's X-Goog-Date may be
// (the signer's clock ahead of the Gateway's) before the Gateway refuses it.
const MaxClockSkew = time.Minute

// Gateway serves the Cloud Storage XML API subset that signed URLs use, for
// the local stack (whose fake-gcs-server does not verify signatures):
//   - GET, with a single-range Range header ("bytes=a-b", "bytes=a-",
//     "bytes=-n") answering 206 and Content-Range, 416 and
//     "Content-Range: bytes */<size>" for an unsatisfiable range (any
//     range of a 0-byte object), 200 and the whole object otherwise; the
//     object's content type and metadata (x-goog-meta-<k>) are response
//     headers. The body is streamed from Object.NewReader.
//   - HEAD: GET's headers without the body.
//   - PUT (Content-Length or chunked): the body is streamed into
//     Backend.NewWriter with the signed content type and metadata and
//     closed at EOF (200); a body cut short aborts the writer (nothing
//     stored). With x-goog-if-generation-match "0" the object is written
//     only where none is (results.ObjectAttrs IfAbsent): 412
//     PreconditionFailed otherwise, the object there unchanged; other
//     generation values answer 501 NotImplemented. The PUT's signed
//     headers must include ContentLengthRangeHeader (stricter than Cloud
//     Storage: every write is bounded); a body outside its range answers
//     400 EntityTooLarge (or EntityTooSmall), before the body is read when
//     Content-Length says so, and nothing is stored. Memory stays bounded
//     (one copy buffer per request).
//
// Every request must carry a valid V4 signature (X-Goog-Algorithm
// GOOG4-RSA-SHA256, X-Goog-Credential <access id>/<yyyymmdd>/auto/storage/goog4_request,
// X-Goog-Date, X-Goog-Expires ≤ 604800, X-Goog-SignedHeaders including
// host, X-Goog-Signature) by a key in Keys, computed over the canonical
// request as Cloud Storage does: method, the path re-encoded from its
// decoded form (so any escaping of one key verifies), the canonical query
// without X-Goog-Signature, the canonical signed headers (host without its
// port, as cloud.google.com/go/storage signs it), UNSIGNED-PAYLOAD.
// Otherwise it answers 403 with a Cloud Storage XML error (<Error><Code>
// AccessDenied, SignatureDoesNotMatch, ExpiredToken or
// RequestNotValidYet</Code><Message>…</Message></Error>); 400
// (AuthorizationQueryParametersError) for missing or malformed V4
// parameters. Stricter than Cloud Storage: a content-type, x-goog-meta-*
// or x-goog-if-generation-match header that is not signed is refused (403
// AccessDenied), so a grant holder stores no attribute, and picks no
// precondition, the control plane did not sign.
//
// The object is path style, /<bucket>/<object key>, the key decoded from
// its percent-encoding (it may contain '/', '=', '@', spaces, unicode).
// Mount the Gateway as the server's handler itself: http.ServeMux cleans
// paths and would redirect keys with "//" or "/./".
type Gateway struct {
	// Keys are the signers' public keys by GoogleAccessID.
	Keys map[string]*rsa.PublicKey
	// Backend returns the objects of bucket (false: no such bucket, 404
	// NoSuchBucket).
	Backend func(bucket string) (results.Backend, bool)
	// Now is the clock of expiry checks; nil is time.Now.
	Now func() time.Time
	// Log receives one line per refused or failed request (never the
	// signature); nil is slog.Default().
	Log *slog.Logger
}

// gcsError is a Cloud Storage XML API error.
type gcsError struct {
	status  int
	Code    string
	Message string
}

func (e *gcsError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.Code, e.Message) }

func refuse(code, format string, a ...any) *gcsError {
	return &gcsError{status: http.StatusForbidden, Code: code, Message: fmt.Sprintf(format, a...)}
}

func badRequest(format string, a ...any) *gcsError {
	return &gcsError{status: http.StatusBadRequest, Code: "AuthorizationQueryParametersError", Message: fmt.Sprintf(format, a...)}
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPut:
	default:
		g.fail(w, r, &gcsError{status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: r.Method + " is not served"})
		return
	}
	bucket, key, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/") || !ok || bucket == "" || key == "" {
		g.fail(w, r, &gcsError{status: http.StatusBadRequest, Code: "InvalidURI", Message: "want path /<bucket>/<object>"})
		return
	}
	if e := g.verify(r, bucket, key); e != nil {
		g.fail(w, r, e)
		return
	}
	if g.Backend == nil {
		g.fail(w, r, &gcsError{status: http.StatusNotFound, Code: "NoSuchBucket", Message: "no bucket " + bucket})
		return
	}
	b, ok := g.Backend(bucket)
	if !ok {
		g.fail(w, r, &gcsError{status: http.StatusNotFound, Code: "NoSuchBucket", Message: "no bucket " + bucket})
		return
	}
	if r.Method == http.MethodPut {
		g.put(w, r, b, key)
		return
	}
	g.get(w, r, b, key)
}

func (g *Gateway) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Gateway) log() *slog.Logger {
	if g.Log != nil {
		return g.Log
	}
	return slog.Default()
}

func (g *Gateway) fail(w http.ResponseWriter, r *http.Request, e *gcsError) {
	g.log().Info("results gateway: refused", "method", r.Method, "path", r.URL.Path, "status", e.status, "code", e.Code, "message", e.Message)
	writeError(w, r, e)
}

func writeError(w http.ResponseWriter, r *http.Request, e *gcsError) {
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	var sb strings.Builder
	sb.WriteString("<?xml version='1.0' encoding='UTF-8'?><Error><Code>")
	_ = xml.EscapeText(&sb, []byte(e.Code))
	sb.WriteString("</Code><Message>")
	_ = xml.EscapeText(&sb, []byte(e.Message))
	sb.WriteString("</Message></Error>")
	w.Header().Set("Content-Length", strconv.Itoa(sb.Len()))
	w.WriteHeader(e.status)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, sb.String())
	}
}

// verify checks r's V4 query signature for bucket/key (decoded).
func (g *Gateway) verify(r *http.Request, bucket, key string) *gcsError {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequest("malformed query: %v", err)
	}
	one := func(name string) (string, *gcsError) {
		v := q[name]
		if len(v) != 1 || v[0] == "" {
			return "", badRequest("want exactly one %s", name)
		}
		return v[0], nil
	}
	alg, e := one("X-Goog-Algorithm")
	if e != nil {
		return e
	}
	if alg != "GOOG4-RSA-SHA256" {
		return badRequest("X-Goog-Algorithm %q: want GOOG4-RSA-SHA256", alg)
	}
	cred, e := one("X-Goog-Credential")
	if e != nil {
		return e
	}
	date, e := one("X-Goog-Date")
	if e != nil {
		return e
	}
	expS, e := one("X-Goog-Expires")
	if e != nil {
		return e
	}
	signed, e := one("X-Goog-SignedHeaders")
	if e != nil {
		return e
	}
	sigHex, e := one("X-Goog-Signature")
	if e != nil {
		return e
	}
	parts := strings.Split(cred, "/")
	if len(parts) < 5 {
		return badRequest("X-Goog-Credential %q: want <access id>/<date>/<region>/storage/goog4_request", cred)
	}
	n := len(parts)
	accessID, scopeDate := strings.Join(parts[:n-4], "/"), parts[n-4]
	if parts[n-3] != "auto" || parts[n-2] != "storage" || parts[n-1] != "goog4_request" {
		return badRequest("X-Goog-Credential scope %q: want <date>/auto/storage/goog4_request", strings.Join(parts[n-4:], "/"))
	}
	t, err := time.Parse(iso8601, date)
	if err != nil {
		return badRequest("X-Goog-Date %q: want %s", date, iso8601)
	}
	if scopeDate != t.Format("20060102") {
		return badRequest("X-Goog-Credential date %s is not X-Goog-Date's day", scopeDate)
	}
	exp, err := strconv.Atoi(expS)
	if err != nil || exp < 1 || exp > int(MaxTTL/time.Second) {
		return badRequest("X-Goog-Expires %q: want 1..%d seconds", expS, int(MaxTTL/time.Second))
	}
	pub, ok := g.Keys[accessID]
	if !ok {
		return refuse("AccessDenied", "unknown access id %q", accessID)
	}
	now := g.now()
	if t.After(now.Add(MaxClockSkew)) {
		return refuse("RequestNotValidYet", "X-Goog-Date %s is in the future", date)
	}
	if !now.Before(t.Add(time.Duration(exp) * time.Second)) {
		return refuse("ExpiredToken", "the signed URL expired at %s", t.Add(time.Duration(exp)*time.Second).Format(time.RFC3339))
	}
	names := strings.Split(signed, ";")
	if !slices.IsSorted(names) || slices.Contains(names, "") || !slices.Contains(names, "host") {
		return badRequest("X-Goog-SignedHeaders %q: want sorted lower-case names including host", signed)
	}
	for _, n := range names {
		if n != strings.ToLower(n) {
			return badRequest("X-Goog-SignedHeaders %q: want lower-case names", signed)
		}
	}
	// Attribute headers must be signed (stricter than Cloud Storage).
	for h := range r.Header {
		lh := strings.ToLower(h)
		if (lh == "content-type" || lh == IfGenerationMatchHeader || lh == ContentLengthRangeHeader || strings.HasPrefix(lh, MetaHeaderPrefix)) && !slices.Contains(names, lh) {
			return refuse("AccessDenied", "header %s is not signed", lh)
		}
	}

	var creq strings.Builder
	creq.WriteString(r.Method)
	creq.WriteString("\n/")
	creq.WriteString(encodePath(bucket + "/" + key))
	creq.WriteString("\n")
	cq := url.Values{}
	for k, v := range q {
		if k != "X-Goog-Signature" {
			cq[k] = v
		}
	}
	creq.WriteString(strings.ReplaceAll(cq.Encode(), "+", "%20"))
	creq.WriteString("\n")
	for _, n := range names {
		var v string
		if n == "host" {
			v = hostname(r.Host)
		} else {
			vals := r.Header.Values(n)
			if len(vals) == 0 {
				return refuse("SignatureDoesNotMatch", "signed header %s is missing", n)
			}
			v = strings.Join(vals, ",")
		}
		creq.WriteString(canonicalHeader(n, v))
		creq.WriteString("\n")
	}
	creq.WriteString("\n")
	creq.WriteString(signed)
	creq.WriteString("\nUNSIGNED-PAYLOAD")
	digest := sha256.Sum256([]byte(creq.String()))
	sts := "GOOG4-RSA-SHA256\n" + date + "\n" + scopeDate + "/auto/storage/goog4_request\n" + hex.EncodeToString(digest[:])
	sig, err := hex.DecodeString(sigHex)
	if err != nil {
		return refuse("SignatureDoesNotMatch", "X-Goog-Signature is not hex")
	}
	sum := sha256.Sum256([]byte(sts))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		return refuse("SignatureDoesNotMatch", "the request signature we calculated does not match the signature you provided")
	}
	// Every PUT is bounded (stricter than Cloud Storage, which takes an
	// unbounded PUT too): the grant must sign the size range.
	if r.Method == http.MethodPut && !slices.Contains(names, ContentLengthRangeHeader) {
		return refuse("AccessDenied", "a PUT must carry a signed %s", ContentLengthRangeHeader)
	}
	return nil
}

// encodePath percent-encodes a decoded "<bucket>/<key>" as the V4 canonical
// URI (each '/'-separated segment query-escaped, spaces as %20), as
// cloud.google.com/go/storage signs it.
func encodePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.QueryEscape(s)
	}
	return strings.ReplaceAll(strings.Join(segs, "/"), "+", "%20")
}

// canonicalHeader is "name:value" with the value trimmed and its runs of
// whitespace folded into one space.
func canonicalHeader(name, value string) string {
	return name + ":" + strings.Join(strings.Fields(value), " ")
}

// hostname strips the port from a Host header.
func hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

func (g *Gateway) get(w http.ResponseWriter, r *http.Request, b results.Backend, key string) {
	ctx := r.Context()
	o, err := b.Open(ctx, key, 0)
	if err != nil {
		if errors.Is(err, results.ErrNotFound) {
			g.fail(w, r, &gcsError{status: http.StatusNotFound, Code: "NoSuchKey", Message: "no such object: " + key})
			return
		}
		g.log().Error("results gateway: open", "key", key, "err", err)
		g.fail(w, r, &gcsError{status: http.StatusInternalServerError, Code: "InternalError", Message: "open failed"})
		return
	}
	size := o.Size()
	a := o.Attrs()
	h := w.Header()
	if a.ContentType != "" {
		h.Set("Content-Type", a.ContentType)
	}
	for k, v := range a.Metadata {
		h.Set(MetaHeaderPrefix+k, v)
	}
	h.Set("Accept-Ranges", "bytes")
	if gen := o.Generation(); gen > 0 {
		h.Set("X-Goog-Generation", strconv.FormatInt(gen, 10))
	}
	h.Set("X-Goog-Stored-Content-Length", strconv.FormatInt(size, 10))
	off, n, status := int64(0), size, http.StatusOK
	if rh := r.Header.Get("Range"); rh != "" {
		s, l, ok, satisfiable := parseRange(rh, size)
		if ok && !satisfiable {
			h.Del("Content-Type")
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			g.fail(w, r, &gcsError{status: http.StatusRequestedRangeNotSatisfiable, Code: "InvalidRange", Message: "the requested range cannot be satisfied"})
			return
		}
		if ok {
			off, n, status = s, l, http.StatusPartialContent
			h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", s, s+l-1, size))
		}
	}
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	rd, err := o.NewReader(ctx, off, n)
	if err != nil {
		g.log().Error("results gateway: read", "key", key, "err", err)
		h.Del("Content-Range")
		g.fail(w, r, &gcsError{status: http.StatusInternalServerError, Code: "InternalError", Message: "read failed"})
		return
	}
	defer rd.Close()
	w.WriteHeader(status)
	if _, err := io.CopyN(w, rd, n); err != nil {
		// Headers are sent: the short body (Content-Length) tells the client.
		g.log().Warn("results gateway: read cut short", "key", key, "err", err)
	}
}

// parseRange parses a single byte range of an object of size bytes: ok is
// false for a header to ignore (malformed, several ranges), satisfiable
// false for a range that selects no byte.
func parseRange(h string, size int64) (off, n int64, ok, satisfiable bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, false
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, false
	}
	if first == "" { // suffix: the last n bytes
		k, err := strconv.ParseInt(last, 10, 64)
		if err != nil || k < 0 {
			return 0, 0, false, false
		}
		if k == 0 || size == 0 {
			return 0, 0, true, false
		}
		k = min(k, size)
		return size - k, k, true, true
	}
	a, err := strconv.ParseInt(first, 10, 64)
	if err != nil || a < 0 {
		return 0, 0, false, false
	}
	end := size - 1
	if last != "" {
		b, err := strconv.ParseInt(last, 10, 64)
		if err != nil || b < a {
			return 0, 0, false, false
		}
		end = min(b, size-1)
	}
	if a >= size {
		return 0, 0, true, false
	}
	return a, end - a + 1, true, true
}

// copyBuf is the Gateway's PUT copy buffer (per request).
const copyBuf = 256 << 10

func (g *Gateway) put(w http.ResponseWriter, r *http.Request, b results.Backend, key string) {
	a := results.ObjectAttrs{ContentType: r.Header.Get("Content-Type")}
	for h, v := range r.Header {
		lh := strings.ToLower(h)
		if k, ok := strings.CutPrefix(lh, MetaHeaderPrefix); ok && k != "" {
			if a.Metadata == nil {
				a.Metadata = map[string]string{}
			}
			a.Metadata[k] = strings.Join(v, ",")
		}
	}
	switch v, ok := r.Header[http.CanonicalHeaderKey(IfGenerationMatchHeader)]; {
	case !ok:
	case len(v) == 1 && v[0] == "0":
		a.IfAbsent = true
	default:
		g.fail(w, r, &gcsError{status: http.StatusNotImplemented, Code: "NotImplemented", Message: IfGenerationMatchHeader + " is served only as 0 (create only)"})
		return
	}
	lo, hi, ok := parseLengthRange(r.Header.Get(ContentLengthRangeHeader))
	if !ok {
		g.fail(w, r, &gcsError{status: http.StatusBadRequest, Code: "InvalidArgument", Message: "bad " + ContentLengthRangeHeader + ": want <min>,<max>"})
		return
	}
	if r.ContentLength > hi {
		g.fail(w, r, &gcsError{status: http.StatusBadRequest, Code: "EntityTooLarge", Message: fmt.Sprintf("Your proposed upload (%d bytes) exceeds the maximum allowed by %s (%d bytes).", r.ContentLength, ContentLengthRangeHeader, hi)})
		return
	}
	ow := b.NewWriter(r.Context(), key, a)
	body := &rangeReader{r: r.Body, max: hi}
	if _, err := io.CopyBuffer(ow, body, make([]byte, copyBuf)); err != nil {
		ow.Abort()
		if body.over {
			g.fail(w, r, &gcsError{status: http.StatusBadRequest, Code: "EntityTooLarge", Message: fmt.Sprintf("Your upload exceeds the maximum allowed by %s (%d bytes).", ContentLengthRangeHeader, hi)})
			return
		}
		g.log().Warn("results gateway: put cut short", "key", key, "err", err)
		g.fail(w, r, &gcsError{status: http.StatusBadRequest, Code: "IncompleteBody", Message: "the request body was cut short"})
		return
	}
	if body.n < lo {
		ow.Abort()
		g.fail(w, r, &gcsError{status: http.StatusBadRequest, Code: "EntityTooSmall", Message: fmt.Sprintf("Your upload is smaller than the minimum allowed by %s (%d bytes).", ContentLengthRangeHeader, lo)})
		return
	}
	if err := ow.Close(); err != nil {
		if errors.Is(err, results.ErrExists) {
			g.fail(w, r, &gcsError{status: http.StatusPreconditionFailed, Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold."})
			return
		}
		g.log().Error("results gateway: put", "key", key, "err", err)
		g.fail(w, r, &gcsError{status: http.StatusInternalServerError, Code: "InternalError", Message: "store failed"})
		return
	}
	if gen := ow.Generation(); gen > 0 {
		w.Header().Set("X-Goog-Generation", strconv.FormatInt(gen, 10))
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// parseLengthRange parses a ContentLengthRangeHeader value "<min>,<max>".
func parseLengthRange(v string) (lo, hi int64, ok bool) {
	a, b, found := strings.Cut(strings.TrimSpace(v), ",")
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	hi, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	if err1 != nil || err2 != nil || lo < 0 || hi < lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// rangeReader reads a PUT body and fails past max bytes (over is set).
type rangeReader struct {
	r    io.Reader
	max  int64
	n    int64
	over bool
}

var errOverRange = errors.New("results gateway: the body exceeds its signed length range")

func (x *rangeReader) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	x.n += int64(n)
	if x.n > x.max {
		x.over = true
		return 0, errOverRange
	}
	return n, err
}
