package grant

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"

	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/results"
)

// NewBackend returns a results.Backend that holds exactly grants (runner
// side): it reads the keys granted GET and writes the keys granted PUT,
// through the signed URLs, with hc (nil: http.DefaultClient).
//
//   - Open issues a "Range: bytes=0-0" GET for the size (Content-Range's
//     total; a 0-byte object answers 200 with no body, or 416, and then a
//     GET without Range answers 200 with no body) and the
//     attributes (Content-Type, x-goog-meta-*); ReadAt and NewReader are
//     Range GETs, streamed. When the server names the object's generation
//     (x-goog-generation), every read of one opened object must see the
//     one Open saw: a replaced object fails the read (ErrNotFound).
//   - Get is one GET of the whole object; Exists a "Range: bytes=0-0" GET
//     (404: false, nil).
//   - NewWriter is ONE streamed PUT (chunked transfer encoding, the body
//     an io.Pipe) carrying the grant's signed headers: nothing is stored
//     until Close returns nil (Close waits for the 200); Abort or a done
//     ctx cuts the request so nothing is stored. Put is one PUT with
//     Content-Length. The attributes asked for must be the ones signed
//     into the grant (content type and metadata): an error wrapping
//     results.ErrForbidden otherwise.
//   - A key or method not granted, List and Delete: an error wrapping
//     results.ErrForbidden naming the key ("not granted to this task").
//   - HTTP 404 wraps results.ErrNotFound, 403 results.ErrForbidden; other
//     statuses are errors with the status and the Cloud Storage XML
//     error's code and message. Nothing is retried.
//
// For each key and method the last grant in grants counts. The Backend is
// results.BucketNamer when all grants share one bucket.
func NewBackend(grants []Grant, hc *http.Client) results.Backend {
	if hc == nil {
		hc = http.DefaultClient
	}
	b := &backend{hc: hc, get: map[string]Grant{}, put: map[string]Grant{}, all: append([]Grant(nil), grants...)}
	buckets := map[string]bool{}
	for _, g := range grants {
		buckets[g.Bucket] = true
		switch g.Method {
		case MethodGet:
			b.get[g.Key] = g
		case MethodPut:
			b.put[g.Key] = g
		}
	}
	if len(buckets) == 1 {
		for name := range buckets {
			return &namedBackend{backend: b, name: name}
		}
	}
	return b
}

type backend struct {
	hc       *http.Client
	get, put map[string]Grant
	all      []Grant
}

type namedBackend struct {
	*backend
	name string
}

// Bucket implements results.BucketNamer.
func (n *namedBackend) Bucket() string { return n.name }

// Grants returns the grants the Backend holds (a copy).
func (b *backend) Grants() []Grant { return append([]Grant(nil), b.all...) }

func forbidden(op, key, method string) error {
	return fmt.Errorf("results: grant %s %s: %w: %s of this key is not granted to this task", op, key, results.ErrForbidden, method)
}

func (b *backend) grant(op, key, method string) (Grant, error) {
	m := b.get
	if method == MethodPut {
		m = b.put
	}
	g, ok := m[key]
	if !ok {
		return Grant{}, forbidden(op, key, method)
	}
	return g, nil
}

// do sends one request on grant g (never retried).
func (b *backend) do(ctx context.Context, g Grant, body io.Reader, length int64, rangeHdr string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, g.Method, g.URL, body)
	if err != nil {
		return nil, err
	}
	for k, v := range g.Headers {
		req.Header.Set(k, v)
	}
	if rangeHdr != "" {
		req.Header.Set("Range", rangeHdr)
	}
	if body != nil {
		req.ContentLength = length // -1: chunked
	}
	return b.hc.Do(req)
}

// statusError turns a failed response into an error (and closes its body).
func statusError(op, key string, resp *http.Response) error {
	defer resp.Body.Close()
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	detail := ""
	if xml.Unmarshal(data, &x) == nil && (x.Code != "" || x.Message != "") {
		detail = fmt.Sprintf(": %s: %s", x.Code, x.Message)
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		return fmt.Errorf("results: grant %s %s: %w (HTTP 404%s)", op, key, results.ErrNotFound, detail)
	case http.StatusForbidden:
		return fmt.Errorf("results: grant %s %s: %w (HTTP 403%s)", op, key, results.ErrForbidden, detail)
	case http.StatusPreconditionFailed:
		return fmt.Errorf("results: grant %s %s: %w (HTTP 412%s)", op, key, results.ErrExists, detail)
	}
	if resp.StatusCode == http.StatusBadRequest && x.Code == "EntityTooLarge" {
		return fmt.Errorf("results: grant %s %s: %w (%s; HTTP 400%s)", op, key, results.ErrQuota, results.QuotaSetting, detail)
	}
	return fmt.Errorf("results: grant %s %s: HTTP %s%s", op, key, resp.Status, detail)
}

// Put implements results.Backend.
func (b *backend) Put(ctx context.Context, key string, data []byte, contentType string) error {
	g, err := b.grant("put", key, MethodPut)
	if err != nil {
		return err
	}
	if got := g.Headers["content-type"]; got != contentType {
		return fmt.Errorf("results: grant put %s: %w: content type %q, the grant signed %q", key, results.ErrForbidden, contentType, got)
	}
	if g.MaxBytes > 0 && int64(len(data)) > g.MaxBytes {
		return quotaError(key, g.MaxBytes)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("results: grant put %s: %w", key, err)
	}
	resp, err := b.do(ctx, g, bytes.NewReader(data), int64(len(data)), "")
	if err != nil {
		return fmt.Errorf("results: grant put %s: %w", key, err)
	}
	if resp.StatusCode != http.StatusOK {
		return statusError("put", key, resp)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return nil
}

// Get implements results.Backend.
func (b *backend) Get(ctx context.Context, key string) ([]byte, error) {
	g, err := b.grant("get", key, MethodGet)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("results: grant get %s: %w", key, err)
	}
	resp, err := b.do(ctx, g, nil, 0, "")
	if err != nil {
		return nil, fmt.Errorf("results: grant get %s: %w", key, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError("get", key, resp)
	}
	defer resp.Body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, max(resp.ContentLength, 0)+bytes.MinRead))
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("results: grant get %s: %w", key, err)
	}
	return buf.Bytes(), nil
}

// probe is the "Range: bytes=0-0" GET of Open and Exists: the object's
// size, attributes and generation ("" when the server names none).
func (b *backend) probe(ctx context.Context, op, key string) (size int64, a results.ObjectAttrs, gen string, err error) {
	g, err := b.grant(op, key, MethodGet)
	if err != nil {
		return 0, a, "", err
	}
	if err := ctx.Err(); err != nil {
		return 0, a, "", fmt.Errorf("results: grant %s %s: %w", op, key, err)
	}
	resp, err := b.do(ctx, g, nil, 0, "bytes=0-0")
	if err != nil {
		return 0, a, "", fmt.Errorf("results: grant %s %s: %w", op, key, err)
	}
	if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
		// A 0-byte object: its attributes may not come with a 416, so ask
		// again without Range (200 and an empty body).
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp, err = b.do(ctx, g, nil, 0, ""); err != nil {
			return 0, a, "", fmt.Errorf("results: grant %s %s: %w", op, key, err)
		}
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		size, err = contentRangeTotal(resp.Header.Get("Content-Range"))
	case http.StatusOK: // the whole object (a 0-byte one, after a 416 or not, or a server ignoring Range)
		size = resp.ContentLength
		if size < 0 {
			err = errors.New("200 without Content-Length")
		}
	default:
		return 0, a, "", statusError(op, key, resp)
	}
	resp.Body.Close() // at most one byte unread (or a server ignoring Range: the connection is dropped)
	if err != nil {
		return 0, a, "", fmt.Errorf("results: grant %s %s: %w", op, key, err)
	}
	a = attrsOf(resp.Header)
	return size, a, resp.Header.Get("X-Goog-Generation"), nil
}

// attrsOf reads an object's attributes from response headers.
func attrsOf(h http.Header) results.ObjectAttrs {
	a := results.ObjectAttrs{ContentType: h.Get("Content-Type")}
	for k, v := range h {
		if m, ok := strings.CutPrefix(strings.ToLower(k), MetaHeaderPrefix); ok && m != "" {
			if a.Metadata == nil {
				a.Metadata = map[string]string{}
			}
			a.Metadata[m] = strings.Join(v, ",")
		}
	}
	return a
}

// contentRangeTotal is the total of "bytes a-b/total" or "bytes */total".
func contentRangeTotal(cr string) (int64, error) {
	_, total, ok := strings.Cut(cr, "/")
	if !ok || !strings.HasPrefix(cr, "bytes ") {
		return 0, fmt.Errorf("malformed Content-Range %q", cr)
	}
	n, err := strconv.ParseInt(total, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("malformed Content-Range %q", cr)
	}
	return n, nil
}

// Exists implements results.Backend.
func (b *backend) Exists(ctx context.Context, key string) (bool, error) {
	_, _, _, err := b.probe(ctx, "exists", key)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, results.ErrNotFound) {
		return false, nil
	}
	return false, err
}

// Open implements results.Backend. With generation > 0 the object the
// server answers with must be that generation (its x-goog-generation):
// another (the object was replaced) is an error wrapping
// results.ErrNotFound. A server that names no generation is taken at its
// word.
func (b *backend) Open(ctx context.Context, key string, generation int64) (results.Object, error) {
	size, a, gen, err := b.probe(ctx, "open", key)
	if err != nil {
		return nil, err
	}
	if generation > 0 && gen != "" && gen != strconv.FormatInt(generation, 10) {
		return nil, fmt.Errorf("results: grant open %s#%d: %w (no such generation: the key holds %s)", key, generation, results.ErrNotFound, gen)
	}
	return &object{b: b, ctx: ctx, g: b.get[key], size: size, attrs: a, gen: gen}, nil
}

type object struct {
	b     *backend
	ctx   context.Context
	g     Grant
	size  int64
	attrs results.ObjectAttrs
	gen   string
}

func (o *object) Size() int64 { return o.size }

func (o *object) Generation() int64 {
	n, _ := strconv.ParseInt(o.gen, 10, 64)
	return n
}

func (o *object) Attrs() results.ObjectAttrs {
	return results.ObjectAttrs{ContentType: o.attrs.ContentType, Metadata: maps.Clone(o.attrs.Metadata)}
}

func (o *object) NewReader(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("results: grant read %s: %w", o.g.Key, err)
	}
	if off < 0 {
		return nil, fmt.Errorf("results: grant read %s: negative offset %d", o.g.Key, off)
	}
	end := o.size // exclusive
	if n >= 0 && off+n < end {
		end = off + n
	}
	if off >= end {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	resp, err := o.b.do(ctx, o.g, nil, 0, fmt.Sprintf("bytes=%d-%d", off, end-1))
	if err != nil {
		return nil, fmt.Errorf("results: grant read %s: %w", o.g.Key, err)
	}
	switch {
	case resp.StatusCode == http.StatusPartialContent:
	case resp.StatusCode == http.StatusOK && off == 0: // a server ignoring Range: the prefix
	default:
		if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
			resp.Body.Close()
			return nil, fmt.Errorf("results: grant read %s: %w (replaced while read: range %d-%d no longer satisfiable)", o.g.Key, results.ErrNotFound, off, end-1)
		}
		err := statusError("read", o.g.Key, resp)
		if errors.Is(err, results.ErrNotFound) {
			return nil, fmt.Errorf("%w (replaced or deleted while read)", err)
		}
		return nil, err
	}
	if gen := resp.Header.Get("X-Goog-Generation"); o.gen != "" && gen != o.gen {
		resp.Body.Close()
		return nil, fmt.Errorf("results: grant read %s: %w (replaced while read: generation %s, opened %s)", o.g.Key, results.ErrNotFound, gen, o.gen)
	}
	return &rangeBody{r: io.LimitReader(resp.Body, end-off), c: resp.Body, want: end - off, key: o.g.Key}, nil
}

// rangeBody streams a range and reports a body shorter than the range.
type rangeBody struct {
	r    io.Reader
	c    io.Closer
	want int64
	got  int64
	key  string
}

func (r *rangeBody) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.got += int64(n)
	if err == io.EOF && r.got < r.want {
		return n, fmt.Errorf("results: grant read %s: %w after %d of %d bytes", r.key, io.ErrUnexpectedEOF, r.got, r.want)
	}
	return n, err
}

func (r *rangeBody) Close() error { return r.c.Close() }

func (o *object) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.size {
		return 0, io.EOF
	}
	n := int64(len(p))
	short := false
	if off+n > o.size {
		n, short = o.size-off, true
	}
	r, err := o.NewReader(o.ctx, off, n)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	got, err := io.ReadFull(r, p[:n])
	if err != nil {
		return got, fmt.Errorf("results: grant read %s: %w", o.g.Key, err)
	}
	if short {
		return got, io.EOF
	}
	return got, nil
}

// List implements results.Backend: signed URLs grant no listing.
func (b *backend) List(ctx context.Context, prefix string, fn func(results.ObjectInfo) error) error {
	return fmt.Errorf("results: grant list %s: %w: listing is not granted to this task", prefix, results.ErrForbidden)
}

// Delete implements results.Backend: signed URLs grant no deletion.
func (b *backend) Delete(ctx context.Context, key string) error {
	return forbidden("delete", key, "DELETE")
}

// NewWriter implements results.Backend.
func (b *backend) NewWriter(ctx context.Context, key string, a results.ObjectAttrs) results.ObjectWriter {
	g, err := b.grant("write", key, MethodPut)
	if err == nil {
		err = matchAttrs(key, g, a)
	}
	if err != nil {
		return &writer{err: err, done: make(chan struct{})}
	}
	pr, pw := io.Pipe()
	wctx, cancel := context.WithCancel(ctx)
	w := &writer{ctx: wctx, pw: pw, cancel: cancel, key: key, max: g.MaxBytes, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		resp, err := b.do(wctx, g, pr, -1, "")
		switch {
		case err != nil:
			w.result = fmt.Errorf("results: grant write %s: %w", key, err)
		case resp.StatusCode != http.StatusOK:
			w.result = statusError("write", key, resp)
		default:
			w.gen, _ = strconv.ParseInt(resp.Header.Get("X-Goog-Generation"), 10, 64)
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		// A response before the body's end (a refusal): further Writes fail.
		if w.result != nil {
			pr.CloseWithError(w.result)
		} else {
			pr.CloseWithError(fmt.Errorf("results: grant write %s: the server answered before the end of the object", key))
		}
	}()
	return w
}

// matchAttrs checks that a are the attributes signed into g.
func matchAttrs(key string, g Grant, a results.ObjectAttrs) error {
	want := map[string]string{}
	if a.ContentType != "" {
		want["content-type"] = a.ContentType
	}
	if a.IfAbsent {
		want[IfGenerationMatchHeader] = "0"
	}
	for k, v := range a.Metadata {
		want[MetaHeaderPrefix+k] = v
	}
	have := map[string]string{}
	for k, v := range g.Headers {
		if k == "content-type" || k == IfGenerationMatchHeader || strings.HasPrefix(k, MetaHeaderPrefix) {
			have[k] = v
		}
	}
	if !maps.Equal(want, have) {
		return fmt.Errorf("results: grant write %s: %w: attributes %v differ from the granted %v", key, results.ErrForbidden, want, have)
	}
	return nil
}

// writer is one streamed PUT.
type writer struct {
	ctx    context.Context
	pw     *io.PipeWriter
	cancel context.CancelFunc
	key    string
	done   chan struct{} // closed when the request finished
	result error         // the request's outcome (read after done)
	err    error         // sticky: refused before or during writing
	closed bool
	gen    int64 // the object's generation (the 200's x-goog-generation; read after done)
	max, n int64 // the grant's MaxBytes (0: none), bytes written
}

// Generation implements results.ObjectWriter: the generation the server
// named in its answer (0 when it names none).
func (w *writer) Generation() int64 {
	if w.pw == nil || !w.closed || w.err != nil {
		return 0
	}
	return w.gen
}

// quotaError is the error of a write over a grant's MaxBytes.
func quotaError(key string, max int64) error {
	return fmt.Errorf("results: grant write %s: %w: a task attempt stores at most %d MiB (%d bytes) in the result tier (%s)", key, results.ErrQuota, max>>20, max, results.QuotaSetting)
}

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, fmt.Errorf("results: grant write %s: writer closed", w.key)
	}
	if w.max > 0 && w.n+int64(len(p)) > w.max {
		// Stopped here, before the server would refuse it: nothing is
		// stored.
		w.err = quotaError(w.key, w.max)
		w.abort()
		return 0, w.err
	}
	w.n += int64(len(p))
	if err := w.ctx.Err(); err != nil {
		w.err = fmt.Errorf("results: grant write %s: %w", w.key, err)
		return 0, w.err
	}
	n, err := w.pw.Write(p)
	if err != nil {
		// The transport stopped reading the body: the request is ending
		// (the server answered early, or it failed); its outcome is the
		// error to report.
		<-w.done
		w.err = w.result
		if w.err == nil {
			w.err = fmt.Errorf("results: grant write %s: %w", w.key, err)
		}
	}
	return n, w.err
}

// Close ends the body and waits for the server's answer: the object is
// stored once Close returns nil.
func (w *writer) Close() error {
	if w.pw == nil { // refused at NewWriter
		return w.err
	}
	if w.closed {
		return fmt.Errorf("results: grant write %s: writer closed", w.key)
	}
	w.closed = true
	defer w.cancel()
	if w.err != nil {
		w.abort()
		return w.err
	}
	if err := w.ctx.Err(); err != nil {
		w.abort()
		return fmt.Errorf("results: grant write %s: %w", w.key, err)
	}
	_ = w.pw.Close()
	<-w.done
	return w.result
}

// Abort cuts the request (its body ends in an error, so the server stores
// nothing) and waits for it to end.
func (w *writer) Abort() {
	if w.pw == nil || w.closed && w.err == nil {
		return
	}
	w.closed = true
	w.abort()
}

func (w *writer) abort() {
	_ = w.pw.CloseWithError(errAborted)
	w.cancel()
	<-w.done
}

var errAborted = errors.New("results: grant write aborted")
