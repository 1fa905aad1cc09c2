package template

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Pre-checks of the filters and string methods that can build a result
// much larger than their input from a small argument (README "Security":
// `{{ 'x'|center(300000000) }}`). Each predicts the size of the result
// from the input and arguments, without building it, and refuses it over
// Limits.MaxOutputBytes (strings) or Limits.MaxItems (lists).

// maxIntDigits is the longest string int() converts: Python's
// sys.int_info.str_digits_check_threshold default (4300), which exists for
// the same reason — big-number parsing is quadratic.
const maxIntDigits = 4300

// arg returns the argument at position pos, or the keyword name.
func arg(p *exec.VarArgs, pos int, name string) (*exec.Value, bool) {
	if p == nil {
		return nil, false
	}
	if pos < len(p.Args) {
		return p.Args[pos], true
	}
	if v, ok := p.KwArgs[name]; ok {
		return v, true
	}
	return nil, false
}

// intArg returns the argument at pos/name converted the way gonja's
// filters convert it (exec.Value.Integer: floats truncated, numeric
// strings parsed); false when absent.
func intArg(p *exec.VarArgs, pos int, name string) (int, bool) {
	v, ok := arg(p, pos, name)
	if !ok || v == nil || v.IsNil() {
		return 0, false
	}
	return v.Integer(), true
}

// textOf is the text of a string argument ("" when absent).
func textOf(p *exec.VarArgs, pos int, name string) (string, bool) {
	v, ok := arg(p, pos, name)
	if !ok || v == nil || v.IsNil() {
		return "", false
	}
	return v.String(), true
}

func (g *guard) refuseText(what string, n int) {
	if n > g.limits.MaxOutputBytes || n < 0 {
		g.abortf("%s would build a string longer than %d bytes", what, g.limits.MaxOutputBytes)
	}
}

func preCenter(g *guard, in *exec.Value, p *exec.VarArgs) {
	if w, ok := intArg(p, 0, "width"); ok {
		g.refuseText("center()", w)
	}
}

func preIndent(g *guard, in *exec.Value, p *exec.VarArgs) {
	v, ok := arg(p, 0, "width")
	if !ok {
		return
	}
	per := 0
	switch {
	case v.IsInteger():
		per = max(v.Integer(), 0)
	case v.IsString():
		per = len(v.String())
	}
	s := in.String()
	lines := strings.Count(s, "\n") + 1
	g.refuseText("indent()", satAdd(len(s), satMul(lines, per)))
}

// replacedLen predicts len(strings.Replace(s, old, new, count)); count < 0
// means all.
func replacedLen(s, old, new string, count int) int {
	var n int
	if old == "" {
		n = utf8.RuneCountInString(s) + 1
	} else {
		n = strings.Count(s, old)
	}
	if count >= 0 && count < n {
		n = count
	}
	grow := len(new) - len(old)
	if grow <= 0 {
		return len(s)
	}
	return satAdd(len(s), satMul(n, grow))
}

func preReplace(g *guard, in *exec.Value, p *exec.VarArgs) {
	old, ok1 := textOf(p, 0, "old")
	new, ok2 := textOf(p, 1, "new")
	if !ok1 || !ok2 {
		return
	}
	count := -1
	if c, ok := intArg(p, 2, "count"); ok {
		count = c
	}
	g.refuseText("replace()", replacedLen(in.String(), old, new, count))
}

// textLen estimates the length of v's text form: exact for strings, the
// logical size (an upper bound of the text form's order) otherwise.
func (g *guard) textLen(v *exec.Value) int {
	if v.IsString() {
		return len(v.String())
	}
	if v.IsNil() {
		return 0
	}
	return g.check(v)
}

func preJoin(g *guard, in *exec.Value, p *exec.VarArgs) {
	d, _ := textOf(p, 0, "d")
	n, total := 0, 0
	if in.IsString() {
		s := in.String()
		n, total = utf8.RuneCountInString(s), len(s)
	} else if in.IsIterable() {
		in.Iterate(func(_, _ int, key, _ *exec.Value) bool {
			n++
			total = satAdd(total, g.textLen(key))
			return total <= g.limits.MaxOutputBytes
		}, func() {})
	}
	if n > 1 {
		total = satAdd(total, satMul(n-1, len(d)))
	}
	g.refuseText("join()", total)
}

// preIterate refuses to turn an input of more than MaxItems elements
// (list items, mapping keys, or a string's characters — `'x' * 8000000 |
// list` would build 8 million strings) into a list.
func preIterate(g *guard, in *exec.Value, _ *exec.VarArgs) {
	n := 0
	switch x := in.Interface().(type) {
	case string:
		n = utf8.RuneCountInString(x)
	default:
		if in.IsList() || in.IsDict() {
			n = in.Len()
		}
	}
	if n > g.limits.MaxItems {
		g.abortf("a filter would build a list longer than %d items", g.limits.MaxItems)
	}
}

func preBatchIterate(g *guard, in *exec.Value, p *exec.VarArgs) {
	preIterate(g, in, p)
	preBatch(g, in, p)
}

func preSliceIterate(g *guard, in *exec.Value, p *exec.VarArgs) {
	preIterate(g, in, p)
	preSlice(g, in, p)
}

func preBatch(g *guard, in *exec.Value, p *exec.VarArgs) {
	if n, ok := intArg(p, 0, "linecount"); ok && n > g.limits.MaxItems {
		g.abortf("batch() of %d would build a list longer than %d items", n, g.limits.MaxItems)
	}
}

func preSlice(g *guard, in *exec.Value, p *exec.VarArgs) {
	if n, ok := intArg(p, 0, "slices"); ok && n > g.limits.MaxItems {
		g.abortf("slice() of %d would build a list longer than %d items", n, g.limits.MaxItems)
	}
}

func preInt(g *guard, in *exec.Value, p *exec.VarArgs) {
	if in.IsString() && len(strings.TrimSpace(in.String())) > maxIntDigits {
		g.abortf("int() of a string longer than %d digits (Python's int_max_str_digits)", maxIntDigits)
	}
}

// errTextLimit is the error of a method pre-check.
func errTextLimit(what string, l Limits) error {
	return fmt.Errorf("%w: %s would build a string longer than %d bytes", ErrLimit, what, l.MaxOutputBytes)
}

// methodPre are the pre-checks of gonja's Python string methods, keyed by
// method name; self is the receiver.
var methodPre = map[string]func(self string, p *exec.VarArgs, l Limits) error{
	"center": preWidth("str.center()"),
	"ljust":  preWidth("str.ljust()"),
	"rjust":  preWidth("str.rjust()"),
	"zfill":  preWidth("str.zfill()"),
	"expandtabs": func(self string, p *exec.VarArgs, l Limits) error {
		size := 8
		if n, ok := intArg(p, 0, "tabsize"); ok {
			size = max(n, 0)
		}
		if n := satAdd(len(self), satMul(strings.Count(self, "\t"), size)); n > l.MaxOutputBytes {
			return errTextLimit("str.expandtabs()", l)
		}
		return nil
	},
	"join": func(self string, p *exec.VarArgs, l Limits) error {
		v, ok := arg(p, 0, "iterable")
		if !ok || !v.IsIterable() {
			return nil
		}
		n, total := 0, 0
		v.Iterate(func(_, _ int, key, _ *exec.Value) bool {
			n++
			total = satAdd(total, len(key.String()))
			return total <= l.MaxOutputBytes
		}, func() {})
		if n > 1 {
			total = satAdd(total, satMul(n-1, len(self)))
		}
		if total > l.MaxOutputBytes {
			return errTextLimit("str.join()", l)
		}
		return nil
	},
	"replace": func(self string, p *exec.VarArgs, l Limits) error {
		old, ok1 := textOf(p, 0, "old")
		new, ok2 := textOf(p, 1, "new")
		if !ok1 || !ok2 || old == "" {
			// gonja's str.replace leaves the string alone for old == "".
			return nil
		}
		count := -1
		if c, ok := intArg(p, 2, "count"); ok {
			count = c
		}
		if replacedLen(self, old, new, count) > l.MaxOutputBytes {
			return errTextLimit("str.replace()", l)
		}
		return nil
	},
	"format":     preFormatSpec,
	"format_map": preFormatSpec,
}

func preWidth(what string) func(string, *exec.VarArgs, Limits) error {
	return func(_ string, p *exec.VarArgs, l Limits) error {
		if w, ok := intArg(p, 0, "width"); ok && w > l.MaxOutputBytes {
			return errTextLimit(what, l)
		}
		return nil
	}
}

// preFormatSpec refuses a str.format() template whose replacement fields
// ask for a width or precision above MaxOutputBytes ("{:>999999999}").
func preFormatSpec(self string, _ *exec.VarArgs, l Limits) error {
	for i := 0; i < len(self); i++ {
		if self[i] != '{' {
			continue
		}
		if i+1 < len(self) && self[i+1] == '{' {
			i++
			continue
		}
		end := strings.IndexByte(self[i:], '}')
		if end < 0 {
			return nil
		}
		field := self[i+1 : i+end]
		if c := strings.IndexByte(field, ':'); c >= 0 && largestNumber(field[c+1:]) > l.MaxOutputBytes {
			return errTextLimit("str.format()", l)
		}
		i += end
	}
	return nil
}

// largestNumber is the largest decimal digit run in s (saturating).
func largestNumber(s string) int {
	best, cur, in := 0, 0, false
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if cur > (math.MaxInt-9)/10 {
				cur = math.MaxInt
			} else {
				cur = cur*10 + int(s[i]-'0')
			}
			in = true
			continue
		}
		if in {
			best = max(best, cur)
		}
		cur, in = 0, false
	}
	return best
}

// errFormatLimit is returned by pyPercent for a width or precision, or a
// result, above the limit.
func errFormatLimit(limit int) error {
	return fmt.Errorf("%w: printf-style formatting would build a string longer than %d bytes", ErrLimit, limit)
}

// isLimit reports whether err wraps ErrLimit.
func isLimit(err error) bool { return errors.Is(err, ErrLimit) }
