package transfer

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strings"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/types"
)

// s3Keys are the source keys passed to the s3 kind's get.
var s3Keys = []string{"uri", "bucket", "key", "object", "auth", "credential", "endpoint", "region"}

// fromS3 reads an object of an S3-compatible store with the s3 kind (its
// credential, endpoint and egress policy) and emits its records: format
// json (a list of objects, or one object; data_path as for http), jsonl
// (one object a line) or csv (a header row, then rows of text); the
// default follows the key's extension (.csv, .jsonl/.ndjson, else json).
// The object is read whole, within the s3 kind's inline cap (32 MiB).
func (t *Tool) fromS3(rctx, parent context.Context, p plan, emit func([]string, []map[string]any) error, s *sink) (int64, *types.Outcome) {
	if t.opts.S3 == nil {
		o := conf.ConfigError("transfer task: the s3 kind is not available")
		return 0, &o
	}
	req := map[string]any{"action": "get"}
	for _, k := range s3Keys {
		if v, ok := p.source[k]; ok {
			req[k] = v
		}
	}
	out := t.opts.S3.Exec(rctx, nil, req, 0)
	if out.Status != types.StatusOK {
		o := prefix(out, "transfer source")
		o.Result = nil
		return 0, &o
	}
	res, _ := out.Result.(map[string]any)
	if res["encoding"] == "base64" {
		o := conf.Fail(types.ErrKindTransfer, false, "transfer source: %v is not text (json, jsonl or csv)", res["uri"])
		return 0, &o
	}
	content, _ := res["content"].(string)
	key, _ := res["key"].(string)
	format, err := objectFormat(p.source, key)
	if err != nil {
		o := conf.ConfigError("transfer task: source.%v", err)
		return 0, &o
	}
	var data any
	switch format {
	case "json":
		v, err := jsonx.Decode([]byte(content))
		if err != nil {
			o := conf.Fail(types.ErrKindTransfer, false, "transfer source: %v is not JSON: %v", res["uri"], err)
			return 0, &o
		}
		data = v
		if dp, ok := conf.String(p.source, "data_path", "path", "json_path"); ok {
			for _, part := range strings.Split(strings.TrimPrefix(strings.TrimSpace(dp), "$."), ".") {
				if part == "" {
					continue
				}
				m, isMap := data.(map[string]any)
				if !isMap {
					o := conf.Fail(types.ErrKindTransfer, false, "transfer source: data_path %q: %q is not inside an object", dp, part)
					return 0, &o
				}
				data = m[part]
			}
		}
	case "jsonl":
		list := []any{}
		sc := bufio.NewScanner(strings.NewReader(content))
		sc.Buffer(make([]byte, 64<<10), 32<<20)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			v, err := jsonx.Decode([]byte(line))
			if err != nil {
				o := conf.Fail(types.ErrKindTransfer, false, "transfer source: %v line %d is not JSON: %v", res["uri"], n, err)
				return 0, &o
			}
			list = append(list, v)
		}
		data = list
	case "csv":
		r := csv.NewReader(strings.NewReader(content))
		header, err := r.Read()
		if err == io.EOF {
			data = []any{}
			break
		}
		if err != nil {
			o := conf.Fail(types.ErrKindTransfer, false, "transfer source: %v: %v", res["uri"], err)
			return 0, &o
		}
		list := []any{}
		for {
			row, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				o := conf.Fail(types.ErrKindTransfer, false, "transfer source: %v: %v", res["uri"], err)
				return 0, &o
			}
			rec := map[string]any{}
			for i, h := range header {
				if i < len(row) {
					rec[h] = row[i]
				}
			}
			list = append(list, rec)
		}
		data = list
	}
	return emitList(rctx, parent, p, data, fmt.Sprintf("%v", res["uri"]), emit, s)
}
