package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/noetl/gcpengine/shared/telemetry/tracetree"
)

// FileExporter is a span exporter writing one JSON object per span and
// line (tracetree.Span) to its own file under a directory:
// <dir>/<service>-<pid>-<UTC start time>.jsonl, created with mode 0644
// (the directory with 0755 when missing). One file per process, so
// processes sharing the directory never interleave lines; tracetree reads
// them all back. It is the local stack's trace collector (NOETL_TRACE_DIR).
// Safe for concurrent use.
type FileExporter struct {
	path    string
	service string

	mu     sync.Mutex
	f      *os.File
	closed bool
}

// NewFileExporter creates dir if needed and opens the exporter's file in
// it. service is the default service name of the spans (a span's
// service.name resource attribute wins).
func NewFileExporter(dir, service string) (*FileExporter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("telemetry: trace dir: %w", err)
	}
	name := fmt.Sprintf("%s-%d-%s.jsonl", safeName(service), os.Getpid(), time.Now().UTC().Format("20060102T150405.000000000"))
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace file: %w", err)
	}
	return &FileExporter{path: p, service: service, f: f}, nil
}

func safeName(s string) string {
	if s == "" {
		return "noetl"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// Path returns the file the exporter writes.
func (e *FileExporter) Path() string { return e.path }

// ExportSpans implements sdktrace.SpanExporter: it appends the spans to
// the file in one write.
func (e *FileExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, s := range spans {
		if err := enc.Encode(e.record(s)); err != nil {
			return fmt.Errorf("telemetry: encode span: %w", err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("telemetry: file exporter is shut down")
	}
	_, err := e.f.Write(buf.Bytes())
	return err
}

// Shutdown implements sdktrace.SpanExporter: it closes the file.
func (e *FileExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.f.Close()
}

// record converts a span to its line.
func (e *FileExporter) record(s sdktrace.ReadOnlySpan) tracetree.Span {
	sc := s.SpanContext()
	r := tracetree.Span{
		TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(),
		Name: s.Name(), Kind: s.SpanKind().String(),
		Start: s.StartTime().UTC(), End: s.EndTime().UTC(),
		Attributes: attrMap(s.Attributes()), Service: e.service,
	}
	if p := s.Parent(); p.IsValid() {
		r.ParentSpanID = p.SpanID().String()
	}
	switch s.Status().Code {
	case codes.Error:
		r.Status, r.StatusMessage = "error", s.Status().Description
	case codes.Ok:
		r.Status = "ok"
	default:
		r.Status = "unset"
	}
	if res := s.Resource(); res != nil {
		if v, ok := res.Set().Value(semconv.ServiceNameKey); ok && v.AsString() != "" {
			r.Service = v.AsString()
		}
	}
	for _, ev := range s.Events() {
		r.Events = append(r.Events, tracetree.Event{Name: ev.Name, Time: ev.Time.UTC(), Attributes: attrMap(ev.Attributes)})
	}
	for _, l := range s.Links() {
		r.Links = append(r.Links, tracetree.Link{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String()})
	}
	if f, ok := s.(interface{ ForcedOnError() bool }); ok {
		r.ForcedOnError = f.ForcedOnError()
	}
	return r
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}
