package dsl

import "strings"

// The readers of a block's typed fields that several blocks share (the
// scalars themselves are read by str, num, integer and boolean).

// ident reads e's value as an identifier; what names the field
// ("output.as"). A string that is not an identifier is reported and still
// returned (ok: the value was a string).
func (l *loader) ident(e entry, path, what string) (string, bool) {
	s, ok := l.str(e.v, path, what)
	if ok && !isIdent(s) {
		l.errf(e.k, path, "%s %q must be an identifier", what, s)
	}
	return s, ok
}

// nonNegativeInt reads e's value as an integer ≥ 0; what names the field
// ("accumulate.max_items"). A negative integer is reported and still
// returned (ok: the value was an integer). The subscription blocks read
// theirs with nonNegative, whose report differs ("want 0 or more") and
// which is not ok for a negative value.
func (l *loader) nonNegativeInt(e entry, path, what string) (int, bool) {
	i, ok := l.integer(e.v, path, what)
	if ok && i < 0 {
		l.errf(e.k, path, "%s must be ≥ 0, got %d", what, i)
	}
	return i, ok
}

// strField reads e's value as a string into the field fields holds for
// e's key (block.key names it in a report; a value that is not a string
// sets ""). It reports whether e's key is one of fields.
func (l *loader) strField(e entry, path, block string, fields map[string]*string) bool {
	dst, ok := fields[e.key]
	if ok {
		*dst, _ = l.str(e.v, path, block+"."+e.key)
	}
	return ok
}

// choiceOf reads e's value as one of allowed; what names the field
// ("output.scope"). Another string is reported ("<what> must be a, b or
// c, got …") and not ok.
func (l *loader) choiceOf(e entry, path, what string, allowed ...string) (string, bool) {
	s, ok := l.str(e.v, path, what)
	if !ok {
		return "", false
	}
	if !oneOf(s, allowed) {
		l.errf(e.k, path, "%s must be %s, got %q", what, orList(allowed), s)
		return s, false
	}
	return s, true
}

// orList writes a, b and c as "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}
