package template

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Internal filter names used by the rewriter. They contain ':' so no
// template can call them by name.
const (
	filterGetName      = "noetl:get"
	filterCallableName = "noetl:callable"
	filterGlobalName   = "noetl:global"
	filterOpName       = "noetl:op"
)

// extraFilters are the filters the package adds to (or replaces in) gonja's
// builtin set.
func extraFilters() map[string]exec.FilterFunction {
	return map[string]exec.FilterFunction{
		filterGetName:      filterGet,
		filterCallableName: filterCallable,
		filterGlobalName:   filterGlobal,
		filterOpName:       filterOp,
		"tojson":           filterToJSON,
		"to_json":          filterToJSON,
		"fromjson":         filterFromJSON,
		"from_json":        filterFromJSON,
		"b64encode":        filterB64Encode,
		"b64decode":        filterB64Decode,
		"format":           filterFormat,
	}
}

var nilValue = exec.AsValue(nil)

// filterGet implements attribute and item access (`a.b`, `a['b']`, `a[0]`,
// `a.0`) with Jinja2 semantics on data: a missing key, an index out of
// range or any access on None/undefined gives undefined (nil), never an
// error (ChainableUndefined behaviour, the NoETL DSL spec "Templates"). Only map keys,
// list/string indexes and gonja's own helper objects (loop, cycler, ...)
// are looked up; Go methods and struct fields never are.
func filterGet(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	cur := in
	for _, key := range params.Args {
		if cur.IsNil() {
			return nilValue
		}
		cur = lookup(cur, key)
	}
	return cur
}

func intKey(key *exec.Value) (int, bool) {
	if key.IsInteger() {
		return key.Integer(), true
	}
	return 0, false
}

func index(n int, key *exec.Value) (int, bool) {
	i, ok := intKey(key)
	if !ok {
		return 0, false
	}
	if i < 0 {
		i += n
	}
	return i, i >= 0 && i < n
}

func lookup(obj, key *exec.Value) *exec.Value {
	switch o := obj.Interface().(type) {
	case map[string]any:
		if key.IsString() {
			if v, ok := o[key.String()]; ok {
				return exec.ToValue(v)
			}
		}
		return nilValue
	case namespace:
		if key.IsString() {
			if v, ok := o[key.String()]; ok {
				return exec.ToValue(v)
			}
		}
		return nilValue
	case []any:
		if i, ok := index(len(o), key); ok {
			return exec.ToValue(o[i])
		}
		return nilValue
	case exec.ValuesList:
		if i, ok := index(len(o), key); ok {
			return exec.ToValue(o[i])
		}
		return nilValue
	case string:
		if _, ok := intKey(key); ok {
			r := []rune(o)
			if i, ok := index(len(r), key); ok {
				return exec.AsValue(string(r[i]))
			}
		}
		return nilValue
	case *exec.Dict:
		for _, p := range o.Pairs {
			if p.Key.EqualValueTo(key) {
				return p.Value
			}
		}
		return nilValue
	case exec.AttributeGetter:
		if key.IsString() {
			if v, ok := o.GetAttribute(key.String()); ok {
				return v
			}
		}
		if g, ok := o.(exec.ItemGetter); ok {
			if v, ok := g.GetItem(key.Interface()); ok {
				return v
			}
		}
		return nilValue
	case exec.ItemGetter:
		if v, ok := o.GetItem(key.Interface()); ok {
			return v
		}
		return nilValue
	}
	rv := reflect.ValueOf(obj.Interface())
	switch rv.Kind() {
	case reflect.Map:
		kt := rv.Type().Key()
		if kt.Kind() == reflect.String && key.IsString() {
			if v := rv.MapIndex(reflect.ValueOf(key.String()).Convert(kt)); v.IsValid() {
				return exec.ToValue(v)
			}
		}
	case reflect.Slice, reflect.Array:
		if i, ok := index(rv.Len(), key); ok {
			return exec.ToValue(rv.Index(i))
		}
	}
	return nilValue
}

// callableView is what a method call's receiver is wrapped in: it exposes
// only callable attributes of gonja's helper objects (loop.cycle, ...) and
// callable map entries (self.<block>). Everything else falls through to
// gonja's Python-style methods (str.upper(), dict.items(), ...), so Go
// methods are never reachable.
type callableView struct{ v *exec.Value }

func (c *callableView) GetAttribute(name string) (*exec.Value, bool) {
	if c.v == nil || c.v.IsNil() {
		return nilValue, false
	}
	u := c.v.Interface()
	if g, ok := u.(exec.AttributeGetter); ok {
		if v, found := g.GetAttribute(name); found && v.IsCallable() {
			return v, true
		}
		return nilValue, false
	}
	rv := reflect.ValueOf(u)
	if rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String {
		if mv := rv.MapIndex(reflect.ValueOf(name).Convert(rv.Type().Key())); mv.IsValid() {
			if v := exec.ToValue(mv); v.IsCallable() {
				return v, true
			}
		}
	}
	return nilValue, false
}

func (c *callableView) String() string { return "" }

func filterCallable(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	return exec.AsValue(&callableView{v: in})
}

// filterGlobal resolves a global function name (range, dict, namespace,
// cycler, joiner); a variable of the same name in the render shadows it,
// as in Jinja2.
func filterGlobal(e *exec.Evaluator, _ *exec.Value, params *exec.VarArgs) *exec.Value {
	name := params.Args[0].String()
	if v, ok := e.Environment.Context.Get(name); ok {
		return exec.ToValue(v)
	}
	return exec.AsValue(envGlobals[name])
}

// filterOp implements the binary operators + - * / // % ** ~ and `in`
// with Python semantics (see binaryOp).
func filterOp(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	v, err := binaryOp(e, params.Args[0].String(), in, params.Args[1])
	if err != nil {
		return exec.AsValue(err)
	}
	return v
}

type number struct {
	i       int
	f       float64
	isFloat bool
}

func (n number) float() float64 {
	if n.isFloat {
		return n.f
	}
	return float64(n.i)
}

func toNumber(v *exec.Value) (number, bool) {
	switch x := v.Interface().(type) {
	case int:
		return number{i: x}, true
	case float64:
		return number{f: x, isFloat: true}, true
	case bool:
		if x {
			return number{i: 1}, true
		}
		return number{}, true
	}
	if v.IsInteger() {
		return number{i: v.Integer()}, true
	}
	if v.IsFloat() {
		return number{f: v.Float(), isFloat: true}, true
	}
	return number{}, false
}

// binaryOp evaluates `l op r`: numbers follow Python (int op int stays int
// except `/`; `//` and `%` floor; division by zero is an error; int
// overflow falls back to float), `+` joins two strings or two lists, `*`
// repeats a string or list, `str % args` is printf-style formatting (op
// "%t" when the right side is a tuple literal, whose items are the
// arguments), `~` joins text forms, `in` tests membership.
// Any other mix, including undefined/None operands, is a TypeError like in
// Python/Jinja2. Built strings and lists are checked against Limits.
func binaryOp(e *exec.Evaluator, op string, l, r *exec.Value) (*exec.Value, error) {
	switch op {
	case "~":
		ls, rs := l.String(), r.String()
		if err := checkText(e, len(ls)+len(rs)); err != nil {
			return nil, err
		}
		return exec.AsValue(ls + rs), nil
	case "in":
		ok, err := contains(r, l)
		if err != nil {
			return nil, err
		}
		return exec.AsValue(ok), nil
	}
	ln, lok := toNumber(l)
	rn, rok := toNumber(r)
	if lok && rok {
		return arith(op, ln, rn)
	}
	switch op {
	case "+":
		if l.IsString() && r.IsString() {
			ls, rs := l.String(), r.String()
			if err := checkText(e, len(ls)+len(rs)); err != nil {
				return nil, err
			}
			return exec.AsValue(ls + rs), nil
		}
		if l.IsList() && r.IsList() {
			li, ri := listItems(l), listItems(r)
			if err := checkItems(e, len(li)+len(ri)); err != nil {
				return nil, err
			}
			out := make([]any, 0, len(li)+len(ri))
			return exec.AsValue(append(append(out, li...), ri...)), nil
		}
	case "*":
		seq, n := l, rn
		if !rok || rn.isFloat {
			seq, n = r, ln
			if !lok || ln.isFloat {
				break
			}
		}
		count := max(n.i, 0)
		switch {
		case seq.IsString():
			s := seq.String()
			if count > 0 && len(s) > 0 {
				if err := checkText(e, satMul(len(s), count)); err != nil {
					return nil, err
				}
			}
			return exec.AsValue(strings.Repeat(s, count)), nil
		case seq.IsList():
			items := listItems(seq)
			if count > 0 && len(items) > 0 {
				if err := checkItems(e, satMul(len(items), count)); err != nil {
					return nil, err
				}
			}
			out := make([]any, 0, len(items)*count)
			for range count {
				out = append(out, items...)
			}
			return exec.AsValue(out), nil
		}
	case "%", "%t":
		if l.IsString() {
			var args []*exec.Value
			var mapping *exec.Value
			switch {
			case op == "%t":
				for _, item := range listItems(r) {
					args = append(args, exec.ToValue(item))
				}
			case r.IsDict():
				args, mapping = []*exec.Value{r}, r
			default:
				args = []*exec.Value{r}
			}
			s, err := pyPercent(l.String(), args, mapping, guardOf(e.Environment.Context).limits.MaxOutputBytes)
			if err != nil {
				return nil, err
			}
			if err := checkText(e, len(s)); err != nil {
				return nil, err
			}
			return exec.AsValue(s), nil
		}
		op = "%"
	}
	hint := ""
	if l.IsNil() || r.IsNil() {
		hint = " (an operand is undefined or None)"
	}
	return nil, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'%s", op, pyTypeName(l), pyTypeName(r), hint)
}

func satMul(a, b int) int {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt
	}
	return int(lo)
}

func checkText(e *exec.Evaluator, n int) error {
	g := guardOf(e.Environment.Context)
	if n > g.limits.MaxOutputBytes {
		return g.fail(fmt.Errorf("%w: string longer than %d bytes", ErrLimit, g.limits.MaxOutputBytes))
	}
	return nil
}

func checkItems(e *exec.Evaluator, n int) error {
	g := guardOf(e.Environment.Context)
	if n > g.limits.MaxItems {
		return g.fail(fmt.Errorf("%w: list longer than %d items", ErrLimit, g.limits.MaxItems))
	}
	return nil
}

func listItems(v *exec.Value) []any {
	switch x := v.Interface().(type) {
	case []any:
		return x
	case exec.ValuesList:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	}
	rv := reflect.ValueOf(v.Interface())
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out
}

func arith(op string, a, b number) (*exec.Value, error) {
	if !a.isFloat && !b.isFloat {
		x, y := a.i, b.i
		switch op {
		case "+":
			s := x + y
			if (x > 0 && y > 0 && s < 0) || (x < 0 && y < 0 && s >= 0) {
				return exec.AsValue(float64(x) + float64(y)), nil
			}
			return exec.AsValue(s), nil
		case "-":
			s := x - y
			if (x >= 0 && y < 0 && s < 0) || (x < 0 && y > 0 && s >= 0) {
				return exec.AsValue(float64(x) - float64(y)), nil
			}
			return exec.AsValue(s), nil
		case "*":
			if x != 0 {
				p := x * y
				if p/x != y || (x == -1 && y == math.MinInt) {
					return exec.AsValue(float64(x) * float64(y)), nil
				}
				return exec.AsValue(p), nil
			}
			return exec.AsValue(0), nil
		case "/":
			if y == 0 {
				return nil, errors.New("ZeroDivisionError: division by zero")
			}
			return exec.AsValue(float64(x) / float64(y)), nil
		case "//":
			if y == 0 {
				return nil, errors.New("ZeroDivisionError: integer division or modulo by zero")
			}
			if x == math.MinInt && y == -1 {
				return exec.AsValue(-float64(x)), nil
			}
			q := x / y
			if x%y != 0 && (x < 0) != (y < 0) {
				q--
			}
			return exec.AsValue(q), nil
		case "%":
			if y == 0 {
				return nil, errors.New("ZeroDivisionError: integer division or modulo by zero")
			}
			if y == -1 {
				return exec.AsValue(0), nil
			}
			m := x % y
			if m != 0 && (m < 0) != (y < 0) {
				m += y
			}
			return exec.AsValue(m), nil
		case "**":
			if y < 0 {
				if x == 0 {
					return nil, errors.New("ZeroDivisionError: 0.0 cannot be raised to a negative power")
				}
				return exec.AsValue(math.Pow(float64(x), float64(y))), nil
			}
			if p, ok := intPow(x, y); ok {
				return exec.AsValue(p), nil
			}
			return exec.AsValue(math.Pow(float64(x), float64(y))), nil
		}
	}
	x, y := a.float(), b.float()
	switch op {
	case "+":
		return exec.AsValue(x + y), nil
	case "-":
		return exec.AsValue(x - y), nil
	case "*":
		return exec.AsValue(x * y), nil
	case "/":
		if y == 0 {
			return nil, errors.New("ZeroDivisionError: float division by zero")
		}
		return exec.AsValue(x / y), nil
	case "//":
		if y == 0 {
			return nil, errors.New("ZeroDivisionError: float floor division by zero")
		}
		return exec.AsValue(math.Floor(x / y)), nil
	case "%":
		if y == 0 {
			return nil, errors.New("ZeroDivisionError: float modulo")
		}
		m := math.Mod(x, y)
		if m != 0 && (m < 0) != (y < 0) {
			m += y
		}
		return exec.AsValue(m), nil
	case "**":
		if x == 0 && y < 0 {
			return nil, errors.New("ZeroDivisionError: 0.0 cannot be raised to a negative power")
		}
		return exec.AsValue(math.Pow(x, y)), nil
	}
	return nil, fmt.Errorf("unknown operator %q", op)
}

func intPow(x, y int) (int, bool) {
	result := 1
	for y > 0 {
		if y&1 == 1 {
			hi, lo := bits.Mul64(uint64(abs(result)), uint64(abs(x)))
			if hi != 0 || lo > math.MaxInt64 {
				return 0, false
			}
			result *= x
		}
		y >>= 1
		if y > 0 {
			hi, lo := bits.Mul64(uint64(abs(x)), uint64(abs(x)))
			if hi != 0 || lo > math.MaxInt64 {
				return 0, false
			}
			x *= x
		}
	}
	return result, true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// contains implements `item in container`: substring for strings, element
// equality (numbers compare by value across int/float) for lists, key
// presence for mappings; `in` undefined/None is false, as iterating
// Jinja2's Undefined yields nothing.
func contains(container, item *exec.Value) (bool, error) {
	if container.IsNil() {
		return false, nil
	}
	switch c := container.Interface().(type) {
	case string:
		if !item.IsString() {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", pyTypeName(item))
		}
		return strings.Contains(c, item.String()), nil
	case map[string]any:
		if item.IsString() {
			_, ok := c[item.String()]
			return ok, nil
		}
		return false, nil
	case namespace:
		if item.IsString() {
			_, ok := c[item.String()]
			return ok, nil
		}
		return false, nil
	case []any:
		for _, e := range c {
			if item.EqualValueTo(exec.ToValue(e)) {
				return true, nil
			}
		}
		return false, nil
	case exec.ValuesList:
		for _, e := range c {
			if item.EqualValueTo(e) {
				return true, nil
			}
		}
		return false, nil
	case *exec.Dict:
		for _, p := range c.Pairs {
			if p.Key.EqualValueTo(item) {
				return true, nil
			}
		}
		return false, nil
	}
	rv := reflect.ValueOf(container.Interface())
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			if item.EqualValueTo(exec.ToValue(rv.Index(i))) {
				return true, nil
			}
		}
		return false, nil
	case reflect.Map:
		kt := rv.Type().Key()
		if kt.Kind() == reflect.String && item.IsString() {
			return rv.MapIndex(reflect.ValueOf(item.String()).Convert(kt)).IsValid(), nil
		}
		return false, nil
	}
	return false, fmt.Errorf("argument of type '%s' is not iterable", pyTypeName(container))
}

// filterToJSON is Jinja2's tojson: sorted keys, Python separators,
// HTML-safe escapes; `indent` (int or string) pretty-prints.
func filterToJSON(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	var indent *exec.Value
	if err := params.Take(
		exec.KeywordArgument("indent", exec.AsValue(nil), func(v *exec.Value) error { indent = v; return nil }),
	); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	limit := guardOf(e.Environment.Context).limits.MaxOutputBytes
	o := jsonOpts{limit: limit}
	switch {
	case indent.IsNil():
	case indent.IsInteger():
		n := max(indent.Integer(), 0)
		if n > limit {
			return exec.AsValue(fmt.Errorf("%w: tojson indent of %d", ErrLimit, n))
		}
		o.pretty, o.indent = true, strings.Repeat(" ", n)
	case indent.IsString():
		o.pretty, o.indent = true, indent.String()
	default:
		return exec.AsValue(fmt.Errorf("tojson: indent must be an integer or a string, not %s", pyTypeName(indent)))
	}
	var b strings.Builder
	if err := writePyJSON(&b, toNative(in, 0), o, 0); err != nil {
		return exec.AsValue(fmt.Errorf("tojson: %w", err))
	}
	return exec.AsSafeValue(b.String())
}

// filterFromJSON parses a JSON string into data (numbers normalised like
// Normalize); lists and mappings pass through, undefined stays undefined.
func filterFromJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() || in.IsNil() || in.IsList() || in.IsDict() {
		return in
	}
	if err := params.Take(); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	d := json.NewDecoder(strings.NewReader(in.String()))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		return exec.AsValue(fmt.Errorf("from_json: invalid JSON: %w", err))
	}
	if d.More() {
		return exec.AsValue(errors.New("from_json: invalid JSON: extra data after the value"))
	}
	return exec.ToValue(Normalize(out))
}

// filterB64Encode is base64 (standard alphabet, padded) of the value's text
// form, as UTF-8.
func filterB64Encode(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if err := params.Take(); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	return exec.AsValue(base64.StdEncoding.EncodeToString([]byte(in.String())))
}

// filterB64Decode decodes standard or URL-safe base64, padded or not, to
// text.
func filterB64Decode(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if err := params.Take(); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	s := strings.TrimSpace(in.String())
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return exec.AsValue(string(bytes.ToValidUTF8(b, []byte("\uFFFD"))))
		}
	}
	return exec.AsValue(errors.New("b64decode: invalid base64 input"))
}

// rangeFunction is Python's range(stop) / range(start, stop[, step]) as a
// list, refused above Limits.MaxRange elements (Jinja2 sandbox rule).
func rangeFunction(e *exec.Evaluator, params *exec.VarArgs) ([]int, error) {
	if len(params.KwArgs) > 0 {
		return nil, errors.New("range() takes no keyword arguments")
	}
	ints := make([]int, len(params.Args))
	for i, a := range params.Args {
		n, ok := toNumber(a)
		if !ok || n.isFloat {
			return nil, fmt.Errorf("range(): '%s' object cannot be interpreted as an integer", pyTypeName(a))
		}
		ints[i] = n.i
	}
	start, stop, step := 0, 0, 1
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return nil, fmt.Errorf("range expected 1 to 3 arguments, got %d", len(ints))
	}
	if step == 0 {
		return nil, errors.New("range() arg 3 must not be zero")
	}
	var n int
	if step > 0 && start < stop {
		n = int((uint64(stop-start) + uint64(step) - 1) / uint64(step))
	} else if step < 0 && start > stop {
		n = int((uint64(start-stop) + uint64(-step) - 1) / uint64(-step))
	}
	g := guardOf(e.Environment.Context)
	if n > g.limits.MaxRange || n < 0 {
		return nil, g.fail(fmt.Errorf("%w: range() of more than %d elements", ErrLimit, g.limits.MaxRange))
	}
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// namespace is the object namespace() returns: the only value whose
// attributes {% set ns.attr = ... %} may assign (Jinja2 semantics).
type namespace map[string]any

func namespaceFunction(_ *exec.Evaluator, params *exec.VarArgs) (namespace, error) {
	ns := namespace{}
	for _, a := range params.Args {
		m, ok := toNative(a, 0).(map[string]any)
		if !ok {
			return nil, fmt.Errorf("namespace() positional arguments must be mappings, not %s", pyTypeName(a))
		}
		for k, v := range m {
			ns[k] = v
		}
	}
	for k, v := range params.KwArgs {
		ns[k] = v.Interface()
	}
	return ns, nil
}
