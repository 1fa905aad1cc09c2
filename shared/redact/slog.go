package redact

import (
	"context"
	"log/slog"

	"github.com/noetl/gcpengine/shared/display"
)

// ctxKey carries a Redactor in a context.
type ctxKey struct{}

// WithRedactor returns ctx carrying r: log records written with that
// context through a Handler are masked with r (the execution's keychain
// secrets), not only by key and pattern.
func WithRedactor(ctx context.Context, r *Redactor) context.Context {
	return context.WithValue(ctx, ctxKey{}, r)
}

// FromContext returns the Redactor WithRedactor put in ctx, or nil (a nil
// *Redactor applies the key and pattern rules).
func FromContext(ctx context.Context) *Redactor {
	if ctx == nil {
		return nil
	}
	r, _ := ctx.Value(ctxKey{}).(*Redactor)
	return r
}

// Handler is a slog.Handler that masks every record before passing it on
// (NoETL observability spec §8.9: redact known keys in logs): the message with
// Redactor.String, each attribute — nested groups included — by its key
// (IsSecretKey) and its value with Redactor.Value. The Redactor is the one
// of the record's context (WithRedactor), else the handler's own. Every
// string then has its control characters escaped (shared/display): user
// text in a log line cannot drive the terminal that shows it.
type Handler struct {
	next slog.Handler
	r    *Redactor
}

// NewHandler wraps next; r (nil: key and pattern rules only) applies to
// records whose context carries no Redactor.
func NewHandler(next slog.Handler, r *Redactor) *Handler { return &Handler{next: next, r: r} }

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	r := FromContext(ctx)
	if r == nil {
		r = h.r
	}
	out := slog.NewRecord(rec.Time, rec.Level, display.Escape(r.String(rec.Message)), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(maskAttr(r, a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler (the attributes are masked with the
// handler's own Redactor).
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	m := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		m[i] = maskAttr(h.r, a)
	}
	return &Handler{next: h.next.WithAttrs(m), r: h.r}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), r: h.r}
}

func maskAttr(r *Redactor, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch {
	case v.Kind() == slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, e := range g {
			out[i] = maskAttr(r, e)
		}
		return slog.Group(a.Key, out...)
	case IsSecretKey(a.Key) && v.Kind() != slog.KindBool:
		return slog.String(a.Key, Mask)
	case v.Kind() == slog.KindString:
		return slog.String(a.Key, display.Escape(r.String(v.String())))
	case v.Kind() == slog.KindAny:
		return slog.Any(a.Key, walker{str: func(s string) string { return display.Escape(r.String(s)) }, keys: true}.value(v.Any()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
