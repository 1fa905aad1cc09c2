// Package script loads the code of a task's `script:` block — NoETL's
// external code sources for the python and postgres kinds:
//
//	script:
//	  uri: ./scripts/hello_world.py      # or path:; gs://bucket/object; https://host/x.py
//	  source:
//	    type: file | gcs | http | s3 | inline # default: from the uri (gs://
//	                                     # gcs, s3:// s3, http(s):// http, else file)
//	    code: "..."                      # type inline
//	    endpoint: https://host/x.py      # type http (default: the uri)
//	    method: GET                      # type http
//	    headers: {X-Key: "..."}          # type http
//	    timeout: 10                      # seconds, gcs/http (default 30)
//	    auth: <credential>               # gcs: a gcs credential; http: an
//	                                     # http_bearer/basic/header credential;
//	                                     # s3: an s3 credential
//	    region: us-east-1                # s3 (default the credential's)
//	  encoding: utf-8                    # file (only utf-8)
//
// A bare string `script: <uri>` is accepted too.
package script

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/storage"

	"github.com/minio/minio-go/v7"

	"github.com/noetl/gcpengine/runner/kinds/gcsconn"
	"github.com/noetl/gcpengine/runner/kinds/internal/s3conn"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/errs"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/tools/creds"
	"github.com/noetl/gcpengine/shared/types"
)

// Defaults.
const (
	// DefaultMaxBytes caps a loaded script (4 MiB).
	DefaultMaxBytes int64 = 4 << 20
	// DefaultTimeout bounds one gcs/http fetch.
	DefaultTimeout = 30 * time.Second
)

// Options are the loader's dependencies. The zero value loads files and
// http sources with the defaults and fails gcs sources.
type Options struct {
	// HTTP fetches http sources (nil: a client without overall timeout;
	// every fetch carries its own deadline).
	HTTP *http.Client
	// GCS builds storage clients (nil: gcs sources fail with a config
	// error).
	GCS *gcsconn.Clients
	// Credentials resolves `source.auth` names.
	Credentials credentials.Store
	// Egress is the network policy of s3 sources (nil: none).
	Egress *egress.Policy
	// BaseDir resolves relative file paths (default: the working
	// directory).
	BaseDir string
	// MaxBytes replaces DefaultMaxBytes when > 0.
	MaxBytes int64
}

// Error is a load failure already classified as the task's outcome.
type Error struct{ Outcome types.Outcome }

// Error implements error.
func (e *Error) Error() string { return e.Outcome.Error.Message }

func fail(kind types.ErrorKind, retryable bool, format string, a ...any) *Error {
	return &Error{conf.Fail(kind, retryable, format, a...)}
}

// Load returns the code of cfg["script"]; ok is false when cfg has no
// script. what names the task in messages ("python task"). Errors: a
// malformed block, a missing file, an unknown type or a missing dependency
// are kind "config"; a missing object or a 404 are kind "not_found"; other
// HTTP failures are kind "http" (retryable for 408, 429, 5xx and transport
// errors); storage failures are kind "storage" (retryable); a script that
// is not UTF-8 text or exceeds the size cap is kind "config".
func Load(ctx context.Context, cfg map[string]any, what string, o Options) (code string, ok bool, err error) {
	raw, present := cfg["script"]
	if !present || raw == nil {
		return "", false, nil
	}
	var uri string
	var src map[string]any
	switch x := raw.(type) {
	case string:
		uri = strings.TrimSpace(x)
	default:
		m, isMap := conf.Map(raw)
		if !isMap {
			return "", true, fail(types.ErrKindConfig, false, "%s: `script` must be a mapping {uri, source: {type}} or a uri, got %T", what, raw)
		}
		uri, _ = conf.String(m, "uri", "path")
		uri = strings.TrimSpace(uri)
		if s, has := m["source"]; has && s != nil {
			if src, isMap = conf.Map(s); !isMap {
				return "", true, fail(types.ErrKindConfig, false, "%s: `script.source` must be a mapping {type, ...}, got %T", what, s)
			}
		}
		if enc, has := conf.String(m, "encoding"); has && !strings.EqualFold(strings.ReplaceAll(enc, "-", ""), "utf8") {
			return "", true, fail(types.ErrKindConfig, false, "%s: script encoding %q is not supported (utf-8 only)", what, enc)
		}
	}
	if src == nil {
		src = map[string]any{}
	}
	typ, _ := conf.String(src, "type")
	typ = strings.ToLower(strings.TrimSpace(typ))
	if typ == "" {
		switch {
		case conf.Stringify(src["code"]) != "":
			typ = "inline"
		case strings.HasPrefix(uri, "gs://"):
			typ = "gcs"
		case strings.HasPrefix(uri, "s3://"):
			typ = "s3"
		case strings.HasPrefix(uri, "http://") || strings.HasPrefix(uri, "https://"):
			typ = "http"
		default:
			typ = "file"
		}
	}
	max := o.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	timeout := DefaultTimeout
	if v, has := conf.Lookup(src, "timeout"); has {
		d, isNum := conf.Seconds(v)
		if !isNum || d <= 0 {
			return "", true, fail(types.ErrKindConfig, false, "%s: script.source.timeout must be a positive number of seconds, got %v", what, v)
		}
		timeout = d
	}
	var data []byte
	var e *Error
	switch typ {
	case "inline":
		c, isStr := src["code"].(string)
		if !isStr || strings.TrimSpace(c) == "" {
			return "", true, fail(types.ErrKindConfig, false, "%s: script.source.type inline needs script.source.code", what)
		}
		data = []byte(c)
	case "file":
		data, e = loadFile(uri, what, o.BaseDir, max)
	case "http", "https":
		data, e = loadHTTP(ctx, uri, src, what, o, timeout, max)
	case "gcs", "gs":
		data, e = loadGCS(ctx, uri, src, what, o, timeout, max)
	case "s3":
		data, e = loadS3(ctx, uri, src, what, o, timeout, max)
	default:
		return "", true, fail(types.ErrKindConfig, false, "%s: script.source.type %q is unknown (file, gcs, http, s3 or inline)", what, typ)
	}
	if e != nil {
		return "", true, e
	}
	if !utf8.Valid(data) {
		return "", true, fail(types.ErrKindConfig, false, "%s: the script at %s is not UTF-8 text", what, uri)
	}
	if strings.TrimSpace(string(data)) == "" {
		return "", true, fail(types.ErrKindConfig, false, "%s: the script at %s is empty", what, uri)
	}
	return string(data), true, nil
}

// loadFile reads a script file inside the playbook root base (the
// working directory when empty) through os.Root: an absolute path, a
// `..` that leaves the root and a symbolic link that points out of it are
// refused (kind config) without a byte of the file read; only a regular
// file of at most max bytes is read. Messages name the path as written,
// never the file's content.
func loadFile(uri, what, base string, max int64) ([]byte, *Error) {
	p := strings.TrimPrefix(uri, "file://")
	if p == "" {
		return nil, fail(types.ErrKindConfig, false, "%s: script.uri (the file path) is required for a file source", what)
	}
	if base == "" {
		base = "."
	}
	if filepath.IsAbs(p) {
		// An absolute path is accepted only inside the root (as written).
		abs, err := filepath.Abs(base)
		if err != nil {
			return nil, fail(types.ErrKindConfig, false, "%s: playbook root: %v", what, err)
		}
		rel, err := filepath.Rel(abs, p)
		if err != nil || !filepath.IsLocal(rel) {
			return nil, fail(types.ErrKindConfig, false, "%s: script file %q is outside the playbook root (NOETL_REPO_ROOT)", what, p)
		}
		p = rel
	}
	if !filepath.IsLocal(p) || strings.ContainsRune(p, 0) {
		return nil, fail(types.ErrKindConfig, false, "%s: script file %q is outside the playbook root (NOETL_REPO_ROOT)", what, p)
	}
	r, err := os.OpenRoot(base)
	if err != nil {
		return nil, fail(types.ErrKindConfig, false, "%s: playbook root: %v", what, err)
	}
	defer r.Close()
	// O_NONBLOCK: opening a FIFO for reading would wait for a writer.
	f, err := r.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes from parent") {
			return nil, fail(types.ErrKindConfig, false, "%s: script file %q is outside the playbook root (NOETL_REPO_ROOT)", what, p)
		}
		return nil, fail(types.ErrKindConfig, false, "%s: script file %q cannot be read: %v", what, p, errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, fail(types.ErrKindConfig, false, "%s: script path %q is not a regular file", what, p)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fail(types.ErrKindConfig, false, "%s: reading script file %q: %v", what, p, err)
	}
	if int64(len(data)) > max {
		return nil, fail(types.ErrKindConfig, false, "%s: script file %q exceeds %d bytes", what, p, max)
	}
	return data, nil
}

func loadHTTP(ctx context.Context, uri string, src map[string]any, what string, o Options, timeout time.Duration, max int64) ([]byte, *Error) {
	u, _ := conf.String(src, "endpoint", "url")
	if u == "" {
		u = uri
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return nil, fail(types.ErrKindConfig, false, "%s: an http script source needs script.source.endpoint or an http(s) script.uri", what)
	}
	method := "GET"
	if m, ok := conf.String(src, "method"); ok {
		method = strings.ToUpper(strings.TrimSpace(m))
	}
	switch method {
	case "GET", "POST", "PUT", "PATCH", "DELETE":
	default:
		return nil, fail(types.ErrKindConfig, false, "%s: script.source.method %q is not an HTTP method", what, method)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, u, nil)
	if err != nil {
		return nil, fail(types.ErrKindConfig, false, "%s: script url: %v", what, err)
	}
	if a, ok := src["auth"]; ok && a != nil {
		h, e := authHeaders(ctx, a, what, o.Credentials)
		if e != nil {
			return nil, e
		}
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	if hv, ok := src["headers"]; ok && hv != nil {
		hm, isMap := conf.Map(hv)
		if !isMap {
			return nil, fail(types.ErrKindConfig, false, "%s: script.source.headers must be a mapping", what)
		}
		for k, v := range hm {
			req.Header.Set(k, conf.Stringify(v))
		}
	}
	client := o.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return nil, fail(types.ErrKindTimeout, true, "%s: fetching script %s: timed out after %s", what, redact(u), timeout)
		}
		return nil, fail(types.ErrKindHTTP, true, "%s: fetching script %s: %v", what, redact(u), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fail(types.ErrKindHTTP, true, "%s: reading script %s: %v", what, redact(u), err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fail(types.ErrKindNotFound, false, "%s: script %s: HTTP 404", what, redact(u))
	case resp.StatusCode >= 400:
		code := resp.StatusCode
		return nil, &Error{types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrKindHTTP, Status: code,
			Message:   fmt.Sprintf("%s: script %s: HTTP %d", what, redact(u), code),
			Retryable: code == 408 || code == 429 || code >= 500}}}
	}
	if int64(len(data)) > max {
		return nil, fail(types.ErrKindConfig, false, "%s: script %s exceeds %d bytes", what, redact(u), max)
	}
	return data, nil
}

// authHeaders resolves an http credential into request headers.
func authHeaders(ctx context.Context, a any, what string, store credentials.Store) (map[string]string, *Error) {
	var entry map[string]any
	switch x := a.(type) {
	case string:
		kc, err := credentials.Resolve(ctx, store, []any{map[string]any{"name": "script", "credential": x}}, nil)
		if err != nil {
			if errors.Is(err, credentials.ErrNotGranted) {
				return nil, fail(types.ErrKindForbidden, false, "%s: script.source.auth: %v", what, err)
			}
			if errors.Is(err, credentials.ErrNotFound) || errors.Is(err, credentials.ErrInvalid) || store == nil {
				return nil, fail(types.ErrKindConfig, false, "%s: script.source.auth: %v", what, err)
			}
			return nil, fail(types.ErrKindCredentials, errs.Retryable(err), "%s: script.source.auth: %v", what, err)
		}
		entry, _ = kc["script"].(map[string]any)
	default:
		m, ok := conf.Map(a)
		if !ok {
			return nil, fail(types.ErrKindConfig, false, "%s: script.source.auth must be a credential name or a mapping", what)
		}
		entry = m
	}
	out := map[string]string{}
	if h, ok := conf.Map(entry["headers"]); ok {
		for k, v := range h {
			out[k] = conf.Stringify(v)
		}
	}
	return out, nil
}

func loadGCS(ctx context.Context, uri string, src map[string]any, what string, o Options, timeout time.Duration, max int64) ([]byte, *Error) {
	bucket, object, err := gcsconn.ParseURI(uri)
	if err != nil {
		return nil, fail(types.ErrKindConfig, false, "%s: script.uri: %v", what, err)
	}
	if o.GCS == nil {
		return nil, fail(types.ErrKindConfig, false, "%s: gcs script sources are not configured in this engine", what)
	}
	var fields map[string]any
	if a, ok := src["auth"]; ok && a != nil {
		f, err := creds.Resolve(ctx, o.Credentials, a, what+" script.source.auth", credentials.KindGCS)
		if err != nil {
			return nil, &Error{creds.Outcome(err)}
		}
		fields = f
	}
	cl, err := o.GCS.Client(ctx, fields)
	if err != nil {
		return nil, fail(types.ErrKindConfig, false, "%s: %v", what, err)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := cl.Bucket(bucket).Object(object).NewReader(rctx)
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) {
		return nil, fail(types.ErrKindNotFound, false, "%s: script %s not found", what, uri)
	}
	if err != nil {
		return nil, fail(types.ErrKindStorage, true, "%s: reading script %s: %v", what, uri, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fail(types.ErrKindStorage, true, "%s: reading script %s: %v", what, uri, err)
	}
	if int64(len(data)) > max {
		return nil, fail(types.ErrKindConfig, false, "%s: script %s exceeds %d bytes", what, uri, max)
	}
	return data, nil
}

// loadS3 reads an s3://bucket/key script from an S3-compatible store
// (runner/kinds/internal/s3conn: source.auth an s3 credential, source.region
// or the credential's region), through the egress policy.
func loadS3(ctx context.Context, uri string, src map[string]any, what string, o Options, timeout time.Duration, max int64) ([]byte, *Error) {
	bucket, key, err := s3conn.ParseURI(uri)
	if err == nil && key == "" {
		err = fmt.Errorf("%q names no key", uri)
	}
	if err != nil {
		return nil, fail(types.ErrKindConfig, false, "%s: script.uri: %v", what, err)
	}
	var fields map[string]any
	if a, ok := src["auth"]; ok && a != nil {
		f, err := creds.Resolve(ctx, o.Credentials, a, what+" script.source.auth", credentials.KindS3)
		if err != nil {
			return nil, &Error{creds.Outcome(err)}
		}
		fields = f
	}
	region, _ := conf.String(src, "region")
	endpoint, _ := conf.String(src, "endpoint")
	conn, err := s3conn.FromFields(fields, endpoint, region)
	if err != nil {
		return nil, fail(types.ErrKindConfig, false, "%s: %v", what, err)
	}
	cl, err := conn.Client(o.Egress)
	if err != nil {
		return nil, fail(types.ErrKindConfig, false, "%s: %v", what, err)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	obj, err := cl.GetObject(rctx, bucket, key, minio.GetObjectOptions{})
	if err == nil {
		defer obj.Close()
		_, err = obj.Stat()
	}
	if err != nil {
		r := minio.ToErrorResponse(err)
		switch {
		case egress.IsRefused(err) || strings.Contains(err.Error(), "refused by the network policy"):
			return nil, fail(types.ErrKindForbiddenAddress, false, "%s: script %s: %v", what, uri, err)
		case r.StatusCode == http.StatusNotFound || r.Code == "NoSuchKey" || r.Code == "NoSuchBucket":
			return nil, fail(types.ErrKindNotFound, false, "%s: script %s not found", what, uri)
		case r.StatusCode == http.StatusForbidden || r.StatusCode == http.StatusUnauthorized:
			return nil, fail(types.ErrKindAuth, false, "%s: reading script %s: %v", what, uri, err)
		}
		return nil, fail(types.ErrKindStorage, true, "%s: reading script %s: %v", what, uri, err)
	}
	data, err := io.ReadAll(io.LimitReader(obj, max+1))
	if err != nil {
		return nil, fail(types.ErrKindStorage, true, "%s: reading script %s: %v", what, uri, err)
	}
	if int64(len(data)) > max {
		return nil, fail(types.ErrKindConfig, false, "%s: script %s exceeds %d bytes", what, uri, max)
	}
	return data, nil
}

// redact drops the query string (which may carry a key) from a URL.
func redact(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}
