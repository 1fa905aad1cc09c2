package runnerclient

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/noetl/gcpengine/shared/oidc"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/grant"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// The execution ids of these tests: ids carry their creation time
// (types.IDTime), which dates the physical keys.
const (
	execA = "300000000000000001"
	execB = "300000000000000002"
)

// tier is a control plane's results tier behind a signed-URL gateway, and
// a runner whose Client grants from it.
type tier struct {
	store  *results.Store
	client *Client
	calls  *atomic.Int64 // requests the runner served
}

// grantedTier starts the gateway over an in-memory bucket and a runner
// serving reg, and returns its tier.
func grantedTier(t *testing.T, reg tools.Registry) tier {
	t.Helper()
	key, err := oidc.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	bucket := results.NewMemoryBucket("noetl-results")
	gw := httptest.NewServer(&grant.Gateway{Keys: map[string]*rsa.PublicKey{testInvoker: &key.PublicKey},
		Backend: func(b string) (results.Backend, bool) { return bucket, b == "noetl-results" }})
	t.Cleanup(gw.Close)
	u, _ := url.Parse(gw.URL)
	signer := &grant.Signer{GoogleAccessID: testInvoker, Hostname: u.Host, Insecure: true,
		SignBytes: func(b []byte) ([]byte, error) {
			h := sha256.Sum256(b)
			return rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, h[:])
		}}
	calls := &atomic.Int64{}
	counted := tools.Registry{}
	for k, tl := range reg {
		counted[k] = toolFunc(func(ctx context.Context, req tools.Request) types.Outcome {
			calls.Add(1)
			return tl.Run(ctx, req)
		})
	}
	c, _ := served(t, counted, nil)
	st := &results.Store{Backend: bucket, InlineMax: 1024}
	c.Results = &Granter{Store: st, Signer: signer}
	return tier{store: st, client: c, calls: calls}
}

// rowsOf builds n rows of two columns.
func rowsOf(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"id": int64(i), "name": fmt.Sprintf("row-%d", i)}
	}
	return out
}

// stored offloads a table of n rows as a result of execution id.
func stored(t *testing.T, st *results.Store, id string, n int) map[string]any {
	t.Helper()
	ctx := results.WithReader(context.Background(), results.Reader{Execution: id})
	v, err := st.OffloadWith(ctx, types.ResultCoords{ExecutionID: id, Step: "produce", Frame: 1, Attempt: 1}, rowsOf(n), results.OffloadOptions{Limit: 0})
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := v.(map[string]any)
	if !ok || !results.IsRef(ref) {
		t.Fatalf("offload gave %#v, want a reference", v)
	}
	return map[string]any{results.RefKey: ref[results.RefKey]}
}

// reader counts the rows of the stored result cfg.ref names (a reference
// or a URN) through the request's tier, and tries to open cfg.steal, a
// key it was not granted.
var reader = toolFunc(func(ctx context.Context, req tools.Request) types.Outcome {
	st := results.StoreFrom(ctx, nil)
	if st == nil {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "config", Message: "no tier in the runner"}}
	}
	ref := req.Config["ref"]
	if uri, ok := ref.(string); ok {
		r, err := st.ResolveURN(ctx, uri)
		if err != nil {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "resolve", Message: err.Error()}}
		}
		ref = r
	}
	tr, err := st.OpenTable(ctx, ref)
	if err != nil {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "open", Message: err.Error()}}
	}
	defer tr.Close()
	n := 0
	for {
		rows, err := tr.NextRows()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "read", Message: err.Error()}}
		}
		n += len(rows)
	}
	out := map[string]any{"rows": int64(n)}
	if steal, _ := req.Config["steal"].(string); steal != "" {
		_, err := st.Backend.Open(ctx, steal, 0)
		out["steal_forbidden"] = errors.Is(err, results.ErrForbidden)
	}
	return types.Outcome{Status: types.StatusOK, Result: out}
})

// producer streams a table of cfg.rows rows into the sink the runner got.
var producer = toolFunc(func(ctx context.Context, req tools.Request) types.Outcome {
	sink, ok := results.SinkFrom(ctx)
	if !ok {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "config", Message: "no sink in the runner"}}
	}
	n, _ := req.Config["rows"].(int64)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String}}, nil)
	if err := sink.Begin(schema, results.TableMeta{}); err != nil {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "sink", Message: err.Error()}}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := int64(0); i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", i))
		if (i+1)%1000 == 0 || i == n-1 {
			rec := b.NewRecordBatch()
			err := sink.Write(rec)
			rec.Release()
			if err != nil {
				sink.Abort()
				return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "sink", Message: err.Error()}}
			}
		}
	}
	v, err := sink.End()
	if err != nil {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "sink", Message: err.Error()}}
	}
	return types.Outcome{Status: types.StatusOK, Result: v}
})

// The runner's reads check the digest the control plane's tier checks
// (ResultGrants.ReadCheck): a reference whose sha256 does not match its
// object fails under the sha256 check, and reads under the default
// crc32c; one whose crc32c does not match fails under the default.
func TestGrantedReadsCheckTheControlPlanesDigest(t *testing.T) {
	tr := grantedTier(t, tools.Registry{tools.KindTransfer: reader})
	ctx := results.WithReader(context.Background(), results.Reader{Execution: execA})
	for _, c := range []struct {
		check   results.ReadCheck
		field   string
		wrong   string
		refused bool
	}{
		{"", results.DigestKey, strings.Repeat("0", 64), false},
		{results.ReadCheckSHA256, results.DigestKey, strings.Repeat("0", 64), true},
		{"", results.CRC32CKey, "AAAAAA==", true},
		{results.ReadCheckSHA256, results.CRC32CKey, "AAAAAA==", false},
	} {
		ref := stored(t, tr.store, execA, 3000)
		ref[results.RefKey].(map[string]any)[c.field] = c.wrong
		tr.store.ReadCheck = c.check
		out := tr.client.Tool(tools.KindTransfer).Run(ctx, tools.Request{ExecutionID: execA, Step: "load", Attempt: 1,
			Config: map[string]any{"ref": ref}})
		if !c.refused && (out.Status != types.StatusOK || out.Result.(map[string]any)["rows"] != int64(3000)) {
			t.Errorf("check %q, wrong %s: %+v %+v, want the read to pass", c.check, c.field, out.Result, out.Error)
		}
		if c.refused && (out.Error == nil || out.Error.Kind != "read" || !strings.Contains(out.Error.Message, "it records "+c.field+" "+c.wrong)) {
			t.Errorf("check %q, wrong %s: %+v %+v, want the read to fail on the digest", c.check, c.field, out.Result, out.Error)
		}
	}
}

// A runner kind reads the stored results its configuration names — by
// reference or by URN — through the grants, and nothing else: another
// key of the same bucket is refused in the runner.
func TestGrantedReads(t *testing.T) {
	tr := grantedTier(t, tools.Registry{tools.KindTransfer: reader})
	own := stored(t, tr.store, execA, 5000)
	other := stored(t, tr.store, execB, 10)
	otherKey := other[results.RefKey].(map[string]any)["key"].(string)
	ctx := results.WithReader(context.Background(), results.Reader{Execution: execA})
	for name, ref := range map[string]any{"reference": own, "urn": own[results.RefKey].(map[string]any)["uri"]} {
		t.Run(name, func(t *testing.T) {
			out := tr.client.Tool(tools.KindTransfer).Run(ctx, tools.Request{ExecutionID: execA, Step: "load", Attempt: 1,
				Config: map[string]any{"ref": ref, "steal": otherKey}})
			if out.Status != types.StatusOK {
				t.Fatalf("outcome %+v", out.Error)
			}
			res := out.Result.(map[string]any)
			if res["rows"] != int64(5000) {
				t.Errorf("read %v rows, want 5000", res["rows"])
			}
			if res["steal_forbidden"] != true {
				t.Errorf("another execution's object, not granted, was not refused as forbidden in the runner: %v", res)
			}
		})
	}
}

// A reference or URN of another execution is refused in the control
// plane, before anything reaches the runner.
func TestGrantRefusesAnotherExecution(t *testing.T) {
	tr := grantedTier(t, tools.Registry{tools.KindTransfer: reader})
	other := stored(t, tr.store, execB, 10)
	ctx := results.WithReader(context.Background(), results.Reader{Execution: execA})
	for name, ref := range map[string]any{"reference": other, "urn": other[results.RefKey].(map[string]any)["uri"],
		"reference relabelled": map[string]any{results.RefKey: map[string]any{"uri": strings.Replace(other[results.RefKey].(map[string]any)["uri"].(string), execB, execA, 1),
			"key": other[results.RefKey].(map[string]any)["key"], "format": "feather"}}} {
		t.Run(name, func(t *testing.T) {
			out := tr.client.Tool(tools.KindTransfer).Run(ctx, tools.Request{ExecutionID: execA, Step: "load", Attempt: 1, Config: map[string]any{"ref": ref}})
			if out.Status == types.StatusOK || out.Error.Kind != types.ErrKindForbidden || out.Error.Retryable {
				t.Fatalf("outcome %+v %+v, want forbidden, not retryable", out.Status, out.Error)
			}
		})
	}
	if n := tr.calls.Load(); n != 0 {
		t.Fatalf("the runner ran %d attempts naming another execution's result", n)
	}
}

// A sink kind streams its table into the object it was granted — the key
// the control plane's own sink would have written — and the control
// plane reads it back, digest checked.
func TestGrantedWrite(t *testing.T) {
	for name, opts := range map[string]results.OffloadOptions{
		"defaults":     {Limit: -1},
		"ttl and zstd": {Limit: -1, TTL: time.Hour, Compression: "zstd"}, // a signed metadata header
	} {
		t.Run(name, func(t *testing.T) { grantedWrite(t, opts) })
	}
}

func grantedWrite(t *testing.T, opts results.OffloadOptions) {
	tr := grantedTier(t, tools.Registry{tools.KindDuckDB: producer})
	coords := types.ResultCoords{ExecutionID: execA, Step: "produce", Frame: 2, Attempt: 1}
	ctx := results.WithReader(context.Background(), results.Reader{Execution: execA})
	ctx = results.WithSinks(ctx, func() *results.Sink { return tr.store.NewSink(ctx, coords, opts) })
	out := tr.client.Tool(tools.KindDuckDB).Run(ctx, tools.Request{ExecutionID: execA, Step: "produce", Attempt: 1, Config: map[string]any{"rows": int64(20000)}})
	if out.Status != types.StatusOK {
		t.Fatalf("outcome %+v", out.Error)
	}
	ref, _ := out.Result.(map[string]any)
	if !results.IsRef(ref) {
		t.Fatalf("result %#v, want a reference (20000 rows exceed the 1 KiB inline budget)", out.Result)
	}
	inner := ref[results.RefKey].(map[string]any)
	if want := tr.store.PhysicalKey(tr.store.Defaulted(coords), results.FormatFeather); inner["key"] != want {
		t.Fatalf("written at %v, want %s", inner["key"], want)
	}
	if _, has := inner["expires"]; has != (opts.TTL > 0) {
		t.Fatalf("expires %v with ttl %v", inner["expires"], opts.TTL)
	}
	trd, err := tr.store.OpenTable(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer trd.Close()
	n := 0
	for {
		rows, err := trd.NextRows()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += len(rows)
	}
	if n != 20000 {
		t.Fatalf("read back %d rows, want 20000", n)
	}
	// A small table stays inline: nothing is written.
	out = tr.client.Tool(tools.KindDuckDB).Run(ctx, tools.Request{ExecutionID: execA, Step: "produce", Attempt: 1, Config: map[string]any{"rows": int64(3)}})
	if out.Status != types.StatusOK || results.IsRef(out.Result) {
		t.Fatalf("small table: %+v %#v, want inline rows", out.Error, out.Result)
	}
}

// Two deliveries of one attempt stream different tables to the same
// granted key: the PUT grant creates the object only where none is, so
// the second runner call's sink gets 412 and takes the object there as
// its result (read through the read-back grant); the control plane
// reads that reference back with its digest checked.
func TestGrantedWriteAdoptsTheObjectThere(t *testing.T) {
	tr := grantedTier(t, tools.Registry{tools.KindDuckDB: producer})
	coords := types.ResultCoords{ExecutionID: execA, Step: "produce", Frame: 3, Attempt: 1}
	ctx := results.WithReader(context.Background(), results.Reader{Execution: execA})
	ctx = results.WithSinks(ctx, func() *results.Sink { return tr.store.NewSink(ctx, coords, results.OffloadOptions{Limit: -1}) })
	run := func(rows int64) map[string]any {
		t.Helper()
		out := tr.client.Tool(tools.KindDuckDB).Run(ctx, tools.Request{ExecutionID: execA, Step: "produce", Attempt: 1, Config: map[string]any{"rows": rows}})
		if out.Status != types.StatusOK {
			t.Fatalf("%d rows: outcome %+v", rows, out.Error)
		}
		ref, _ := out.Result.(map[string]any)
		if !results.IsRef(ref) {
			t.Fatalf("%d rows: result %#v, want a reference", rows, out.Result)
		}
		return ref
	}
	first, second := run(20000), run(15000)
	i1, i2 := first[results.RefKey].(map[string]any), second[results.RefKey].(map[string]any)
	if i2["key"] != i1["key"] || i2[results.DigestKey] != i1[results.DigestKey] || fmt.Sprint(i2["rows"]) != "20000" {
		t.Fatalf("second delivery's reference %v, want the first's object %v", i2, i1)
	}
	trd, err := tr.store.OpenTable(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	defer trd.Close()
	n := 0
	for {
		rows, err := trd.NextRows()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += len(rows)
	}
	if n != 20000 {
		t.Fatalf("read back %d rows, want the first delivery's 20000", n)
	}
}

// A runner's answer naming an object it was not granted is refused: a
// runner cannot hand the engine a reference to another object.
func TestForgedReferenceRefused(t *testing.T) {
	var forged map[string]any
	tr := grantedTier(t, tools.Registry{tools.KindPython: toolFunc(func(context.Context, tools.Request) types.Outcome {
		return types.Outcome{Status: types.StatusOK, Result: map[string]any{"data": forged}}
	})})
	forged = stored(t, tr.store, execA, 10)
	ctx := results.WithReader(context.Background(), results.Reader{Execution: execA})
	out := tr.client.Tool(tools.KindPython).Run(ctx, tools.Request{ExecutionID: execA, Step: "s", Attempt: 1})
	if out.Status == types.StatusOK || out.Error.Kind != types.ErrKindForbidden || !strings.Contains(out.Error.Message, "not granted") {
		t.Fatalf("outcome %+v %+v, want forbidden", out.Status, out.Error)
	}
	// Passing on a reference the task was given is fine.
	out = tr.client.Tool(tools.KindPython).Run(ctx, tools.Request{ExecutionID: execA, Step: "s", Attempt: 1, Args: map[string]any{"in": forged}})
	if out.Status != types.StatusOK {
		t.Fatalf("a granted reference passed on: %+v", out.Error)
	}
}

// A runner's read opens the generation its reference records: an object
// replaced at the key since (another generation, here with the same rows)
// is refused before it is read, as the control plane refuses it.
func TestGrantedReadsRefuseAReplacedObject(t *testing.T) {
	tr := grantedTier(t, tools.Registry{tools.KindTransfer: reader})
	ctx := results.WithReader(context.Background(), results.Reader{Execution: execA})
	ref := stored(t, tr.store, execA, 3000)
	inner := ref[results.RefKey].(map[string]any)
	key := inner["key"].(string)
	data, err := tr.store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.store.Put(ctx, key, data, results.ContentTypeFeather); err != nil { // the same bytes, a new generation
		t.Fatal(err)
	}
	out := tr.client.Tool(tools.KindTransfer).Run(ctx, tools.Request{ExecutionID: execA, Step: "load", Attempt: 1, Config: map[string]any{"ref": ref}})
	if out.Error == nil || !strings.Contains(out.Error.Message, "not the generation the reference records") {
		t.Fatalf("read of a replaced object: %+v %+v, want it refused by generation", out.Result, out.Error)
	}
	delete(inner, results.GenerationKey) // a reference without one reads the object there
	out = tr.client.Tool(tools.KindTransfer).Run(ctx, tools.Request{ExecutionID: execA, Step: "load", Attempt: 1, Config: map[string]any{"ref": ref}})
	if out.Status != types.StatusOK || out.Result.(map[string]any)["rows"] != int64(3000) {
		t.Fatalf("read without a generation: %+v %+v", out.Result, out.Error)
	}
}

// TestGrantedWriteQuota: a task that streams a table larger than the
// Granter's MaxObject into the tier is stopped at the quota: its attempt
// fails with kind limit naming NOETL_RESULT_MAX_OBJECT_MB, nothing is
// stored; a table under it is stored as before.
func TestGrantedWriteQuota(t *testing.T) {
	tr := grantedTier(t, tools.Registry{tools.KindDuckDB: producer})
	tr.client.Results.MaxObject = 64 << 10
	coords := types.ResultCoords{ExecutionID: execA, Step: "produce", Frame: 7, Attempt: 1}
	ctx := results.WithReader(context.Background(), results.Reader{Execution: execA})
	ctx = results.WithSinks(ctx, func() *results.Sink { return tr.store.NewSink(ctx, coords, results.OffloadOptions{Limit: -1}) })
	out := tr.client.Tool(tools.KindDuckDB).Run(ctx, tools.Request{ExecutionID: execA, Step: "produce", Attempt: 1, Config: map[string]any{"rows": int64(50000)}})
	if out.Status != types.StatusError || out.Error.Kind != "limit" || !strings.Contains(out.Error.Message, results.QuotaSetting) {
		t.Fatalf("a table over the quota: %+v", out.Error)
	}
	key := tr.store.PhysicalKey(tr.store.Defaulted(coords), results.FormatFeather)
	if ok, _ := tr.store.Backend.Exists(context.Background(), key); ok {
		t.Fatal("the table over the quota was stored")
	}
	coords.Frame = 8
	ctx = results.WithSinks(ctx, func() *results.Sink { return tr.store.NewSink(ctx, coords, results.OffloadOptions{Limit: -1}) })
	if out := tr.client.Tool(tools.KindDuckDB).Run(ctx, tools.Request{ExecutionID: execA, Step: "produce", Attempt: 1, Config: map[string]any{"rows": int64(2000)}}); out.Status != types.StatusOK || !results.IsRef(out.Result) {
		t.Fatalf("a table under the quota: %+v %#v", out.Error, out.Result)
	}
}

// TestBarrierAttemptObject: a barriered postgres attempt is granted its
// own result object (results.AttemptCoords: its execution's, named by
// its barrier key), which the kind writes and reads back through the
// runner; another attempt's grants do not reach it, and a write over the
// quota is refused.
func TestBarrierAttemptObject(t *testing.T) {
	pg := toolFunc(func(ctx context.Context, req tools.Request) types.Outcome {
		o := results.AttemptObjectFrom(ctx)
		if o == nil {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "config", Message: "no attempt object"}}
		}
		if data, _ := req.Config["put"].(string); data != "" {
			if err := o.Put(ctx, []byte(data)); err != nil {
				return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "put", Message: err.Error()}}
			}
		}
		b, err := o.Get(ctx)
		if err != nil {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "get", Message: err.Error()}}
		}
		return types.Outcome{Status: types.StatusOK, Result: string(b)}
	})
	tr := grantedTier(t, tools.Registry{tools.KindPostgres: pg})
	tr.client.Results.MaxObject = 1000
	run := func(barrier, put string) types.Outcome {
		return tr.client.Tool(tools.KindPostgres).Run(context.Background(), tools.Request{ExecutionID: execA, Step: "store", Task: "insert", Attempt: 1,
			Barrier: barrier, BarrierMAC: []byte("0123456789abcdef0123456789abcdef"), Config: map[string]any{"put": put}})
	}
	if out := run(execA+"/store.1/0.1.0", `{"row_count":1}`); out.Status != types.StatusOK || out.Result != `{"row_count":1}` {
		t.Fatalf("put and read back: %+v %v", out.Error, out.Result)
	}
	key, _ := tr.store.AttemptDestination(results.AttemptCoords(execA, "store", "insert", 1, execA+"/store.1/0.1.0"))
	if got, err := tr.store.Backend.Get(context.Background(), key); err != nil || string(got) != `{"row_count":1}` || !strings.Contains(key, "execution="+execA) {
		t.Fatalf("object %s: %q %v", key, got, err)
	}
	// Another attempt (another barrier key) has an object of its own.
	if out := run(execA+"/store.1/0.2.0", ""); out.Status != types.StatusError || out.Error.Kind != "get" {
		t.Fatalf("another attempt read %v (%+v), want none of its own yet", out.Result, out.Error)
	}
	if out := run(execA+"/store.1/0.1.0", strings.Repeat("x", 1001)); out.Status != types.StatusError || out.Error.Kind != "limit" || !strings.Contains(out.Error.Message, results.QuotaSetting) {
		t.Fatalf("a result over the quota: %+v", out.Error)
	}
	// Without a barrier key no object is granted.
	if out := run("", ""); out.Status != types.StatusError || out.Error.Message != "no attempt object" {
		t.Fatalf("no barrier: %+v", out.Error)
	}
}
