package telemetry

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// AttrForceSample ("noetl.trace", bool) on a span's start attributes puts
// its trace in the sample whatever the ratio: Execution spans carry it for
// executions with workload.trace=true (NoETL observability spec §8.3 "Force sampling").
const AttrForceSample = "noetl.trace"

// Sampled reports the head-sampling decision of a trace with id tid at
// ratio rate: the same deterministic rule as OpenTelemetry's
// TraceIDRatioBased (the low 63 bits of the trace id's last 8 bytes
// below rate·2⁶³), so every process takes the same decision for an
// execution whose trace id is derived from its id (ExecutionTraceID).
func Sampled(tid trace.TraceID, rate float64) bool {
	switch {
	case rate >= 1:
		return true
	case rate <= 0:
		return false
	}
	bound := uint64(rate * (1 << 63))
	return binary.BigEndian.Uint64(tid[8:16])>>1 < bound
}

// sampler is the engine's head sampler; see NewSampler.
type sampler struct {
	rate   float64
	record bool
}

// NewSampler returns the engine's sampler (NoETL observability spec §8.3 "Sampling"):
//
//   - a span started with AttrForceSample=true is sampled;
//   - a span with a parent follows the parent's sampled flag (parent-based,
//     local or remote: the decision travels in traceparent through Pub/Sub
//     attributes and Cloud Tasks headers);
//   - a root span is sampled when Sampled(trace id, rate).
//
// With forceOnError, spans left out of the sample are still recorded
// (RecordOnly) instead of dropped, so that the export gate installed by
// NewTracerProvider can export those that end with an error: "forced on
// error" under head sampling means always record, and export an unsampled
// span when it (or an earlier span of its trace in the same process) ends
// with status Error. Without forceOnError they are dropped.
func NewSampler(rate float64, forceOnError bool) sdktrace.Sampler {
	return sampler{rate: rate, record: forceOnError}
}

// ShouldSample implements sdktrace.Sampler.
func (s sampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	psc := trace.SpanContextFromContext(p.ParentContext)
	res := sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: psc.TraceState()}
	for _, a := range p.Attributes {
		if a.Key == AttrForceSample && a.Value.Type() == attribute.BOOL && a.Value.AsBool() {
			return res
		}
	}
	if psc.IsValid() {
		if psc.IsSampled() {
			return res
		}
	} else if Sampled(p.TraceID, s.rate) {
		return res
	}
	if s.record {
		res.Decision = sdktrace.RecordOnly
	} else {
		res.Decision = sdktrace.Drop
	}
	return res
}

// Description implements sdktrace.Sampler.
func (s sampler) Description() string {
	return fmt.Sprintf("NoETLSampler{rate=%g,forceOnError=%t}", s.rate, s.record)
}

// erroredTraces bounds the memory of the export gate (trace ids).
const erroredTraces = 4096

// exportGate forwards ended spans to the export processors: sampled spans
// always; unsampled (RecordOnly) spans when they end with status Error, or
// when an earlier span of the same trace ended with an error in this
// process (the ancestors of a failed attempt end after it, so the path
// from the failure up to the execution root is exported with it).
type exportGate struct {
	next         []sdktrace.SpanProcessor
	forceOnError bool

	mu      sync.Mutex
	errored map[trace.TraceID]struct{}
	ring    []trace.TraceID
	pos     int
}

func newExportGate(forceOnError bool, next ...sdktrace.SpanProcessor) *exportGate {
	return &exportGate{next: next, forceOnError: forceOnError, errored: map[trace.TraceID]struct{}{}, ring: make([]trace.TraceID, erroredTraces)}
}

// OnStart implements sdktrace.SpanProcessor.
func (g *exportGate) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	for _, p := range g.next {
		p.OnStart(ctx, s)
	}
}

// OnEnd implements sdktrace.SpanProcessor.
func (g *exportGate) OnEnd(s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	if !sc.IsSampled() {
		if !g.forceOnError || !g.keep(sc.TraceID(), s.Status().Code == codes.Error) {
			return
		}
		s = forcedSpan{ReadOnlySpan: s, sc: sc.WithTraceFlags(sc.TraceFlags().WithSampled(true))}
	}
	for _, p := range g.next {
		p.OnEnd(s)
	}
}

// keep records tid as errored when failed, and reports whether tid is.
func (g *exportGate) keep(tid trace.TraceID, failed bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.errored[tid]; ok {
		return true
	}
	if !failed {
		return false
	}
	if old := g.ring[g.pos]; old.IsValid() {
		delete(g.errored, old)
	}
	g.ring[g.pos] = tid
	g.pos = (g.pos + 1) % len(g.ring)
	g.errored[tid] = struct{}{}
	return true
}

// Shutdown implements sdktrace.SpanProcessor.
func (g *exportGate) Shutdown(ctx context.Context) error {
	var err error
	for _, p := range g.next {
		if e := p.Shutdown(ctx); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// ForceFlush implements sdktrace.SpanProcessor.
func (g *exportGate) ForceFlush(ctx context.Context) error {
	var err error
	for _, p := range g.next {
		if e := p.ForceFlush(ctx); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// forcedSpan is an unsampled span exported because of an error: its span
// context reports sampled so that batch processors and exporters accept
// it; ForcedOnError tells the file exporter.
type forcedSpan struct {
	sdktrace.ReadOnlySpan
	sc trace.SpanContext
}

// SpanContext returns the span's context with the sampled flag set.
func (f forcedSpan) SpanContext() trace.SpanContext { return f.sc }

// ForcedOnError reports that the span was outside the sample and exported
// because of an error.
func (f forcedSpan) ForcedOnError() bool { return true }

// forcedIDsKey is the context key of the ids the next span must take.
type forcedIDsKey struct{}

type forcedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

// idGenerator returns random ids, or the ids a context asks for (the
// deterministic ids of execution and unit spans recorded after the fact).
type idGenerator struct{}

// NewIDs implements sdktrace.IDGenerator.
func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(forcedIDsKey{}).(forcedIDs); ok && f.trace.IsValid() && f.span.IsValid() {
		return f.trace, f.span
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomSpanID()
}

// NewSpanID implements sdktrace.IDGenerator.
func (idGenerator) NewSpanID(ctx context.Context, tid trace.TraceID) trace.SpanID {
	if f, ok := ctx.Value(forcedIDsKey{}).(forcedIDs); ok && f.trace == tid && f.span.IsValid() {
		return f.span
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
