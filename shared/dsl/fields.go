package dsl

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
