package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// maxNormalizeDepth stops Normalize from recursing forever into cyclic Go
// values; deeper values are left as they are.
const maxNormalizeDepth = 512

// maxWholeFloat is the largest magnitude at which every whole float64 is
// exactly an integer (2^53).
const maxWholeFloat = 1 << 53

// Normalize returns v converted to the value shapes templates work on
// (NoETL DSL spec "Templates": values come from YAML, JSON and step results):
//
//   - nil, string, bool, int and finite non-whole float64 are kept;
//   - every other number (every integer and float type, json.Number,
//     *big.Int) takes its kind by the engine's one number rule
//     (jsonx.Number: integers in int64's range exact, a uint64 above
//     MaxInt64 the nearest float64, float32 its shortest decimal form,
//     NaN and ±Inf the strings "NaN", "Infinity", "-Infinity"); an int64
//     then becomes int;
//   - a whole float64 in ±2^53 (what encoding/json produces for the number
//     35) becomes int, so it prints as "35", not "35.0", and compares equal
//     to 35 whatever type the other side has;
//   - json.RawMessage is decoded;
//   - []byte becomes a string, time.Time an RFC 3339 string (nanoseconds
//     when present);
//   - maps become map[string]any (keys formatted with fmt when they are not
//     strings), slices and arrays become []any, pointers are dereferenced,
//     structs go through encoding/json (so only exported data is visible
//     and no Go method is ever reachable from a template);
//   - functions, channels and other non-data values become nil.
//
// Copy on write: containers that need no change are returned as they are
// (shared with the input), changed ones are fresh copies; the input is never
// modified. Values nested deeper than 512 levels are left unconverted.
func Normalize(v any) any {
	out, _ := normalize(v, 0)
	return out
}

// normalize implements Normalize and reports whether the result differs
// from v.
func normalize(v any, depth int) (any, bool) {
	if depth > maxNormalizeDepth {
		return v, false
	}
	switch x := v.(type) {
	case nil, string, bool, int:
		return v, false
	case float64:
		return normFloat(x)
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			ne, changed := normalize(e, depth+1)
			if changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = ne
			}
		}
		if out != nil {
			return out, true
		}
		return x, false
	case []any:
		var out []any
		for i, e := range x {
			ne, changed := normalize(e, depth+1)
			if changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = ne
			}
		}
		if out != nil {
			return out, true
		}
		return x, false
	case json.RawMessage:
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		var decoded any
		if err := d.Decode(&decoded); err != nil {
			return string(x), true
		}
		out, _ := normalize(decoded, depth+1)
		return out, true
	case []byte:
		return string(x), true
	case time.Time:
		return x.Format(time.RFC3339Nano), true
	case *exec.Value:
		if x == nil {
			return nil, true
		}
		out, _ := normalize(x.Interface(), depth+1)
		return out, true
	}
	if n, ok := jsonx.Number(v); ok {
		return nativeNumber(n), true
	}
	return normalizeReflect(reflect.ValueOf(v), depth)
}

// nativeNumber turns a value of jsonx.Number into a template value: int64
// as int, a whole float64 in ±2^53 as int (normFloat), strings and other
// floats as they are.
func nativeNumber(n any) any {
	switch x := n.(type) {
	case int64:
		return int(x)
	case float64:
		f, _ := normFloat(x)
		return f
	}
	return n
}

// normalizeReflect handles the named and composite types normalize's type
// switch does not list.
func normalizeReflect(rv reflect.Value, depth int) (any, bool) {
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, true
		}
		if rv.Kind() == reflect.Pointer && rv.Elem().Kind() == reflect.Struct {
			return normalizeStruct(rv.Interface(), depth)
		}
		out, _ := normalize(rv.Elem().Interface(), depth+1)
		return out, true
	case reflect.Map:
		if rv.IsNil() {
			return nil, true
		}
		out := make(map[string]any, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			out[mapKeyString(iter.Key())], _ = normalize(iter.Value().Interface(), depth+1)
		}
		return out, true
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, true
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(b), rv)
			return string(b), true
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i], _ = normalize(rv.Index(i).Interface(), depth+1)
		}
		return out, true
	case reflect.Struct:
		return normalizeStruct(rv.Interface(), depth)
	case reflect.String:
		return rv.String(), true
	case reflect.Bool:
		return rv.Bool(), true
	}
	// Functions, channels, complex numbers, unsafe pointers: not data.
	return nil, true
}

// normalizeStruct converts a struct through encoding/json so only its
// exported, serialisable data is visible to templates.
func normalizeStruct(v any, depth int) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v), true
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var decoded any
	if err := d.Decode(&decoded); err != nil {
		return fmt.Sprint(v), true
	}
	out, _ := normalize(decoded, depth+1)
	return out, true
}

func mapKeyString(k reflect.Value) string {
	for k.Kind() == reflect.Interface && !k.IsNil() {
		k = k.Elem()
	}
	if k.Kind() == reflect.String {
		return k.String()
	}
	return fmt.Sprint(k.Interface())
}

// normFloat converts a float64 template value: a whole one in ±2^53 to
// int (changed), NaN and ±Inf to their strings (jsonx.Float, changed),
// any other as it is.
func normFloat(f float64) (any, bool) {
	if f == math.Trunc(f) && f >= -maxWholeFloat && f <= maxWholeFloat {
		return int(f), true
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return jsonx.Float(f), true
	}
	return f, false
}

// toNative converts an evaluation result to plain Go data: nil, bool, int,
// float64, string, []any and map[string]any. Containers are always fresh
// copies, so a native result never aliases the Scope.
func toNative(v any, depth int) any {
	if depth > maxNormalizeDepth {
		return nil
	}
	switch x := v.(type) {
	case nil:
		return nil
	case *exec.Value:
		if x == nil || x.IsNil() {
			return nil
		}
		return toNative(x.Interface(), depth)
	case string, bool, int, float64:
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toNative(e, depth+1)
		}
		return out
	case namespace:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toNative(e, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toNative(e, depth+1)
		}
		return out
	case exec.ValuesList:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toNative(e, depth+1)
		}
		return out
	case *exec.Dict:
		if x == nil {
			return nil
		}
		return dictToNative(x, depth)
	case exec.Dict:
		return dictToNative(&x, depth)
	case *callableView:
		return nil
	case error:
		return x.Error()
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return toNative(rv.Elem().Interface(), depth)
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(b), rv)
			return string(b)
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = toNative(rv.Index(i).Interface(), depth+1)
		}
		return out
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			out[mapKeyString(iter.Key())] = toNative(iter.Value().Interface(), depth+1)
		}
		return out
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return nativeNumber(jsonx.Uint(rv.Uint()))
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	}
	// Callables and gonja helper objects: use their text form.
	return exec.ToValue(v).String()
}

func dictToNative(d *exec.Dict, depth int) map[string]any {
	out := make(map[string]any, len(d.Pairs))
	for _, p := range d.Pairs {
		out[p.Key.String()] = toNative(p.Value, depth+1)
	}
	return out
}

// Truth reports Python truthiness of a native value (NoETL DSL spec "Templates":
// `when:` conditions): nil, false, 0, 0.0, "" and empty lists and maps are
// false; every other value is true. Values of other Go types are judged
// after Normalize.
func Truth(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	n, changed := normalize(v, 0)
	if !changed {
		return true
	}
	return Truth(n)
}

// textFalse reports whether the text form of a rendered template means
// false: empty, or (ignoring case and surrounding space) "false", "none",
// "null" or "0" — the words Jinja2 prints for false/None values.
func textFalse(s string) bool {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "false", "none", "null", "0":
		return true
	}
	return false
}

// pyTypeName names a value's type the way Python error messages do.
func pyTypeName(v *exec.Value) string {
	switch {
	case v == nil || v.IsNil():
		return "NoneType"
	case v.IsBool():
		return "bool"
	case v.IsInteger():
		return "int"
	case v.IsFloat():
		return "float"
	case v.IsString():
		return "str"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "dict"
	case v.IsCallable():
		return "function"
	}
	return "object"
}

// writePyJSON writes v (a native value) the way Jinja2's tojson filter does:
// Python json.dumps with sort_keys=True and ensure_ascii=True, separators
// ", " and ": " (or "," and ": " with an indent), then <, >, & and ' escaped
// as \u003c, \u003e, \u0026 and \u0027 (HTML-safe).
func writePyJSON(b *strings.Builder, v any, o jsonOpts, level int) error {
	if o.limit > 0 && b.Len() > o.limit {
		return fmt.Errorf("%w: tojson would build a string longer than %d bytes", ErrLimit, o.limit)
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString("NaN")
		case math.IsInf(x, 1):
			b.WriteString("Infinity")
		case math.IsInf(x, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(exec.AsValue(x).String())
		}
	case string:
		writePyJSONString(b, x)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				writeSep(b, o)
			}
			if err := writeNewline(b, o, level+1); err != nil {
				return err
			}
			if err := writePyJSON(b, e, o, level+1); err != nil {
				return err
			}
		}
		if err := writeNewline(b, o, level); err != nil {
			return err
		}
		b.WriteByte(']')
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				writeSep(b, o)
			}
			if err := writeNewline(b, o, level+1); err != nil {
				return err
			}
			writePyJSONString(b, k)
			b.WriteString(": ")
			if err := writePyJSON(b, x[k], o, level+1); err != nil {
				return err
			}
		}
		if err := writeNewline(b, o, level); err != nil {
			return err
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("Object of type %T is not JSON serializable", v)
	}
	return nil
}

func writeSep(b *strings.Builder, o jsonOpts) {
	if !o.pretty {
		b.WriteString(", ")
	} else {
		b.WriteByte(',')
	}
}

func writeNewline(b *strings.Builder, o jsonOpts, level int) error {
	if !o.pretty {
		return nil
	}
	if o.limit > 0 && satAdd(b.Len(), satMul(level, len(o.indent))) > o.limit {
		return fmt.Errorf("%w: tojson would build a string longer than %d bytes", ErrLimit, o.limit)
	}
	b.WriteByte('\n')
	for range level {
		b.WriteString(o.indent)
	}
	return nil
}

// jsonOpts selects Python json.dumps layout: compact (pretty false) or one
// item per line indented by indent per level; limit (0: none) caps the
// output's length in bytes.
type jsonOpts struct {
	pretty bool
	indent string
	limit  int
}

const hexDigits = "0123456789abcdef"

func writePyJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '<', '>', '&', '\'':
			writeU(b, r)
		default:
			switch {
			case r < 0x20 || r == utf8.RuneError && size == 1:
				if r == utf8.RuneError {
					r = 0xfffd
				}
				writeU(b, r)
			case r < 0x7f:
				b.WriteRune(r)
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				writeU(b, r1)
				writeU(b, r2)
			default:
				writeU(b, r)
			}
		}
	}
	b.WriteByte('"')
}

func writeU(b *strings.Builder, r rune) {
	b.WriteString(`\u`)
	b.WriteByte(hexDigits[(r>>12)&0xf])
	b.WriteByte(hexDigits[(r>>8)&0xf])
	b.WriteByte(hexDigits[(r>>4)&0xf])
	b.WriteByte(hexDigits[r&0xf])
}
