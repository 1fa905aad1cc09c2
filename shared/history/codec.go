// Package history holds the typed payload of every event type of the log
// (the attributes of go-workflows' history package are the model): one Go
// type per payload shape, its wire keys spelt once in its json tags, one
// registry from event type to payload type (attributes.go), and the one
// codec between those types and the wire form, types.Event.Payload (a
// generic JSON object). Writers build the typed value and encode it
// (Encode); readers decode it (Decode); no other package reads a payload
// by its keys, so a writer and a reader cannot disagree on a key or on the
// kind of its value.
//
// The wire form is a map, not bytes: the event JSON the api returns, the
// Firestore document the store keeps and the value the in-memory drivers
// pass on. So the codec walks the json tags itself instead of going
// through encoding/json's bytes: a tag's name is the key, omitempty and
// omitzero omit a value as encoding/json does, and the opaque values a
// payload carries (results, ctx, args, error entries: the fields typed any
// or map[string]any) travel untouched, with their numbers as they are.
// Scalars keep their Go kinds (an int stays an int), a named kind is
// written as its base kind, a struct as a map[string]any. Two rules
// encoding/json has no tag for: a list tagged wire:"list" is written as a
// []any, [] when nil, and a payload is null when it has no
// key to write (the payload-less events) or a field tagged
// wire:"null-if-zero" is zero (task.started without a child).
//
// Decode accepts the values as they come back from JSON (jsonx: whole
// numbers int64, other numbers float64), Firestore (int64, float64) or
// memory (int, the typed values themselves), so that Decode then Encode
// of a recorded payload gives it back (roundtrip_test.go), and it reports
// a key the type does not know or a value of the wrong kind.
package history

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Payload is the typed payload of one or more event types (the registry
// lists which), as writers build it (a value). It is implemented by this
// package's payload types only: each embeds attrs.
type Payload interface{ isPayload() }

// attrs marks a payload type (embedded, it adds no key).
type attrs struct{}

func (attrs) isPayload() {}

// Attributes is a pointer to a typed payload, as readers fill it (For).
type Attributes interface{ Payload }

// For returns new zero attributes (a pointer) for the payload of event
// type t, or nil when t is not an engine event type (an external event's
// payload is opaque).
func For(t types.EventType) Attributes {
	p, ok := registry[t]
	if !ok {
		return nil
	}
	return reflect.New(reflect.TypeOf(p)).Interface().(Attributes)
}

// EventTypes returns the engine event types that have attributes, sorted.
func EventTypes() []types.EventType {
	out := make([]types.EventType, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Encode returns the wire form of p (a payload value or attributes
// pointer) for types.Event.Payload: a new map, or nil for a payload with
// no key to write (the JSON "payload": null of the log).
func Encode(p Payload) map[string]any {
	v := reflect.ValueOf(p)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return nil
	}
	for _, f := range fieldsOf(v.Type()) {
		if f.nullIf && v.Field(f.index).IsZero() {
			return nil
		}
	}
	if m := encodeStruct(v); len(m) > 0 {
		return m
	}
	return nil
}

// DecodeInto fills a (a pointer to attributes) from payload, the wire form
// of an event of type t. Every well-formed key is decoded; the error
// names the first key that is malformed (a value of the wrong kind) or
// unknown to a's type, or says that t does not carry a's type.
func DecodeInto(a Attributes, t types.EventType, payload map[string]any) error {
	r := &reader{t: t}
	p, ok := registry[t]
	if !ok || reflect.PointerTo(reflect.TypeOf(p)) != reflect.TypeOf(a) {
		r.fail("history: %s does not carry %T", t, a)
	}
	if v := reflect.ValueOf(a); v.Kind() == reflect.Pointer && !v.IsNil() {
		r.object(v.Elem(), payload, "")
	}
	return r.err
}

// Decode returns the attributes T of ev's payload (see DecodeInto: on an
// error the value holds every key that decoded).
func Decode[T any, P interface {
	*T
	Attributes
}](ev types.Event) (T, error) {
	var v T
	err := DecodeInto(P(&v), ev.EventType, ev.Payload)
	return v, err
}

// field is one wire key of a struct type, read from its tags.
type field struct {
	index     int
	key       string
	omitEmpty bool // json omitempty: false, 0, "", nil, empty list or map
	omitZero  bool // json omitzero: the type's zero value (a nil map, not an empty one)
	list      bool // wire:"list": a nil list is written []
	nullIf    bool // wire:"null-if-zero": the payload is null when the field is zero
}

var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf returns the wire keys of struct type t, in field order
// (untagged and unexported fields are not on the wire).
func fieldsOf(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("json")
		if !ok || !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		w := sf.Tag.Get("wire")
		f := field{index: i, key: name, list: w == "list", nullIf: w == "null-if-zero"}
		for _, o := range strings.Split(opts, ",") {
			f.omitEmpty = f.omitEmpty || o == "omitempty"
			f.omitZero = f.omitZero || o == "omitzero"
		}
		out = append(out, f)
	}
	fieldCache.Store(t, out)
	return out
}

// encodeStruct returns the wire form of struct value v (every key its tags
// do not omit).
func encodeStruct(v reflect.Value) map[string]any {
	m := map[string]any{}
	for _, f := range fieldsOf(v.Type()) {
		fv := v.Field(f.index)
		if (f.omitZero && fv.IsZero()) || (f.omitEmpty && empty(fv)) {
			continue
		}
		if f.list && fv.Kind() == reflect.Slice {
			m[f.key] = encodeList(fv) // [] when nil
			continue
		}
		m[f.key] = encodeValue(fv)
	}
	return m
}

// empty is encoding/json's omitempty test.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// encodeValue returns the wire form of a typed value: opaque values (any,
// map[string]any), numbers, booleans and lists of them as they are (a
// named kind as its base kind: types.Status as a string), a struct as an
// object.
func encodeValue(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return v.Interface()
	case reflect.String:
		return v.String()
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Float32, reflect.Float64:
		return v.Convert(basic[v.Kind()]).Interface()
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return encodeValue(v.Elem())
	case reflect.Struct:
		return encodeStruct(v)
	case reflect.Map:
		if v.Type() == reflect.TypeFor[map[string]any]() {
			return v.Interface()
		}
		if v.IsNil() {
			return nil
		}
		m := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			m[it.Key().String()] = encodeValue(it.Value())
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if t := v.Type(); t.Elem() == basic[t.Elem().Kind()] {
			return v.Interface()
		}
		return encodeList(v)
	}
	panic(fmt.Sprintf("history: no wire form for %s", v.Type()))
}

// encodeList returns the wire form of list v as a []any.
func encodeList(v reflect.Value) []any {
	l := make([]any, v.Len())
	for i := range l {
		l[i] = encodeValue(v.Index(i))
	}
	return l
}

// basic maps a scalar kind to its unnamed type.
var basic = map[reflect.Kind]reflect.Type{
	reflect.Bool: reflect.TypeFor[bool](), reflect.String: reflect.TypeFor[string](),
	reflect.Int: reflect.TypeFor[int](), reflect.Int8: reflect.TypeFor[int8](), reflect.Int16: reflect.TypeFor[int16](),
	reflect.Int32: reflect.TypeFor[int32](), reflect.Int64: reflect.TypeFor[int64](),
	reflect.Float32: reflect.TypeFor[float32](), reflect.Float64: reflect.TypeFor[float64](),
}

// reader decodes one payload, remembering the first error.
type reader struct {
	t   types.EventType
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) bad(k, want string, v any) {
	r.fail("history: %s payload %q: want %s, got %T", r.t, k, want, v)
}

// object fills struct dst from the wire object m (the keys of a nested
// object named with prefix), reporting its keys unknown to dst's type.
func (r *reader) object(dst reflect.Value, m map[string]any, prefix string) {
	seen := map[string]bool{}
	for _, f := range fieldsOf(dst.Type()) {
		seen[f.key] = true
		if x, ok := m[f.key]; ok && x != nil {
			r.value(dst.Field(f.index), x, prefix+f.key)
		}
	}
	var extra []string
	for k := range m {
		if !seen[k] {
			extra = append(extra, prefix+k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		r.fail("history: %s payload: unknown key(s) %s", r.t, strings.Join(extra, ", "))
	}
}

// value sets dst from the non-null wire value x of key k.
func (r *reader) value(dst reflect.Value, x any, k string) {
	xv := reflect.ValueOf(x)
	if xv.Type().AssignableTo(dst.Type()) && dst.Kind() != reflect.Slice && dst.Kind() != reflect.Map {
		dst.Set(xv) // opaque values, and a typed value as memory keeps it
		return
	}
	switch dst.Kind() {
	case reflect.String:
		if xv.Kind() != reflect.String {
			r.bad(k, "a string", x)
			return
		}
		dst.SetString(xv.String())
	case reflect.Bool:
		b, ok := x.(bool)
		if !ok {
			r.bad(k, "a boolean", x)
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := asInt(x)
		if !ok {
			r.bad(k, "an integer", x)
		}
		dst.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f, ok := asFloat(x)
		if !ok {
			r.bad(k, "a number", x)
		}
		dst.SetFloat(f)
	case reflect.Pointer:
		if xv.Kind() == reflect.Pointer && xv.Type().Elem() == dst.Type().Elem() {
			x = xv.Elem().Interface()
		}
		p := reflect.New(dst.Type().Elem())
		r.value(p.Elem(), x, k)
		dst.Set(p)
	case reflect.Struct:
		m, ok := x.(map[string]any)
		if !ok {
			r.bad(k, "an object", x)
			return
		}
		r.object(dst, m, k+".")
	case reflect.Map:
		if xv.Kind() != reflect.Map || xv.Type().Key().Kind() != reflect.String {
			r.bad(k, "an object", x)
			return
		}
		out := reflect.MakeMapWithSize(dst.Type(), xv.Len())
		for it := xv.MapRange(); it.Next(); {
			e := reflect.New(dst.Type().Elem()).Elem()
			if ev := it.Value().Interface(); ev != nil {
				r.value(e, ev, k+"."+it.Key().String())
			}
			out.SetMapIndex(it.Key().Convert(dst.Type().Key()), e)
		}
		dst.Set(out)
	case reflect.Slice:
		if xv.Kind() != reflect.Slice {
			r.bad(k, "a list", x)
			return
		}
		out := reflect.MakeSlice(dst.Type(), xv.Len(), xv.Len())
		for i := range xv.Len() {
			if ev := xv.Index(i).Interface(); ev != nil {
				r.value(out.Index(i), ev, fmt.Sprintf("%s[%d]", k, i))
			}
		}
		dst.Set(out)
	default:
		r.bad(k, dst.Type().String(), x)
	}
}

// asInt reads a payload number as an int64 by the engine's one number
// rule (jsonx.Number: any Go integer, json.Number), accepting a whole
// float64 (a number that crossed a JSON reader keeping doubles).
func asInt(v any) (int64, bool) {
	n, _ := jsonx.Number(v)
	switch x := n.(type) {
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), true
		}
	}
	return 0, false
}

// asFloat reads a payload number as a float64 by jsonx.Number's rule.
func asFloat(v any) (float64, bool) {
	n, _ := jsonx.Number(v)
	switch x := n.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
