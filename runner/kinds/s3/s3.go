// Package s3 implements the `s3` task kind: get, put, list and delete
// objects of an S3-compatible store through minio-go — AWS S3, or Cloud
// Storage through its XML API with HMAC keys (endpoint
// https://storage.googleapis.com), so authors reach GCS with S3 tools too.
// It is a runner kind (README "Architecture"): the endpoint is the
// author's, every connection passes the egress policy, and the credentials
// are an s3 credential granted to the playbook.
//
// Local files are confined as the gcs kind's (shared/tools/internal/
// localfs): the task's workspace and the operator's data roots in the
// runner, else Options.LocalDirs.
package s3

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
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/minio/minio-go/v7"

	"github.com/noetl/gcpengine/runner/kinds/internal/localfs"
	"github.com/noetl/gcpengine/runner/kinds/internal/s3conn"
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
	// DefaultTimeout bounds one attempt when the attempt timeout is 0.
	DefaultTimeout = 300 * time.Second
	// DefaultMaxInlineBytes caps an object returned in the result (32 MiB);
	// a larger one must be written to a file.
	DefaultMaxInlineBytes int64 = 32 << 20
	// MaxList caps the objects one list returns.
	MaxList = 10_000
)

// Options configures the tool.
type Options struct {
	// Credentials resolves `auth` names (s3 credentials).
	Credentials credentials.Store
	// Egress is the network policy of connections (the runner's); nil:
	// none (tests).
	Egress *egress.Policy
	// LocalDirs are the directories local files may be in outside a
	// runner workspace (default os.TempDir()).
	LocalDirs []string
	// DataRoots are the operator's data directories a task with a
	// workspace may also use (NOETL_RUNNER_DATA_ROOTS).
	DataRoots []string
	// DefaultTimeout replaces DefaultTimeout when > 0.
	DefaultTimeout time.Duration
	// MaxInlineBytes replaces DefaultMaxInlineBytes when > 0.
	MaxInlineBytes int64
	// ReservedBuckets are buckets no task may touch (kind "forbidden"):
	// the engine's results bucket, which Cloud Storage's XML API would
	// otherwise reach under its own name.
	ReservedBuckets []string
}

// Tool is the s3 task kind. It is safe for concurrent use.
type Tool struct {
	opts Options
	dirs localfs.Dirs
}

// New returns an s3 tool configured by opts.
func New(opts Options) *Tool {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxInlineBytes <= 0 {
		opts.MaxInlineBytes = DefaultMaxInlineBytes
	}
	return &Tool{opts: opts, dirs: localfs.New(opts.LocalDirs, opts.DataRoots)}
}

// Exec runs one operation (tools.Adapt turns Exec into a tools.Tool). The
// configuration is toolspec.S3. Keys read:
//
//	action | operation   get | put | list | delete (required; download, read,
//	                     upload, write, remove are the same)
//	auth | credential    an s3 credential (name or mapping); none: anonymous
//	endpoint, region     override the credential's (default AWS S3, us-east-1)
//	get:    source | uri (s3://bucket/key) or bucket + key; destination (a
//	        local file) or none (the object comes back in the result)
//	put:    destination | uri (or bucket + key); the data from source (a
//	        local file), content (text) or data (a value stored as JSON);
//	        content_type; metadata
//	list:   bucket (or uri s3://bucket/prefix), prefix
//	delete: uri | source | destination (or bucket + key); missing_ok
//
// Results: put {"status": "success", "uri", "bucket", "key", "size",
// "etag", "content_type"}; get adds "destination" for a file, else
// "content" (text, or base64 with "encoding": "base64") and, for JSON,
// "data" (the decoded value); list {"status", "bucket", "prefix",
// "objects": [{"key", "size", "etag", "last_modified"}], "count",
// "truncated"}; delete {"status", "uri", "deleted": bool}. Errors: bad
// keys, a local path outside the allowed directories or an object over
// the inline cap are kind "config"; the engine's results bucket kind
// "forbidden"; a refused endpoint "forbidden_address"; a missing object or
// bucket "not_found"; 401/403 "auth"; 408, 429, 5xx and network failures
// kind "storage", retryable; the deadline kind "timeout".
func (t *Tool) Exec(ctx context.Context, _, config map[string]any, timeoutS float64) types.Outcome {
	var cfg toolspec.S3
	if err := toolspec.Decode(config, &cfg); err != nil {
		return conf.ConfigError("%v", err)
	}
	action := strings.ToLower(strings.TrimSpace(cfg.Action))
	switch action {
	case "get", "download", "read", "put", "upload", "write", "list", "delete", "remove":
	case "":
		return conf.ConfigError("s3 task: action is required (get, put, list or delete)")
	default:
		return conf.ConfigError("s3 task: action %q is not supported (get, put, list or delete)", action)
	}
	client, o := t.connect(ctx, cfg)
	if o != nil {
		return *o
	}
	rctx, cancel := context.WithTimeout(ctx, t.timeout(timeoutS))
	defer cancel()
	var out types.Outcome
	switch action {
	case "get", "download", "read":
		out = t.get(rctx, client, cfg)
	case "put", "upload", "write":
		out = t.put(rctx, client, cfg)
	case "list":
		out = t.list(rctx, client, cfg)
	default:
		out = t.delete(rctx, client, cfg)
	}
	return settle(ctx, rctx, out)
}

// PutObject writes size bytes of r (its content type contentType) to
// the object that config names (destination | uri, or bucket + key),
// with config's auth, endpoint, region and metadata, through the same
// checks as a put task (the engine's results bucket is refused, the
// endpoint passes the egress policy). The transfer kind writes its s3
// targets with it. The result and errors are a put task's.
func (t *Tool) PutObject(ctx context.Context, config map[string]any, r io.Reader, size int64, contentType string) types.Outcome {
	var cfg toolspec.S3
	if err := toolspec.Decode(config, &cfg); err != nil {
		return conf.ConfigError("%v", err)
	}
	client, o := t.connect(ctx, cfg)
	if o != nil {
		return *o
	}
	rctx, cancel := context.WithTimeout(ctx, t.timeout(0))
	defer cancel()
	bucket, key, err := object(cfg, "destination | uri", cfg.Destination, cfg.URI)
	if err != nil {
		return conf.ConfigError("s3 task: put: %v", err)
	}
	return settle(ctx, rctx, t.putObject(rctx, client, cfg, bucket, key, r, size, contentType))
}

// connect resolves cfg's credential and endpoint, refuses the engine's
// results bucket and an endpoint the egress policy refuses, and returns
// the client.
func (t *Tool) connect(ctx context.Context, cfg toolspec.S3) (*minio.Client, *types.Outcome) {
	fail := func(o types.Outcome) (*minio.Client, *types.Outcome) { return nil, &o }
	var fields map[string]any
	if cfg.Auth != nil {
		f, err := creds.Resolve(ctx, t.opts.Credentials, cfg.Auth, "s3 task", credentials.KindS3)
		if err != nil {
			return fail(creds.Outcome(err))
		}
		fields = f
	}
	conn, err := s3conn.FromFields(fields, cfg.Endpoint, cfg.Region)
	if err != nil {
		return fail(conf.ConfigError("s3 task: %v", err))
	}
	if b, ok := t.reserved(cfg); ok {
		return fail(conf.Fail(types.ErrKindForbidden, false, "s3 task: bucket %q is the engine's results bucket: tasks never touch it (read a stored result with an artifact or result_fetch task)", b))
	}
	if p := t.opts.Egress; p != nil {
		if err := allowed(ctx, p, conn.Endpoint); err != nil {
			return fail(conf.Fail(types.ErrKindForbiddenAddress, false, "s3 task: endpoint %s: %v", conn.Endpoint, err))
		}
	}
	client, err := conn.Client(t.opts.Egress)
	if err != nil {
		return fail(conf.ConfigError("s3 task: %v", err))
	}
	return client, nil
}

// timeout is one attempt's bound: timeoutS seconds, else the default.
func (t *Tool) timeout(timeoutS float64) time.Duration {
	if timeoutS > 0 {
		return time.Duration(timeoutS * float64(time.Second))
	}
	return t.opts.DefaultTimeout
}

// settle names a storage failure that the caller's cancellation (kind
// canceled) or the attempt's deadline (kind timeout) caused.
func settle(ctx, rctx context.Context, out types.Outcome) types.Outcome {
	if out.Status == types.StatusError && out.Error != nil && out.Error.Kind == types.ErrKindStorage {
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			out.Error.Kind, out.Error.Retryable = types.ErrKindCanceled, true
		case rctx.Err() != nil:
			out.Error.Kind, out.Error.Retryable = types.ErrKindTimeout, true
		}
	}
	return out
}

// allowed checks the endpoint's host against the policy before anything
// dials it (a refused endpoint is a clear error, not a retried one).
func allowed(ctx context.Context, p *egress.Policy, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return err
	}
	host, port := req.URL.Hostname(), req.URL.Port()
	n := 443
	if req.URL.Scheme == "http" {
		n = 80
	}
	if port != "" {
		fmt.Sscan(port, &n)
	}
	_, err = p.Resolve(ctx, host, n)
	return err
}

// reserved returns a reserved bucket that cfg names.
func (t *Tool) reserved(cfg toolspec.S3) (string, bool) {
	names := []string{strings.TrimSpace(cfg.Bucket)}
	for _, u := range []string{cfg.URI, cfg.Source, cfg.Destination} {
		if b, _, err := s3conn.ParseURI(u); err == nil {
			names = append(names, b)
		}
	}
	for _, n := range names {
		for _, r := range t.opts.ReservedBuckets {
			if n != "" && r != "" && strings.EqualFold(n, r) {
				return n, true
			}
		}
	}
	return "", false
}

// object reads the object named by the first s3:// URI of uris or bucket
// + key; keys names them for the message.
func object(cfg toolspec.S3, keys string, uris ...string) (bucket, key string, err error) {
	for _, u := range uris {
		if strings.HasPrefix(strings.TrimSpace(u), "s3://") {
			b, k, err := s3conn.ParseURI(u)
			if err == nil && k == "" {
				err = fmt.Errorf("%q names no key", u)
			}
			return b, k, err
		}
	}
	b, k := strings.TrimSpace(cfg.Bucket), strings.TrimPrefix(strings.TrimSpace(cfg.Key), "/")
	if b != "" && k != "" {
		return b, k, nil
	}
	return "", "", fmt.Errorf("name the object: %s s3://bucket/key, or bucket and key", keys)
}

func (t *Tool) put(ctx context.Context, c *minio.Client, cfg toolspec.S3) types.Outcome {
	bucket, key, err := object(cfg, "destination | uri", cfg.Destination, cfg.URI)
	if err != nil {
		return conf.ConfigError("s3 task: put: %v", err)
	}
	var r io.Reader
	var size int64
	contentType := cfg.ContentType
	switch {
	case cfg.Source != "":
		if strings.HasPrefix(cfg.Source, "s3://") {
			return conf.ConfigError("s3 task: put: source must be a local file path (use content or data for values)")
		}
		p, err := t.dirs.Path(ctx, cfg.Source, false, "s3 tasks")
		if err != nil {
			return conf.ConfigError("s3 task: put: %v", err)
		}
		f, err := os.Open(p)
		if err != nil {
			return conf.ConfigError("s3 task: put: source %s: %v", p, errors.Unwrap(err))
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return conf.ConfigError("s3 task: put: source %s is not a regular file", p)
		}
		r, size = f, st.Size()
		if contentType == "" {
			contentType = mime.TypeByExtension(filepath.Ext(p))
		}
	case cfg.Content != "":
		r, size = strings.NewReader(cfg.Content), int64(len(cfg.Content))
		if contentType == "" {
			contentType = "text/plain; charset=utf-8"
		}
	case cfg.Data != nil:
		b, err := json.Marshal(cfg.Data)
		if err != nil {
			return conf.ConfigError("s3 task: put: data cannot be encoded as JSON: %v", err)
		}
		r, size = bytes.NewReader(b), int64(len(b))
		if contentType == "" {
			contentType = "application/json"
		}
	default:
		return conf.ConfigError("s3 task: put: give source (a local file), content (text) or data (a value)")
	}
	return t.putObject(ctx, c, cfg, bucket, key, r, size, contentType)
}

// putObject writes size bytes of r to bucket/key with cfg's metadata.
func (t *Tool) putObject(ctx context.Context, c *minio.Client, cfg toolspec.S3, bucket, key string, r io.Reader, size int64, contentType string) types.Outcome {
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	po := minio.PutObjectOptions{ContentType: contentType}
	if len(cfg.Metadata) > 0 {
		po.UserMetadata = map[string]string{}
		for k, v := range cfg.Metadata {
			po.UserMetadata[k] = conf.Stringify(v)
		}
	}
	info, err := c.PutObject(ctx, bucket, key, r, size, po)
	if err != nil {
		return failure("put", bucket, key, err)
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"status": "success", "uri": "s3://" + bucket + "/" + key,
		"bucket": bucket, "key": key, "size": info.Size, "etag": info.ETag, "content_type": contentType}}
}

func (t *Tool) get(ctx context.Context, c *minio.Client, cfg toolspec.S3) types.Outcome {
	bucket, key, err := object(cfg, "source | uri", cfg.Source, cfg.URI)
	if err != nil {
		return conf.ConfigError("s3 task: get: %v", err)
	}
	uri := "s3://" + bucket + "/" + key
	var dest string
	if d := cfg.Destination; d != "" {
		if dest, err = t.dirs.Path(ctx, d, true, "s3 tasks"); err != nil {
			return conf.ConfigError("s3 task: get: %v", err)
		}
	}
	obj, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return failure("get", bucket, key, err)
	}
	defer obj.Close()
	st, err := obj.Stat() // the request happens here: a missing object fails now
	if err != nil {
		return failure("get", bucket, key, err)
	}
	res := map[string]any{"status": "success", "uri": uri, "bucket": bucket, "key": key, "content_type": st.ContentType, "etag": st.ETag}
	if dest != "" {
		tmp, err := os.CreateTemp(filepath.Dir(dest), ".noetl-s3-*")
		if err != nil {
			return conf.ConfigError("s3 task: get: destination %s: %v", dest, errors.Unwrap(err))
		}
		n, err := io.Copy(tmp, obj)
		cerr := tmp.Close()
		if err != nil || cerr != nil {
			os.Remove(tmp.Name())
			if err == nil {
				err = cerr
			}
			return failure("get", bucket, key, err)
		}
		if err := os.Rename(tmp.Name(), dest); err != nil {
			os.Remove(tmp.Name())
			return conf.ConfigError("s3 task: get: destination %s: %v", dest, errors.Unwrap(err))
		}
		res["size"], res["destination"] = n, dest
		return types.Outcome{Status: types.StatusOK, Result: res}
	}
	if st.Size > t.opts.MaxInlineBytes {
		return conf.ConfigError("s3 task: get: %s has %d bytes, over the %d-byte limit of a result; write it to a file (destination)", uri, st.Size, t.opts.MaxInlineBytes)
	}
	data, err := io.ReadAll(io.LimitReader(obj, t.opts.MaxInlineBytes+1))
	if err != nil {
		return failure("get", bucket, key, err)
	}
	res["size"] = int64(len(data))
	if utf8.Valid(data) {
		res["content"] = string(data)
		mt, _, _ := mime.ParseMediaType(st.ContentType)
		if strings.Contains(mt, "json") || strings.HasSuffix(key, ".json") {
			if v, err := jsonx.Decode(data); err == nil {
				res["data"] = v
			}
		}
	} else {
		res["content"], res["encoding"] = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return types.Outcome{Status: types.StatusOK, Result: res}
}

func (t *Tool) delete(ctx context.Context, c *minio.Client, cfg toolspec.S3) types.Outcome {
	bucket, key, err := object(cfg, "uri | source | destination", cfg.URI, cfg.Source, cfg.Destination)
	if err != nil {
		return conf.ConfigError("s3 task: delete: %v", err)
	}
	// S3's delete succeeds for a missing key: ask first, so the result
	// says whether it existed and missing_ok means something.
	_, err = c.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	deleted := err == nil
	if err != nil && !(isNotFound(err) && minio.ToErrorResponse(err).Code != "NoSuchBucket") {
		return failure("delete", bucket, key, err)
	}
	if !deleted && !cfg.MissingOK {
		return conf.Fail(types.ErrKindNotFound, false, "s3 task: delete s3://%s/%s: no such object (missing_ok: true accepts that)", bucket, key)
	}
	if deleted {
		if err := c.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{}); err != nil {
			return failure("delete", bucket, key, err)
		}
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"status": "success", "uri": "s3://" + bucket + "/" + key, "deleted": deleted}}
}

func (t *Tool) list(ctx context.Context, c *minio.Client, cfg toolspec.S3) types.Outcome {
	bucket, prefix := strings.TrimSpace(cfg.Bucket), cfg.Prefix
	if u := cfg.URI; u != "" {
		b, p, err := s3conn.ParseURI(u)
		if err != nil {
			return conf.ConfigError("s3 task: list: %v", err)
		}
		bucket, prefix = b, p
	}
	if bucket == "" {
		return conf.ConfigError("s3 task: list: bucket (or uri s3://bucket/prefix) is required")
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objs := []any{}
	truncated := false
	for o := range c.ListObjects(lctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return failure("list", bucket, prefix, o.Err)
		}
		if len(objs) >= MaxList {
			truncated = true
			break
		}
		objs = append(objs, map[string]any{"key": o.Key, "size": o.Size, "etag": o.ETag, "last_modified": o.LastModified.UTC().Format(time.RFC3339Nano)})
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"status": "success", "bucket": bucket, "prefix": prefix,
		"objects": objs, "count": int64(len(objs)), "truncated": truncated}}
}

func isNotFound(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusNotFound || r.Code == "NoSuchKey" || r.Code == "NoSuchBucket"
}

// failure classifies an S3 error.
func failure(op, bucket, key string, err error) types.Outcome {
	what := fmt.Sprintf("s3 task: %s s3://%s/%s", op, bucket, key)
	if egress.IsRefused(err) || strings.Contains(err.Error(), "refused by the network policy") {
		return conf.Fail(types.ErrKindForbiddenAddress, false, "%s: %v", what, err)
	}
	r := minio.ToErrorResponse(err)
	switch {
	case isNotFound(err):
		return conf.Fail(types.ErrKindNotFound, false, "%s: %v", what, err)
	case r.StatusCode == http.StatusUnauthorized || r.StatusCode == http.StatusForbidden || r.Code == "AccessDenied" || r.Code == "SignatureDoesNotMatch" || r.Code == "InvalidAccessKeyId":
		return conf.Fail(types.ErrKindAuth, false, "%s: %v", what, err)
	case r.StatusCode == http.StatusRequestTimeout || r.StatusCode == http.StatusTooManyRequests || r.StatusCode >= 500:
		return conf.Fail(types.ErrKindStorage, true, "%s: %v", what, err)
	case r.StatusCode >= 400:
		return conf.Fail(types.ErrKindStorage, false, "%s: %v", what, err)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) {
		return conf.Fail(types.ErrKindStorage, true, "%s: %v", what, err)
	}
	return conf.Fail(types.ErrKindStorage, true, "%s: %v", what, err)
}
