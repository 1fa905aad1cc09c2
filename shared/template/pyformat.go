package template

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// pyPercent implements Python's printf-style formatting (`fmt % args`),
// which Jinja2 uses for the `%` operator on strings and for the format
// filter: %s %r %d %i %u %f %F %e %E %g %G %x %X %o %c %% with flags
// (-+ 0#), width, precision and %(key)s mapping keys. args are the
// positional values; mapping (may be nil) serves %(key)s. A width or
// precision above limit, or a result longer than limit bytes, is an error
// wrapping ErrLimit (Limits.MaxOutputBytes).
func pyPercent(format string, args []*exec.Value, mapping *exec.Value, limit int) (string, error) {
	var b strings.Builder
	next := 0
	usedKey := false
	for i := 0; i < len(format); i++ {
		if b.Len() > limit {
			return "", errFormatLimit(limit)
		}
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", errors.New("incomplete format")
		}
		if format[i] == '%' {
			b.WriteByte('%')
			continue
		}
		var arg *exec.Value
		if format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 {
				return "", errors.New("incomplete format key")
			}
			key := format[i+1 : i+end]
			i += end + 1
			if mapping == nil {
				return "", errors.New("format requires a mapping")
			}
			arg = lookup(mapping, exec.AsValue(key))
			if arg.IsNil() && !hasKey(mapping, key) {
				return "", fmt.Errorf("KeyError: '%s'", key)
			}
			usedKey = true
		}
		start := i
		for i < len(format) && strings.IndexByte("-+ 0#", format[i]) >= 0 {
			i++
		}
		flags := format[start:i]
		start = i
		for i < len(format) && format[i] >= '0' && format[i] <= '9' {
			i++
		}
		width := format[start:i]
		prec := ""
		if i < len(format) && format[i] == '.' {
			start = i
			i++
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
			prec = format[start:i]
			if prec == "." {
				prec = ".0"
			}
		}
		if largestNumber(width) > limit || largestNumber(prec) > limit {
			return "", errFormatLimit(limit)
		}
		for i < len(format) && strings.IndexByte("hlL", format[i]) >= 0 {
			i++
		}
		if i >= len(format) {
			return "", errors.New("incomplete format")
		}
		conv := format[i]
		if arg == nil {
			if next >= len(args) {
				return "", errors.New("not enough arguments for format string")
			}
			arg = args[next]
			next++
		}
		s, err := pyConvert(conv, flags, width, prec, arg)
		if err != nil {
			return "", err
		}
		b.WriteString(s)
	}
	if !usedKey && next < len(args) {
		return "", errors.New("not all arguments converted during string formatting")
	}
	if b.Len() > limit {
		return "", errFormatLimit(limit)
	}
	return b.String(), nil
}

func hasKey(mapping *exec.Value, key string) bool {
	ok, _ := contains(mapping, exec.AsValue(key))
	return ok
}

func pyConvert(conv byte, flags, width, prec string, arg *exec.Value) (string, error) {
	spec := func(verb string) string { return "%" + flags + width + prec + verb }
	switch conv {
	case 's', 'r', 'a':
		s := arg.String()
		if conv != 's' && arg.IsString() {
			s = "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
		}
		return fmt.Sprintf("%"+strings.ReplaceAll(strings.ReplaceAll(flags, "0", ""), "#", "")+width+prec+"s", s), nil
	case 'd', 'i', 'u':
		n, ok := toNumber(arg)
		if !ok {
			return "", fmt.Errorf("%%%c format: a real number is required, not %s", conv, pyTypeName(arg))
		}
		i := n.i
		if n.isFloat {
			i = int(n.f)
		}
		return fmt.Sprintf(spec("d"), i), nil
	case 'x', 'X', 'o':
		n, ok := toNumber(arg)
		if !ok || n.isFloat {
			return "", fmt.Errorf("%%%c format: an integer is required, not %s", conv, pyTypeName(arg))
		}
		verb := string(conv)
		if conv == 'o' && strings.Contains(flags, "#") {
			verb = "O"
			flags = strings.ReplaceAll(flags, "#", "")
		}
		return fmt.Sprintf(spec(verb), n.i), nil
	case 'f', 'F', 'e', 'E', 'g', 'G':
		n, ok := toNumber(arg)
		if !ok {
			return "", fmt.Errorf("must be real number, not %s", pyTypeName(arg))
		}
		if prec == "" {
			prec = ".6"
		}
		verb := string(conv)
		if conv == 'F' {
			verb = "f"
		}
		return fmt.Sprintf(spec(verb), n.float()), nil
	case 'c':
		if arg.IsString() && len([]rune(arg.String())) == 1 {
			return fmt.Sprintf("%"+flags+width+"s", arg.String()), nil
		}
		n, ok := toNumber(arg)
		if !ok || n.isFloat {
			return "", errors.New("%c requires int or char")
		}
		return fmt.Sprintf("%"+flags+width+"c", rune(n.i)), nil
	}
	return "", fmt.Errorf("unsupported format character '%c' (0x%s)", conv, strconv.FormatInt(int64(conv), 16))
}

// filterFormat is Jinja2's format filter: `"%s-%s" | format(a, b)` or
// `"%(x)s" | format(x=1)`, with Python printf-style semantics.
func filterFormat(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if len(params.Args) > 0 && len(params.KwArgs) > 0 {
		return exec.AsValue(errors.New("can't handle positional and keyword arguments at the same time"))
	}
	var mapping *exec.Value
	if len(params.KwArgs) > 0 {
		m := make(map[string]any, len(params.KwArgs))
		for k, v := range params.KwArgs {
			m[k] = v
		}
		mapping = exec.AsValue(m)
	}
	s, err := pyPercent(in.String(), params.Args, mapping, guardOf(e.Environment.Context).limits.MaxOutputBytes)
	if err != nil {
		return exec.AsValue(err)
	}
	return exec.AsValue(s)
}
