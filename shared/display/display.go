// Package display makes user-supplied text safe to show on an operator's
// terminal and in logs (README "Security", display safety): a step's
// error text, a playbook's metadata.name, a path, an event field may hold
// terminal control sequences (ESC, BEL, CSI, OSC, their 8-bit C1 forms)
// or Unicode bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE and
// its kin) that would move the cursor, rewrite the screen, set the
// window title, or make text read backwards. Escape writes each such
// character as a JSON-style escape (`\u001b`, `\u202e`): visible, and
// lossless inside a JSON string, so JSON output stays valid JSON with the
// same meaning. Newline and tab are kept.
//
// It is the one place the engine escapes for display: the CLI writes
// everything through NewWriter, the logs through shared/redact's
// handler, and the api's name checks use Unsafe (shared/dsl).
package display

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Unsafe reports whether r must be escaped: C0 controls but newline and
// tab, DEL, C1 controls (U+0080–U+009F), and the Unicode bidirectional
// controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and
// the line and paragraph separators (U+2028, U+2029).
func Unsafe(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c || r == 0x200e || r == 0x200f || r == 0x2028 || r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// UnsafeIn returns the first character of s that Unsafe refuses (and
// true), or false; a byte that is not UTF-8 counts (as U+FFFD) too.
func UnsafeIn(s string) (rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return r, true
			}
		}
		if Unsafe(r) {
			return r, true
		}
	}
	return 0, false
}

// Escape returns s with every Unsafe character written as `\uXXXX`
// (invalid UTF-8 bytes as `\uFFFD`); s itself when it has none.
func Escape(s string) string {
	if _, bad := UnsafeIn(s); !bad {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				b.WriteString(`\ufffd`)
				continue
			}
		}
		if Unsafe(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Writer escapes everything written through it (Escape) before passing
// it on. A character split across two writes is held until it is whole.
// Not safe for concurrent use.
type Writer struct {
	w     io.Writer
	carry []byte
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write implements io.Writer: it reports len(p) when the escaped text was
// written.
func (w *Writer) Write(p []byte) (int, error) {
	buf := append(w.carry, p...)
	w.carry = nil
	// Hold back an incomplete UTF-8 sequence at the end.
	end := len(buf)
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				end = i
			}
			break
		}
	}
	w.carry = append([]byte(nil), buf[end:]...)
	if _, err := io.WriteString(w.w, Escape(string(buf[:end]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete character (escaped as invalid UTF-8).
func (w *Writer) Flush() error {
	if len(w.carry) == 0 {
		return nil
	}
	s := Escape(string(w.carry))
	w.carry = nil
	_, err := io.WriteString(w.w, s)
	return err
}

// UnsafeInName is UnsafeIn for a name (a playbook's metadata.name, path
// or version, a task's label): newline and tab are refused too. The api
// refuses such names at submit time (shared/dsl), naming the field.
func UnsafeInName(s string) (rune, bool) {
	if i := strings.IndexAny(s, "\n\t"); i >= 0 {
		return rune(s[i]), true
	}
	return UnsafeIn(s)
}
