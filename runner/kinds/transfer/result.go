package transfer

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/types"
)

// fromResult streams a stored table (source type result) into the target:
// the reference (a {{ step._ref }} map, its inner "$ref" map, or a
// noetl:// URI) is opened in the results tier and read one record batch
// at a time (results.TableReader), each batch written before the next is
// read. Only a result the task's execution may read is opened (its own,
// its parent's or a child's: kind forbidden otherwise). A result that is
// gone fails with kind result_lost naming it, one that is there but
// changed (sha256) or undecodable with kind artifact; the target's
// transaction is rolled back either way. The tier is the request's
// (results.StoreFrom: in the runner, a Store of the objects the control
// plane granted this task) or the one the tool was built with.
func (t *Tool) fromResult(rctx, parent context.Context, p plan, write func([]string, [][]any) error, s *sink) *types.Outcome {
	rs := results.StoreFrom(rctx, t.opts.Results)
	if rs == nil || rs.Backend == nil {
		o := conf.ConfigError("transfer task: no results store is configured (source type result: the control plane grants the runner the references the task names)")
		return &o
	}
	v, _ := conf.Lookup(p.source, "ref", "result_ref", "uri")
	ref := v
	if uri, ok := v.(string); ok {
		uri = strings.TrimSpace(uri)
		if !strings.HasPrefix(uri, results.URIScheme+"://") {
			o := conf.ConfigError("transfer task: source.ref %q is not a stored result (want {{ step._ref }} or a noetl:// URI)", uri)
			return &o
		}
		r, err := rs.ResolveURN(rctx, uri)
		if err != nil {
			o := resultFailure(parent, rctx, err)
			return &o
		}
		ref = r
	}
	tr, err := rs.OpenTable(rctx, ref)
	if err != nil {
		o := resultFailure(parent, rctx, err)
		return &o
	}
	defer tr.Close()
	cols := tr.Columns()
	for {
		rows, err := tr.NextRows()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			o := resultFailure(parent, rctx, err)
			return &o
		}
		if err := write(cols, rows); err != nil {
			o, _ := s.classify(parent, rctx, err)
			return &o
		}
	}
}

// resultFailure classifies an error reading a stored result.
func resultFailure(parent, rctx context.Context, err error) types.Outcome {
	switch {
	case errors.Is(err, results.ErrForbidden):
		return conf.Fail(types.ErrKindForbidden, false, "transfer source: %v", err)
	case errors.Is(err, results.ErrLost): // gone, or changed (ErrDigest, ErrFormat)
		return conf.Fail(types.ErrKindResultLost, false, "transfer source: %v", err)
	case errors.Is(err, results.ErrBadRef), errors.Is(err, results.ErrBadURI):
		return conf.ConfigError("transfer source: %v", err)
	case errors.Is(err, results.ErrNotFound):
		return conf.Fail(types.ErrKindNotFound, false, "transfer source: %v", err)
	case errors.Is(err, results.ErrFormat):
		return conf.Fail(types.ErrKindTransfer, false, "transfer source: %v", err)
	case errors.Is(parent.Err(), context.Canceled):
		return conf.Fail(types.ErrKindCanceled, true, "transfer task canceled: %v", err)
	case rctx.Err() != nil:
		return conf.Fail(types.ErrKindTimeout, true, "transfer task timeout: %v", err)
	}
	return conf.Fail(types.ErrKindStorage, true, "transfer source: %v", err)
}
