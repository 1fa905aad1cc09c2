package console

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Display safety (issue "Executions are strangers to each other", display
// and oracles): text an author or a caller wrote — a playbook's names, a
// step's error, a task's logs, a workload — may hold terminal control
// sequences (ESC, BEL, CSI) and bidirectional overrides (U+202E) that
// make a page show something else than what it holds: reversed text that
// reads as another id, a hidden line. html/template escapes markup, not
// these. Every page the console renders passes through safeText last, so
// no field can be forgotten: each such character becomes its visible
// escape (\x1b, \x07, \x9b, \u202e), plain ASCII that is safe in text and
// in attribute values alike. Tab, line feed and carriage return stay
// (logs and pretty JSON need them).

// unsafeRune reports whether r is shown escaped: C0 controls but tab,
// line feed and carriage return; DEL; C1 controls; the bidirectional
// embedding, override and isolate controls, the marks (LRM, RLM, ALM) and
// the line and paragraph separators.
func unsafeRune(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x2028 || r == 0x2029:
		return true
	}
	return false
}

// safeText returns s with every unsafeRune escaped (s itself when it has
// none) and invalid UTF-8 replaced by U+FFFD.
func safeText(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case !unsafeRune(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
