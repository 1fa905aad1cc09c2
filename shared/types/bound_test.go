package types

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	s := strings.Repeat("é", 5000) // 10000 bytes of two-byte runes
	got, cut := Truncate(s, 4096, "10000 bytes in all")
	if !cut || len(got) > 4096 || !utf8.ValidString(got) || !strings.HasSuffix(got, TruncatedMarker+"10000 bytes in all]") {
		t.Fatalf("cut %v, %d bytes, valid %v, tail %q", cut, len(got), utf8.ValidString(got), got[len(got)-60:])
	}
	if again, cut := Truncate(got, 4096, "x"); cut || again != got {
		t.Fatal("Truncate is not idempotent")
	}
	if same, cut := Truncate("short", 10, "n"); cut || same != "short" {
		t.Fatal("a short text changed")
	}
	if got, _ := Truncate(s, 5, "a long note"); !strings.HasPrefix(got, TruncatedMarker) {
		t.Fatalf("max under the note: %q", got)
	}
	tail := Tail(strings.Repeat("a", 1000)+"END", 200)
	if len(tail) > 200 || !strings.HasSuffix(tail, "END") || !strings.Contains(tail, "dropped") {
		t.Fatalf("tail %q", tail)
	}
}

func TestOutcomeBound(t *testing.T) {
	h := map[string]string{"big": strings.Repeat("v", 5000)}
	for i := 0; i < 100; i++ {
		h[strings.Repeat("h", i+1)] = "x"
	}
	o := Outcome{Status: StatusError, Error: &TaskError{Kind: ErrorKind(strings.Repeat("k", 100)), Message: strings.Repeat("m", 10000)},
		Py: &PyOutcome{ExceptionType: strings.Repeat("E", 1000)}, HTTP: &HTTPOutcome{Status: 500, Headers: h}, Logs: strings.Repeat("l", 100<<10)}
	orig := o.Error
	full := o.Bound(2048, "stored as noetl://x; NOETL_TASK_ERROR_MAX_BYTES")
	if full != orig.Message || len(orig.Message) != 10000 {
		t.Fatal("Bound changed the caller's error or did not return the full text")
	}
	if len(o.Error.Message) > 2048 || !strings.Contains(o.Error.Message, "10000 bytes in all; stored as noetl://x; NOETL_TASK_ERROR_MAX_BYTES]") {
		t.Fatalf("message %d bytes: %q", len(o.Error.Message), o.Error.Message[len(o.Error.Message)-120:])
	}
	if len(o.Error.Kind) > ErrorKindMax || len(o.Py.ExceptionType) > ExceptionTypeMax || len(o.Logs) > LogsMax {
		t.Fatalf("kind %d, exception type %d, logs %d bytes", len(o.Error.Kind), len(o.Py.ExceptionType), len(o.Logs))
	}
	if len(o.HTTP.Headers) > HeadersMax || len(o.HTTP.Headers["big"]) > HeaderValueMax || len(h) != 101 {
		t.Fatalf("%d headers, big %d bytes (caller's map %d)", len(o.HTTP.Headers), len(o.HTTP.Headers["big"]), len(h))
	}
	small := Outcome{Status: StatusError, Error: &TaskError{Kind: "python", Message: "boom"}}
	if small.Bound(0, "") != "" || small.Error.Message != "boom" {
		t.Fatal("a small outcome changed")
	}
}
