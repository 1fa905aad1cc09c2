// Package gcs implements the `gcs` task kind: upload, download, delete and
// list objects of Google Cloud Storage (cloud.google.com/go/storage) — in
// GCP with the function's service account or a gcs credential, locally
// against fake-gcs-server (STORAGE_EMULATOR_HOST, or a gcs credential's
// endpoint).
//
// Local files are confined: a task may only read or write files under
// Options.LocalDirs (default the temporary directory, the only writable
// directory of a Cloud Function), so that a playbook cannot upload the
// engine's own files.
package gcs

import (
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

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/noetl/gcpengine/runner/kinds/gcsconn"
	"github.com/noetl/gcpengine/runner/kinds/internal/localfs"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
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
	// DefaultMaxInlineBytes caps a download returned in the result (32 MiB);
	// larger objects must be downloaded to a file.
	DefaultMaxInlineBytes int64 = 32 << 20
	// MaxList caps the objects one list returns.
	MaxList = 10_000
)

// Options configures the tool.
type Options struct {
	// Clients builds storage clients (nil: a private cache).
	Clients *gcsconn.Clients
	// Credentials resolves `auth` names (gcs credentials).
	Credentials credentials.Store
	// LocalDirs are the directories local files may be read from and
	// written to (default: os.TempDir()). A task whose context carries a
	// workspace (the runner's, runner/sandbox) may use that workspace and
	// DataRoots instead, and nothing else.
	LocalDirs []string
	// DataRoots are the operator's data directories a task with a
	// workspace may also use (NOETL_RUNNER_DATA_ROOTS).
	DataRoots []string
	// DefaultTimeout replaces DefaultTimeout when > 0.
	DefaultTimeout time.Duration
	// MaxInlineBytes replaces DefaultMaxInlineBytes when > 0.
	MaxInlineBytes int64
	// ReservedBuckets are buckets no task may read, write, delete or list
	// (kind "forbidden"): the engine's results bucket (NOETL_RESULTS_BUCKET;
	// results by ownership, README "Security" — a task reads results through
	// artifact/result_fetch, which check the reader, and never writes
	// them).
	ReservedBuckets []string
}

// Tool is the gcs task kind. It is safe for concurrent use.
type Tool struct {
	opts Options
	dirs localfs.Dirs
}

// New returns a gcs tool configured by opts.
func New(opts Options) *Tool {
	if opts.Clients == nil {
		opts.Clients = &gcsconn.Clients{}
	}
	if len(opts.LocalDirs) == 0 {
		opts.LocalDirs = []string{os.TempDir()}
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxInlineBytes <= 0 {
		opts.MaxInlineBytes = DefaultMaxInlineBytes
	}
	return &Tool{opts: opts, dirs: localfs.New(opts.LocalDirs, opts.DataRoots)}
}

// Exec runs one operation (tools.Adapt turns Exec into a tools.Tool).
// Keys read:
//
//	action | operation   upload (default) | download | delete | list
//	auth | credential    a gcs credential (name or mapping {endpoint,
//	                     service_account_json, project}); default: the
//	                     process's client (ADC; STORAGE_EMULATOR_HOST)
//	upload:   destination | uri (gs://bucket/object, or bucket + object |
//	          key | blob); the data from source (a local file), content
//	          (text) or data (a value stored as JSON); content_type
//	          (default from the file extension, JSON for data, else
//	          text/plain or application/octet-stream); metadata (mapping)
//	download: source | uri (or bucket + object); destination (a local
//	          file) or none (the object comes back in the result)
//	delete:   uri (or bucket + object); a missing object is not an error
//	          when missing_ok is true
//	list:     bucket (or uri gs://bucket/prefix), prefix
//
// Results: upload {"status": "success", "uri", "bucket", "object", "size",
// "content_type", "generation"}; download to a file adds "destination";
// download to the result adds "content" (text, or base64 with "encoding":
// "base64" for binary objects) and, for a JSON object, "data" (the decoded
// value); delete {"status", "uri", "deleted": bool}; list {"status",
// "bucket", "prefix", "objects": [{"name", "size", "content_type",
// "updated"}], "count"}. Errors: bad keys, a local path outside
// Options.LocalDirs or an object over the inline cap are kind "config"; a
// missing object or bucket kind "not_found"; 401/403 kind "auth"; 408, 429,
// 5xx and network failures kind "storage" (retryable); other API errors
// kind "storage"; the deadline kind "timeout".
func (t *Tool) Exec(ctx context.Context, _, config map[string]any, timeoutS float64) types.Outcome {
	var cfg toolspec.GCS
	if err := toolspec.Decode(config, &cfg); err != nil {
		return conf.ConfigError("%v", err)
	}
	action := "upload"
	if a := strings.TrimSpace(cfg.Action); a != "" {
		action = strings.ToLower(a)
	}
	var fields map[string]any
	if cfg.Auth != nil {
		f, err := creds.Resolve(ctx, t.opts.Credentials, cfg.Auth, "gcs task", credentials.KindGCS)
		if err != nil {
			return creds.Outcome(err)
		}
		fields = f
	}
	if b, ok := t.reserved(cfg); ok {
		return conf.Fail(types.ErrKindForbidden, false, "gcs task: bucket %q is the engine's results bucket: tasks never touch it (read a stored result with an artifact or result_fetch task)", b)
	}
	timeout := t.opts.DefaultTimeout
	if timeoutS > 0 {
		timeout = time.Duration(timeoutS * float64(time.Second))
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client, err := t.opts.Clients.Client(rctx, fields)
	if err != nil {
		return conf.ConfigError("gcs task: %v", err)
	}
	var out types.Outcome
	switch action {
	case "upload", "put", "write":
		out = t.upload(rctx, client, cfg)
	case "download", "get", "read":
		out = t.download(rctx, client, cfg)
	case "delete", "remove":
		out = t.delete(rctx, client, cfg)
	case "list":
		out = t.list(rctx, client, cfg)
	default:
		return conf.ConfigError("gcs task: action %q is not supported (upload, download, delete or list)", action)
	}
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

// reserved returns a reserved bucket that cfg names (in bucket, or a
// gs:// URI under any key an action reads).
func (t *Tool) reserved(cfg toolspec.GCS) (string, bool) {
	if len(t.opts.ReservedBuckets) == 0 {
		return "", false
	}
	var names []string
	if b := strings.TrimSpace(cfg.Bucket); b != "" {
		names = append(names, b)
	}
	for _, u := range []string{cfg.Destination, cfg.URI, cfg.Source} {
		if strings.HasPrefix(strings.TrimSpace(u), "gs://") {
			if b, _, err := gcsconn.ParseURI(u); err == nil {
				names = append(names, b)
			} else {
				rest := strings.TrimPrefix(strings.TrimSpace(u), "gs://")
				b, _, _ := strings.Cut(rest, "/")
				names = append(names, b)
			}
		}
	}
	for _, n := range names {
		for _, r := range t.opts.ReservedBuckets {
			if r != "" && strings.EqualFold(n, r) {
				return n, true
			}
		}
	}
	return "", false
}

// object reads the object named by the first of uris that is given (keys
// names them, for the message) or bucket + object.
func object(cfg toolspec.GCS, keys string, uris ...string) (bucket, name string, err error) {
	for _, u := range uris {
		if u != "" {
			if strings.HasPrefix(strings.TrimSpace(u), "gs://") {
				return gcsconn.ParseURI(u)
			}
			break
		}
	}
	b, o := strings.TrimSpace(cfg.Bucket), strings.TrimSpace(cfg.Object)
	if b != "" && o != "" {
		return b, strings.TrimPrefix(o, "/"), nil
	}
	return "", "", fmt.Errorf("name the object: %s gs://bucket/object, or bucket and object", keys)
}

func (t *Tool) upload(ctx context.Context, c *storage.Client, cfg toolspec.GCS) types.Outcome {
	bucket, name, err := object(cfg, "destination | uri", cfg.Destination, cfg.URI)
	if err != nil {
		return conf.ConfigError("gcs task: upload: %v", err)
	}
	var r io.Reader
	var size int64
	contentType := cfg.ContentType
	switch {
	case cfg.Source != "":
		src := cfg.Source
		if strings.HasPrefix(src, "gs://") {
			return conf.ConfigError("gcs task: upload: source must be a local file path (use content or data for values)")
		}
		p, err := t.localPath(ctx, src, false)
		if err != nil {
			return conf.ConfigError("gcs task: upload: %v", err)
		}
		f, err := os.Open(p)
		if err != nil {
			return conf.ConfigError("gcs task: upload: source %s: %v", p, errors.Unwrap(err))
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return conf.ConfigError("gcs task: upload: source %s is not a regular file", p)
		}
		r, size = f, st.Size()
		if contentType == "" {
			contentType = mime.TypeByExtension(filepath.Ext(p))
		}
	case cfg.Content != "":
		s := cfg.Content
		r, size = strings.NewReader(s), int64(len(s))
		if contentType == "" {
			contentType = "text/plain; charset=utf-8"
		}
	case cfg.Data != nil:
		b, err := json.Marshal(cfg.Data)
		if err != nil {
			return conf.ConfigError("gcs task: upload: data cannot be encoded as JSON: %v", err)
		}
		r, size = strings.NewReader(string(b)), int64(len(b))
		if contentType == "" {
			contentType = "application/json"
		}
	default:
		return conf.ConfigError("gcs task: upload: give source (a local file), content (text) or data (a value)")
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	obj := c.Bucket(bucket).Object(name).Retryer(storage.WithPolicy(storage.RetryNever))
	w := obj.NewWriter(ctx)
	w.ContentType = contentType
	w.ChunkSize = 0 // one request: no resumable session to leak on failure
	if cfg.Metadata != nil {
		w.Metadata = map[string]string{}
		for k, v := range cfg.Metadata {
			w.Metadata[k] = conf.Stringify(v)
		}
	}
	if _, err := io.Copy(w, r); err != nil {
		_ = w.Close()
		return storageFailure("upload", bucket, name, err)
	}
	if err := w.Close(); err != nil {
		return storageFailure("upload", bucket, name, err)
	}
	attrs := w.Attrs()
	res := map[string]any{"status": "success", "uri": "gs://" + bucket + "/" + name, "bucket": bucket, "object": name,
		"size": size, "content_type": contentType}
	if attrs != nil {
		res["size"], res["generation"] = attrs.Size, attrs.Generation
	}
	return types.Outcome{Status: types.StatusOK, Result: res}
}

func (t *Tool) download(ctx context.Context, c *storage.Client, cfg toolspec.GCS) types.Outcome {
	bucket, name, err := object(cfg, "source | uri", cfg.Source, cfg.URI)
	if err != nil {
		return conf.ConfigError("gcs task: download: %v", err)
	}
	uri := "gs://" + bucket + "/" + name
	obj := c.Bucket(bucket).Object(name).Retryer(storage.WithPolicy(storage.RetryNever))
	var dest string
	if d := cfg.Destination; d != "" {
		p, err := t.localPath(ctx, d, true)
		if err != nil {
			return conf.ConfigError("gcs task: download: %v", err)
		}
		dest = p
	}
	rd, err := obj.NewReader(ctx)
	if err != nil {
		return storageFailure("download", bucket, name, err)
	}
	defer rd.Close()
	res := map[string]any{"status": "success", "uri": uri, "bucket": bucket, "object": name, "content_type": rd.Attrs.ContentType}
	if dest != "" {
		tmp, err := os.CreateTemp(filepath.Dir(dest), ".noetl-gcs-*")
		if err != nil {
			return conf.ConfigError("gcs task: download: destination %s: %v", dest, errors.Unwrap(err))
		}
		n, err := io.Copy(tmp, rd)
		cerr := tmp.Close()
		if err != nil || cerr != nil {
			os.Remove(tmp.Name())
			if err == nil {
				err = cerr
			}
			return storageFailure("download", bucket, name, err)
		}
		if err := os.Rename(tmp.Name(), dest); err != nil {
			os.Remove(tmp.Name())
			return conf.ConfigError("gcs task: download: destination %s: %v", dest, errors.Unwrap(err))
		}
		res["size"], res["destination"] = n, dest
		return types.Outcome{Status: types.StatusOK, Result: res}
	}
	if rd.Attrs.Size > t.opts.MaxInlineBytes {
		return conf.ConfigError("gcs task: download: %s has %d bytes, over the %d-byte limit of a result; download it to a file (destination)", uri, rd.Attrs.Size, t.opts.MaxInlineBytes)
	}
	data, err := io.ReadAll(io.LimitReader(rd, t.opts.MaxInlineBytes+1))
	if err != nil {
		return storageFailure("download", bucket, name, err)
	}
	if int64(len(data)) > t.opts.MaxInlineBytes {
		return conf.ConfigError("gcs task: download: %s is over the %d-byte limit of a result; download it to a file (destination)", uri, t.opts.MaxInlineBytes)
	}
	res["size"] = int64(len(data))
	if utf8.Valid(data) {
		res["content"] = string(data)
		mt, _, _ := mime.ParseMediaType(rd.Attrs.ContentType)
		if strings.Contains(mt, "json") {
			if v, err := jsonx.Decode(data); err == nil {
				res["data"] = v
			}
		}
	} else {
		res["content"], res["encoding"] = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return types.Outcome{Status: types.StatusOK, Result: res}
}

func (t *Tool) delete(ctx context.Context, c *storage.Client, cfg toolspec.GCS) types.Outcome {
	bucket, name, err := object(cfg, "uri | source | destination", cfg.URI, cfg.Source, cfg.Destination)
	if err != nil {
		return conf.ConfigError("gcs task: delete: %v", err)
	}
	missingOK := cfg.MissingOK
	err = c.Bucket(bucket).Object(name).Retryer(storage.WithPolicy(storage.RetryNever)).Delete(ctx)
	deleted := true
	if errors.Is(err, storage.ErrObjectNotExist) && missingOK {
		err, deleted = nil, false
	}
	if err != nil {
		return storageFailure("delete", bucket, name, err)
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"status": "success", "uri": "gs://" + bucket + "/" + name, "deleted": deleted}}
}

func (t *Tool) list(ctx context.Context, c *storage.Client, cfg toolspec.GCS) types.Outcome {
	bucket, prefix := cfg.Bucket, cfg.Prefix
	if u := cfg.URI; u != "" {
		rest, isGS := strings.CutPrefix(strings.TrimSpace(u), "gs://")
		if !isGS {
			return conf.ConfigError("gcs task: list: uri must be gs://bucket[/prefix]")
		}
		bucket, prefix, _ = strings.Cut(rest, "/")
	}
	if strings.TrimSpace(bucket) == "" {
		return conf.ConfigError("gcs task: list: bucket (or uri gs://bucket/prefix) is required")
	}
	it := c.Bucket(bucket).Retryer(storage.WithPolicy(storage.RetryNever)).Objects(ctx, &storage.Query{Prefix: prefix})
	objs := []any{}
	for len(objs) < MaxList {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return storageFailure("list", bucket, prefix, err)
		}
		objs = append(objs, map[string]any{"name": a.Name, "size": a.Size, "content_type": a.ContentType, "updated": a.Updated.UTC().Format(time.RFC3339Nano)})
	}
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"status": "success", "bucket": bucket, "prefix": prefix, "objects": objs, "count": int64(len(objs))}}
}

// localPath makes p absolute and checks it is under a LocalDirs root, or
// with a workspace in ctx under the workspace or a data root (for a file
// to write, the parent directory must exist there).
func (t *Tool) localPath(ctx context.Context, p string, forWrite bool) (string, error) {
	return t.dirs.Path(ctx, p, forWrite, "gcs tasks")
}

// storageFailure classifies a storage error.
func storageFailure(op, bucket, name string, err error) types.Outcome {
	what := fmt.Sprintf("gcs task: %s gs://%s/%s", op, bucket, name)
	if egress.IsRefused(err) {
		return conf.Fail(types.ErrKindForbiddenAddress, false, "%s: %v", what, err)
	}
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) {
		return conf.Fail(types.ErrKindNotFound, false, "%s: %v", what, err)
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch {
		case ge.Code == http.StatusNotFound:
			return conf.Fail(types.ErrKindNotFound, false, "%s: %v", what, err)
		case ge.Code == http.StatusUnauthorized || ge.Code == http.StatusForbidden:
			return conf.Fail(types.ErrKindAuth, false, "%s: %v", what, err)
		case ge.Code == http.StatusRequestTimeout || ge.Code == http.StatusTooManyRequests || ge.Code >= 500:
			return conf.Fail(types.ErrKindStorage, true, "%s: %v", what, err)
		}
		return conf.Fail(types.ErrKindStorage, false, "%s: %v", what, err)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) {
		return conf.Fail(types.ErrKindStorage, true, "%s: %v", what, err)
	}
	return conf.Fail(types.ErrKindStorage, true, "%s: %v", what, err)
}
