package telemetry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/noetl/gcpengine/shared/telemetry/tracetree"
)

func TestSampledAgreesWithTraceIDRatioBased(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, rate := range []float64{0, 0.05, 0.1, 0.5, 0.9, 1} {
		otelS := sdktrace.TraceIDRatioBased(rate)
		n := 0
		for range 2000 {
			var tid trace.TraceID
			for i := range tid {
				tid[i] = byte(r.Uint32())
			}
			want := otelS.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: tid}).Decision == sdktrace.RecordAndSample
			if got := Sampled(tid, rate); got != want {
				t.Fatalf("Sampled(%s, %g) = %v, TraceIDRatioBased says %v", tid, rate, got, want)
			}
			if want {
				n++
			}
		}
		if rate == 0.1 && (n < 140 || n > 260) {
			t.Errorf("rate 0.1 sampled %d of 2000", n)
		}
	}
}

func TestSampler(t *testing.T) {
	never := trace.TraceID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	parent := func(sampled bool) context.Context {
		fl := trace.TraceFlags(0)
		if sampled {
			fl = trace.FlagsSampled
		}
		return trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: never, SpanID: trace.SpanID{1}, TraceFlags: fl, Remote: true,
		}))
	}
	force := []attribute.KeyValue{attribute.Bool(AttrForceSample, true)}
	cases := []struct {
		name  string
		s     sdktrace.Sampler
		ctx   context.Context
		attrs []attribute.KeyValue
		want  sdktrace.SamplingDecision
	}{
		{"root outside the ratio, recording for errors", NewSampler(0.1, true), context.Background(), nil, sdktrace.RecordOnly},
		{"root outside the ratio, no force on error", NewSampler(0.1, false), context.Background(), nil, sdktrace.Drop},
		{"root at rate 1", NewSampler(1, true), context.Background(), nil, sdktrace.RecordAndSample},
		{"forced root", NewSampler(0, false), context.Background(), force, sdktrace.RecordAndSample},
		{"sampled parent", NewSampler(0, false), parent(true), nil, sdktrace.RecordAndSample},
		{"unsampled parent at rate 1", NewSampler(1, true), parent(false), nil, sdktrace.RecordOnly},
		{"unsampled parent, forced child", NewSampler(1, false), parent(false), force, sdktrace.RecordAndSample},
	}
	for _, c := range cases {
		got := c.s.ShouldSample(sdktrace.SamplingParameters{ParentContext: c.ctx, TraceID: never, Name: "x", Attributes: c.attrs}).Decision
		if got != c.want {
			t.Errorf("%s: decision %v, want %v", c.name, got, c.want)
		}
	}
}

// newTestProvider builds a provider like newTracerProvider with an
// in-memory exporter.
func newTestProvider(t *testing.T, rate float64, forceOnError bool) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(NewSampler(rate, forceOnError)),
		sdktrace.WithIDGenerator(idGenerator{}),
		sdktrace.WithSpanProcessor(newExportGate(forceOnError, sdktrace.NewSimpleSpanProcessor(exp))),
	)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

func TestExportGateForcesErroredTraces(t *testing.T) {
	tp, exp := newTestProvider(t, 0, true)
	tr := tp.Tracer("t")

	// An unsampled trace without errors exports nothing.
	ctx, root := tr.Start(context.Background(), "quiet")
	_, c := tr.Start(ctx, "child")
	c.End()
	root.End()
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("unsampled ok trace exported %d spans", n)
	}

	// A failing child is exported, and so is its parent ending after it,
	// but not the sibling that ended before the failure.
	ctx, root = tr.Start(context.Background(), "root")
	_, early := tr.Start(ctx, "early")
	early.End()
	_, bad := tr.Start(ctx, "bad")
	bad.SetStatus(codes.Error, "boom")
	bad.End()
	root.End()
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
		if !s.SpanContext.IsSampled() {
			t.Errorf("exported span %s is not marked sampled", s.Name)
		}
	}
	if strings.Join(names, ",") != "bad,root" {
		t.Errorf("exported %v, want [bad root]", names)
	}

	// Without force on error nothing unsampled is exported.
	tp2, exp2 := newTestProvider(t, 0, false)
	_, s := tp2.Tracer("t").Start(context.Background(), "bad")
	s.SetStatus(codes.Error, "boom")
	s.End()
	if n := len(exp2.GetSpans()); n != 0 {
		t.Errorf("force on error off: exported %d spans", n)
	}
}

func TestExportGateForgetsOldTraces(t *testing.T) {
	g := newExportGate(true)
	first := trace.TraceID{1}
	g.keep(first, true)
	for i := range erroredTraces {
		g.keep(trace.TraceID{2, byte(i), byte(i >> 8)}, true)
	}
	if g.keep(first, false) {
		t.Error("the oldest errored trace is still remembered after erroredTraces newer ones")
	}
	if !g.keep(trace.TraceID{2, 5}, false) {
		t.Error("a recent errored trace was forgotten")
	}
	if len(g.errored) != erroredTraces {
		t.Errorf("remembers %d traces, want %d", len(g.errored), erroredTraces)
	}
}

func TestExecutionContext(t *testing.T) {
	setSampleRate(0)
	t.Cleanup(func() { setSampleRate(DefaultSampleRate) })
	e := Execution{ID: "exec-1"}
	tid := ExecutionTraceID("exec-1")
	if tid == ExecutionTraceID("exec-2") || !tid.IsValid() {
		t.Fatal("trace ids are not per execution")
	}

	sc := trace.SpanContextFromContext(e.Context(context.Background()))
	if sc.TraceID() != tid || sc.IsSampled() {
		t.Errorf("rate 0: context %v, want trace %s unsampled", sc, tid)
	}
	e.Force = true
	sc = trace.SpanContextFromContext(e.Context(context.Background()))
	if !sc.IsSampled() {
		t.Error("workload.trace=true: not sampled")
	}
	// A caller that samples (CLI --trace) puts the execution in the sample.
	caller := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}, TraceFlags: trace.FlagsSampled, Remote: true}))
	sc = trace.SpanContextFromContext(Execution{ID: "exec-1"}.Context(caller))
	if !sc.IsSampled() || sc.TraceID() != tid {
		t.Errorf("sampled caller: %v", sc)
	}
	// A span started locally (sampled by its own random trace id) does not.
	local := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}, TraceFlags: trace.FlagsSampled}))
	if sc = trace.SpanContextFromContext(Execution{ID: "exec-1"}.Context(local)); sc.IsSampled() {
		t.Error("a local sampled span put the execution in the sample")
	}
	// A context already in the execution's trace is kept as is (its
	// decision was propagated).
	in := WithTraceParent(context.Background(), "00-"+tid.String()+"-00000000000000aa-01")
	got := Execution{ID: "exec-1"}.Context(in)
	if trace.SpanContextFromContext(got).SpanID() != (trace.SpanID{0, 0, 0, 0, 0, 0, 0, 0xaa}) {
		t.Error("Context replaced a parent of the execution's own trace")
	}
}

// TestTraceModelFileRoundTrip runs the seed's trace model through the
// file exporter in two "processes" (contexts linked only by the
// traceparent string) and reads the tree back.
func TestTraceModelFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tel, err := SetupConfig(context.Background(), Config{Service: "noetl-functions", TraceExporters: []string{TracesFile}, TraceDir: dir, SampleRate: 0, ForceSampleOnError: true, MetricsExporter: MetricsNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Shutdown(context.Background()) })
	if !strings.HasPrefix(tel.TraceFile, dir) {
		t.Fatalf("trace file %q not under %s", tel.TraceFile, dir)
	}

	t0 := time.Now().Add(-10 * time.Second)
	exec := Execution{ID: "e-42", WorkflowRef: "examples/hello", WorkloadSize: 2, Force: true}
	// api: the execution starts; the traceparent goes into the unit.
	tp := TraceParent(exec.Context(context.Background()))
	if !strings.HasSuffix(tp, "-01") || !strings.Contains(tp, ExecutionTraceID("e-42").String()) {
		t.Fatalf("traceparent %q", tp)
	}

	// execute: one unit, two attempts of an http task.
	ctx := WithTraceParent(context.Background(), tp)
	idx := 3
	u := Unit{ExecutionID: "e-42", Key: "fetch.1.i3", Step: "fetch", StepRun: 1, LoopIndex: &idx, ToolKind: "http"}
	uctx := u.Context(ctx)
	spec := HTTPSignature("get", "https://user:pw@api.example.com/users/{{ id }}?token=abc")
	_, a1 := StartPlugin(uctx, Plugin{ExecutionID: "e-42", Step: "fetch", Task: "get", Kind: "http", Attempt: 1, SpecSignature: spec, ArgsSignature: Signature(map[string]any{"id": 7})})
	EndPlugin(a1, "http", errors.New("503 from upstream"))
	_, a2 := StartPlugin(uctx, Plugin{ExecutionID: "e-42", Step: "fetch", Task: "get", Kind: "http", Attempt: 2, SpecSignature: spec})
	EndPlugin(a2, "", nil)
	u.End(ctx, t0.Add(time.Second), t0.Add(3*time.Second), nil)
	_, r := StartRoute(ctx, Route{ExecutionID: "e-42", FromStep: "fetch", EdgeIndex: 0, TargetStep: "end", Condition: "{{ fetch.ok }}"})
	EndRoute(r, EdgeTaken, nil)
	// the terminal transition, in yet another process.
	exec.End(WithTraceParent(context.Background(), tp), t0, t0.Add(5*time.Second), ExecOK, nil)

	tree, st, err := tracetree.Load(dir, "e-42")
	if err != nil {
		t.Fatal(err)
	}
	if st.Bad != 0 || tree.Spans != 5 {
		t.Fatalf("read %+v, %d spans in the tree, want 5 and no bad lines", st, tree.Spans)
	}
	if len(tree.Roots) != 1 || tree.Roots[0].Span.Name != SpanExecution || tree.Roots[0].Missing {
		t.Fatalf("roots: %+v", tree.Roots)
	}
	root := tree.Roots[0]
	if root.Span.TraceID != ExecutionTraceID("e-42").String() || root.Span.Attributes[AttrWorkflowRef] != "examples/hello" || root.Span.Status != "ok" {
		t.Errorf("root span %+v", root.Span)
	}
	if d := root.Span.Duration(); d != 5*time.Second {
		t.Errorf("root duration %v, want 5s", d)
	}
	var kids []string
	for _, c := range root.Children {
		kids = append(kids, c.Span.Name)
	}
	if strings.Join(kids, ",") != "server.dispatch,server.route" {
		t.Fatalf("root children %v", kids)
	}
	disp := root.Children[0]
	if disp.Span.Attributes[AttrLoopIndex] != float64(3) || disp.Span.Attributes[AttrStepID] != "fetch" || len(disp.Children) != 2 {
		t.Errorf("dispatch span %+v with %d children", disp.Span, len(disp.Children))
	}
	att := disp.Children[0].Span
	if att.Name != "worker.plugin.http" || att.Status != "error" || att.Attributes[AttrAttempt] != float64(1) || att.Attributes[AttrErrorClass] != "http" {
		t.Errorf("first attempt %+v", att)
	}
	sig, _ := att.Attributes[AttrSpecSignature].(string)
	if sig != "GET https://api.example.com/users/{{ id }}?token" || strings.Contains(sig, "pw") || strings.Contains(sig, "abc") {
		t.Errorf("spec_signature %q leaks or is wrong", sig)
	}
	if att.Attributes[AttrArgsSignature] != "{id:int}" {
		t.Errorf("args_signature %v", att.Attributes[AttrArgsSignature])
	}
	route := root.Children[1].Span
	if route.Attributes[AttrOutcome] != "taken" || route.Attributes[AttrTargetStep] != "end" || len(route.Links) != 1 {
		t.Errorf("route span %+v", route)
	}

	var out bytes.Buffer
	if err := tree.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"server.execution  +0s  5s  ok  workflow_ref=examples/hello  workload_size=2  status=ok",
		"├─ server.dispatch  +1s  2s  ok  step_id=fetch  step_run=1  loop_index=3  tool_kind=http",
		"│  ├─ worker.plugin.http",
		`error: "503 from upstream"`,
		"└─ server.route",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed tree lacks %q:\n%s", want, out.String())
		}
	}
}

// TestUnsampledExecutionExportsOnlyOnError: at rate 0, a successful
// execution leaves no span, a failing one leaves its failure path.
func TestUnsampledExecutionExportsOnlyOnError(t *testing.T) {
	dir := t.TempDir()
	if _, err := SetupConfig(context.Background(), Config{Service: "s", TraceExporters: []string{TracesFile}, TraceDir: dir, SampleRate: 0, ForceSampleOnError: true, MetricsExporter: MetricsNone}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Shutdown(context.Background()) })
	now := time.Now()
	run := func(id string, fail error) {
		ctx := Execution{ID: id}.Context(context.Background())
		u := Unit{ExecutionID: id, Key: "s.1", Step: "s", StepRun: 1, ToolKind: "python"}
		_, a := StartPlugin(u.Context(ctx), Plugin{ExecutionID: id, Step: "s", Kind: "python", Attempt: 1})
		EndPlugin(a, map[bool]string{true: "python"}[fail != nil], fail)
		u.End(ctx, now, now.Add(time.Second), fail)
		st := ExecOK
		if fail != nil {
			st = ExecFail
		}
		Execution{ID: id}.End(ctx, now, now.Add(2*time.Second), st, fail)
	}
	run("ok-1", nil)
	run("bad-1", errors.New("ZeroDivisionError"))

	if _, _, err := tracetree.Load(dir, "ok-1"); !errors.Is(err, tracetree.ErrNoSpans) {
		t.Errorf("successful unsampled execution: err = %v, want ErrNoSpans", err)
	}
	tree, _, err := tracetree.Load(dir, "bad-1")
	if err != nil {
		t.Fatal(err)
	}
	if tree.Spans != 3 || len(tree.Roots) != 1 {
		t.Fatalf("failed execution: %d spans, %d roots, want 3 in one tree", tree.Spans, len(tree.Roots))
	}
	r := tree.Roots[0]
	if r.Span.Name != SpanExecution || r.Span.Status != "error" || !r.Span.ForcedOnError ||
		len(r.Children) != 1 || len(r.Children[0].Children) != 1 || r.Children[0].Children[0].Span.Name != "worker.plugin.python" {
		t.Errorf("failure path: %+v", r)
	}
}

func TestOTLPHTTPExporterDelivers(t *testing.T) {
	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	if _, err := SetupConfig(context.Background(), Config{Service: "svc", TraceExporters: []string{TracesOTLP}, TraceEndpoint: srv.URL, SampleRate: 1, MetricsExporter: MetricsNone}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Shutdown(context.Background()) })
	_, a := StartPlugin(context.Background(), Plugin{ExecutionID: "e", Kind: "http", Attempt: 1})
	EndPlugin(a, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		b := <-bodies
		if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost {
			t.Errorf("OTLP request %s %s", r.Method, r.URL.Path)
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		name := req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0].GetName()
		if name != "worker.plugin.http" {
			t.Errorf("exported span %q", name)
		}
	default:
		t.Fatal("nothing reached the OTLP endpoint after Flush")
	}
}

func TestGCPExportersWithoutCredentials(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	start := time.Now()
	tel, err := SetupConfig(context.Background(), Config{Service: "svc", TraceExporters: []string{TracesGCP}, MetricsExporter: MetricsGCP, SampleRate: 1})
	t.Cleanup(func() { _ = Shutdown(context.Background()) })
	if err == nil || !strings.Contains(err.Error(), "gcp trace exporter") || !strings.Contains(err.Error(), "gcp metrics exporter") {
		t.Errorf("err = %v, want both gcp exporters reported", err)
	}
	if tel == nil || tel.Logger == nil || tel.TracerProvider == nil || tel.MeterProvider == nil {
		t.Fatal("SetupConfig left telemetry unusable")
	}
	M.ExecutionStarted(context.Background(), "wf") // must not panic
	t.Logf("setup took %v", time.Since(start))
}

func TestWorkloadForcesTrace(t *testing.T) {
	cases := []struct {
		w    map[string]any
		want bool
	}{
		{map[string]any{"trace": true}, true}, {map[string]any{"trace": "true"}, true}, {map[string]any{"trace": "1"}, true},
		{map[string]any{"trace": false}, false}, {map[string]any{"trace": "no"}, false}, {map[string]any{"trace": 1}, false},
		{map[string]any{}, false}, {nil, false},
	}
	for _, c := range cases {
		if got := WorkloadForcesTrace(c.w); got != c.want {
			t.Errorf("WorkloadForcesTrace(%v) = %v, want %v", c.w, got, c.want)
		}
	}
}

// Spans of other instrumentation (the Google Cloud client libraries use
// the global provider) are recorded only with LibrarySpans; the engine's
// context still propagates through them.
func TestLibrarySpans(t *testing.T) {
	for _, lib := range []bool{false, true} {
		dir := t.TempDir()
		if _, err := SetupConfig(context.Background(), Config{Service: "s", TraceExporters: []string{TracesFile}, TraceDir: dir, SampleRate: 1, LibrarySpans: lib, MetricsExporter: MetricsNone}); err != nil {
			t.Fatal(err)
		}
		ctx, own := Tracer.Start(context.Background(), "engine")
		lctx, libSpan := otel.Tracer("cloud.google.com/go/firestore").Start(ctx, "firestore.Commit")
		if trace.SpanContextFromContext(lctx).TraceID() != trace.SpanContextFromContext(ctx).TraceID() {
			t.Errorf("library=%v: the library span left the trace", lib)
		}
		libSpan.End()
		own.End()
		_ = Shutdown(context.Background())
		spans, _, err := tracetree.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		want := "engine"
		if lib {
			want = "firestore.Commit,engine"
		}
		if strings.Join(names, ",") != want {
			t.Errorf("library=%v: exported %v, want %s", lib, names, want)
		}
	}
}
