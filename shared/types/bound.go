package types

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// Sizes of a task outcome's text fields as the engine keeps them (docs
// "Security", output and error sizes): an outcome travels into the
// attempt record and the execution document (Firestore, 1 MiB per
// document), into event batches (Pub/Sub, shared/bus MaxMessageBytes)
// and into logs, so every field a task's code or a remote server controls
// is bounded before it is stored anywhere. Text beyond a bound is cut at
// a UTF-8 boundary and ends with TruncatedMarker's note.
const (
	// DefaultErrorMax is the default size in bytes of an error message
	// kept with an outcome (NOETL_TASK_ERROR_MAX_BYTES), marker included.
	DefaultErrorMax = 8 << 10
	// ErrorKindMax bounds an error kind (engine kinds are short words).
	ErrorKindMax = 64
	// ExceptionTypeMax bounds outcome.py.exception_type.
	ExceptionTypeMax = 256
	// HeaderValueMax bounds each value of outcome.http.headers, and
	// HeadersMax their number (the first by name are kept).
	HeaderValueMax = 1 << 10
	HeadersMax     = 64
	// LogsMax bounds outcome.logs (the captured output's tail).
	LogsMax = 64 << 10
	// StoredErrorMax bounds the full text of an error message the engine
	// stores in the results tier when it cuts the message (and the text a
	// runner sends back at all).
	StoredErrorMax = 16 << 20
)

// TruncatedMarker starts the note that ends a cut text.
const TruncatedMarker = "… [truncated by the engine: "

// Truncate returns s cut so that, with the note " … [truncated by the
// engine: <note>]" appended, it is at most max bytes, and whether it was
// cut; s of at most max bytes is returned unchanged. note says what was
// cut ("12582912 bytes in all", where the full text went, the setting).
// A text that already ends with a truncation note of at most max bytes
// is left alone, so Truncate is idempotent. max below the note's own
// length gives the note alone.
func Truncate(s string, max int, note string) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	tail := TruncatedMarker + note + "]"
	keep := max - len(tail)
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + tail, true
}

// Tail returns the end of s (at a UTF-8 boundary) after a note of how
// many bytes were dropped, at most max bytes in all, or s when it fits
// (logs keep their end).
func Tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head := fmt.Sprintf("[truncated by the engine: the first %d of %d bytes dropped] …", len(s), len(s)) // its longest form
	start := len(s) - max + len(head)
	if start > len(s) {
		start = len(s)
	}
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("[truncated by the engine: the first %d of %d bytes dropped] …", start, len(s)) + s[start:]
}

// Bound cuts the outcome's text fields a task controls to the sizes
// above (the error message to errMax; DefaultErrorMax when errMax ≤ 0)
// in place and returns the error message as it was when it was cut
// ("" otherwise), for the caller to store (StoredErrorMax). note is added
// to the message's truncation note (where the full text went). The
// result is not touched: the results tier takes it.
func (o *Outcome) Bound(errMax int, note string) (full string) {
	if errMax <= 0 {
		errMax = DefaultErrorMax
	}
	if e := o.Error; e != nil {
		c := *e
		if len(c.Message) > errMax {
			n := fmt.Sprintf("%d bytes in all", len(c.Message))
			if note != "" {
				n += "; " + note
			}
			if cut, did := Truncate(c.Message, errMax, n); did {
				full, c.Message = e.Message, cut
			}
		}
		if len(c.Kind) > ErrorKindMax {
			k, _ := Truncate(string(c.Kind), ErrorKindMax, "kind")
			c.Kind = ErrorKind(k)
		}
		o.Error = &c
	}
	if p := o.Py; p != nil && len(p.ExceptionType) > ExceptionTypeMax {
		c := *p
		c.ExceptionType, _ = Truncate(c.ExceptionType, ExceptionTypeMax, fmt.Sprintf("%d bytes", len(p.ExceptionType)))
		o.Py = &c
	}
	if h := o.HTTP; h != nil && boundHeadersNeeded(h.Headers) {
		c := *h
		c.Headers = boundHeaders(h.Headers)
		o.HTTP = &c
	}
	o.Logs = Tail(o.Logs, LogsMax)
	return full
}

func boundHeadersNeeded(h map[string]string) bool {
	if len(h) > HeadersMax {
		return true
	}
	for k, v := range h {
		if len(v) > HeaderValueMax || len(k) > HeaderValueMax {
			return true
		}
	}
	return false
}

// boundHeaders keeps the first HeadersMax headers by name, each value
// cut to HeaderValueMax (names longer than that are dropped).
func boundHeaders(h map[string]string) map[string]string {
	names := make([]string, 0, len(h))
	for k := range h {
		if len(k) <= HeaderValueMax {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	if len(names) > HeadersMax {
		names = names[:HeadersMax]
	}
	out := make(map[string]string, len(names))
	for _, k := range names {
		out[k], _ = Truncate(h[k], HeaderValueMax, fmt.Sprintf("%d bytes", len(h[k])))
	}
	return out
}
