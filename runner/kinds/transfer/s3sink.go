package transfer

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/noetl/gcpengine/runner/kinds/internal/s3conn"
	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/types"
)

// s3TargetKeys are the target keys passed to the s3 kind's put (key is
// the object's key here: an s3 target has no upsert key).
var s3TargetKeys = []string{"uri", "bucket", "key", "object", "auth", "credential", "endpoint", "region", "metadata", "content_type"}

// objectFormats are the formats of an object end (source or target), and
// the content type an s3 target is written with.
var objectFormats = map[string]string{"json": "application/json", "jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}

// objectFormat is the format named by an end's `format` key (ndjson is
// jsonl), else the one the object key's extension implies (.csv, .jsonl
// or .ndjson, else json).
func objectFormat(end map[string]any, key string) (string, error) {
	f, _ := conf.String(end, "format")
	f = strings.ToLower(strings.TrimSpace(f))
	switch f {
	case "":
		switch strings.ToLower(path.Ext(key)) {
		case ".csv":
			return "csv", nil
		case ".jsonl", ".ndjson":
			return "jsonl", nil
		}
		return "json", nil
	case "ndjson":
		return "jsonl", nil
	}
	if _, ok := objectFormats[f]; !ok {
		return "", fmt.Errorf("format %q is not supported (json, jsonl or csv)", f)
	}
	return f, nil
}

// s3Object checks an s3 target's object name (uri s3://bucket/key, or
// bucket and key) and returns its URI.
func s3Object(dst map[string]any) (string, error) {
	if u, ok := conf.String(dst, "uri"); ok && strings.TrimSpace(u) != "" {
		b, k, err := s3conn.ParseURI(u)
		if err != nil {
			return "", err
		}
		if k == "" || strings.HasSuffix(k, "/") {
			return "", fmt.Errorf("%q names no object key (s3://bucket/key)", u)
		}
		return "s3://" + b + "/" + k, nil
	}
	b, _ := conf.String(dst, "bucket")
	k, _ := conf.String(dst, "key", "object")
	b, k = strings.TrimSpace(b), strings.TrimPrefix(strings.TrimSpace(k), "/")
	if b == "" || k == "" {
		return "", errors.New("target.uri (s3://bucket/key), or target.bucket and target.key, is required for an s3 target")
	}
	return "s3://" + b + "/" + k, nil
}

// objectWriter encodes the target's records as one object (json: a list
// of objects; jsonl: one object a line; csv: a header row of the target
// columns, then one row a record) into a temporary file, and puts the
// file with the s3 kind at commit: the object appears whole, or not at
// all (a failed attempt leaves what was there).
type objectWriter struct {
	format string
	f      *os.File
	w      *bufio.Writer
	cw     *csv.Writer
	cols   []string
	rows   int64
}

// newObjectWriter opens the temporary file in the task's workspace (its
// disk limit bounds the object; the runner gives every task one), else in
// the temporary directory; cols are the target columns.
func newObjectWriter(ctx context.Context, format string, cols []string) (*objectWriter, error) {
	dir := ""
	if ws := sandbox.WorkspaceFrom(ctx); ws != nil {
		dir = ws.Dir
	}
	f, err := os.CreateTemp(dir, "noetl-transfer-*")
	if err != nil {
		return nil, fmt.Errorf("a temporary file for the object: %w", err)
	}
	o := &objectWriter{format: format, f: f, w: bufio.NewWriterSize(f, 256<<10), cols: cols}
	switch format {
	case "json":
		_, err = o.w.WriteString("[")
	case "csv":
		o.cw = csv.NewWriter(o.w)
		if len(cols) > 0 {
			err = o.cw.Write(cols)
		}
	}
	if err != nil {
		o.close()
		return nil, err
	}
	return o, nil
}

// write encodes rows (values in column order).
func (o *objectWriter) write(rows [][]any) error {
	for _, r := range rows {
		switch o.format {
		case "csv":
			rec := make([]string, len(r))
			for i, v := range r {
				rec[i] = csvField(v)
			}
			if err := o.cw.Write(rec); err != nil {
				return err
			}
		default:
			if o.format == "json" && o.rows > 0 {
				if _, err := o.w.WriteString(","); err != nil {
					return err
				}
			}
			if err := o.record(r); err != nil {
				return err
			}
			if o.format == "jsonl" {
				if err := o.w.WriteByte('\n'); err != nil {
					return err
				}
			}
		}
		o.rows++
	}
	return nil
}

// record writes one JSON object whose keys are the columns in order.
func (o *objectWriter) record(r []any) error {
	o.w.WriteByte('{')
	for i, c := range o.cols {
		if i > 0 {
			o.w.WriteByte(',')
		}
		k, _ := json.Marshal(c)
		o.w.Write(k)
		o.w.WriteByte(':')
		var v any
		if i < len(r) {
			v = r[i]
		}
		b, err := json.Marshal(v)
		if err != nil { // NaN, infinities, channels: their text
			b, _ = json.Marshal(conf.Stringify(v))
		}
		o.w.Write(b)
	}
	return o.w.WriteByte('}')
}

// csvField is a value's CSV text: empty for null, JSON for lists and
// objects, else its plain text.
func csvField(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		b, err := json.Marshal(v)
		if err == nil {
			return string(b)
		}
	}
	return conf.Stringify(v)
}

// finish ends the encoding and rewinds the file; it returns the object's
// size in bytes.
func (o *objectWriter) finish() (int64, error) {
	if o.format == "json" {
		if _, err := o.w.WriteString("]"); err != nil {
			return 0, err
		}
	}
	if o.cw != nil {
		o.cw.Flush()
		if err := o.cw.Error(); err != nil {
			return 0, err
		}
	}
	if err := o.w.Flush(); err != nil {
		return 0, err
	}
	size, err := o.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	_, err = o.f.Seek(0, io.SeekStart)
	return size, err
}

func (o *objectWriter) close() {
	if o.f != nil {
		o.f.Close()
		os.Remove(o.f.Name())
		o.f = nil
	}
}

// outcomeError carries the outcome of a failed put (the s3 kind's
// classification) through the sink's error path.
type outcomeError struct{ o types.Outcome }

func (e *outcomeError) Error() string {
	if e.o.Error != nil {
		return e.o.Error.Message
	}
	return "put failed"
}

// putObject writes the object at commit with the s3 kind (its credential,
// endpoint, egress policy and refusal of the engine's bucket).
func (s *sink) putObject(ctx context.Context) error {
	if s.obj == nil { // an empty source and no mapping: an empty object
		o, err := newObjectWriter(ctx, s.format, nil)
		if err != nil {
			return err
		}
		s.obj = o
	}
	size, err := s.obj.finish()
	if err != nil {
		return err
	}
	req := map[string]any{"action": "put"}
	for _, k := range s3TargetKeys {
		if v, ok := s.p.target[k]; ok {
			req[k] = v
		}
	}
	ct := objectFormats[s.format]
	if v, ok := conf.String(s.p.target, "content_type"); ok && strings.TrimSpace(v) != "" {
		ct = v
	}
	out := s.t.opts.S3.PutObject(ctx, req, s.obj.f, size, ct)
	if out.Status != types.StatusOK {
		return &outcomeError{out}
	}
	res, _ := out.Result.(map[string]any)
	s.put = res
	return nil
}
