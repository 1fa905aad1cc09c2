// Package jsonx decodes JSON into generic Go values without losing integer
// precision, and holds the engine's one rule for the kind of a number
// (Number): an integer literal in int64's range becomes int64, any other
// number float64 (encoding/json's default float64-for-everything would turn
// 100 into 100.0 and break playbooks that compare ints), NaN and ±Inf the
// strings "NaN", "Infinity" and "-Infinity". Every Go number type, and
// json.Number, follows the same rule wherever it is converted (templates,
// tool results, store decoding), so a value has the same kind before and
// after it crosses JSON.
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"sync"
)

// Unmarshal decodes data into v (like json.Unmarshal, with numbers kept
// as json.Number while decoding) and then gives every number inside a
// generic value its kind by Number's rule: in any, map[string]any and
// []any targets, and in every field of type any, map[string]any, []any
// (and maps, slices, arrays and pointers of those, at any depth) of a
// struct target. A struct field added later is covered without a caller
// having to list it.
func Unmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	NormalizeInto(v)
	return nil
}

// Normalize walks v and gives every number its kind by Number's rule
// (json.Number, every Go integer and float type), in place for maps and
// slices ([]any, map[string]any); it returns the converted value.
func Normalize(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64:
		return v
	case float64:
		return Float(x)
	case map[string]any:
		for k, e := range x {
			x[k] = Normalize(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = Normalize(e)
		}
		return x
	}
	if n, ok := Number(v); ok {
		return n
	}
	return v
}

// NormalizeInto applies Normalize to every generic value reachable from
// ptr, a pointer to a decoded value: the value itself when it is an any,
// map[string]any or []any, and every exported field, element and map
// value of structs, slices, arrays, maps and pointers below it whose type
// can hold one. Values of other types are left alone. It is what
// Unmarshal does after decoding.
func NormalizeInto(ptr any) {
	rv := reflect.ValueOf(ptr)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return
	}
	walk(rv.Elem())
}

// The generic types, normalised by Normalize without reflection.
var (
	anyType   = reflect.TypeFor[any]()
	mapType   = reflect.TypeFor[map[string]any]()
	sliceType = reflect.TypeFor[[]any]()
)

// walk normalises the generic values inside rv (addressable, or a map).
func walk(rv reflect.Value) {
	t := rv.Type()
	switch t {
	case anyType:
		if rv.IsNil() {
			return
		}
		switch v := rv.Interface().(type) {
		case string, bool:
		case map[string]any, []any:
			Normalize(v) // in place
		default:
			if rv.CanSet() {
				rv.Set(anyValue(Normalize(v)))
			}
		}
		return
	case mapType, sliceType:
		if !rv.IsNil() {
			Normalize(rv.Interface()) // in place
		}
		return
	}
	if !holdsGeneric(t) {
		return
	}
	switch rv.Kind() {
	case reflect.Pointer:
		if !rv.IsNil() {
			walk(rv.Elem())
		}
	case reflect.Struct:
		for i := range rv.NumField() {
			if t.Field(i).IsExported() {
				walk(rv.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			walk(rv.Index(i))
		}
	case reflect.Map:
		if rv.IsNil() {
			return
		}
		et := t.Elem()
		iter := rv.MapRange()
		for iter.Next() {
			e := iter.Value()
			switch et.Kind() {
			case reflect.Interface: // any (holdsGeneric)
				if !e.IsNil() {
					rv.SetMapIndex(iter.Key(), anyValue(Normalize(e.Interface())))
				}
			case reflect.Pointer, reflect.Map, reflect.Slice:
				walk(e) // shares its target with the map's copy
			default: // structs and arrays: normalise a copy, store it back
				c := reflect.New(et).Elem()
				c.Set(e)
				walk(c)
				rv.SetMapIndex(iter.Key(), c)
			}
		}
	}
}

// anyValue returns v as a reflect.Value of type any (the zero any for
// nil).
func anyValue(v any) reflect.Value {
	out := reflect.New(anyType).Elem()
	if v != nil {
		out.Set(reflect.ValueOf(v))
	}
	return out
}

// generic caches holdsGeneric per type.
var generic sync.Map // reflect.Type → bool

// holdsGeneric reports whether a value of type t can hold an any (so a
// number that Normalize converts) anywhere inside it, through exported
// fields.
func holdsGeneric(t reflect.Type) bool {
	if v, ok := generic.Load(t); ok {
		return v.(bool)
	}
	r := holdsGenericIn(t, map[reflect.Type]bool{})
	generic.Store(t, r)
	return r
}

// holdsGenericIn implements holdsGeneric; a type met again while it is
// being decided (a recursive type) counts as holding one, which at worst
// walks a value that has nothing to convert.
func holdsGenericIn(t reflect.Type, deciding map[reflect.Type]bool) bool {
	if v, ok := generic.Load(t); ok {
		return v.(bool)
	}
	if deciding[t] {
		return true
	}
	deciding[t] = true
	defer delete(deciding, t)
	switch t.Kind() {
	case reflect.Interface:
		return t == anyType
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return holdsGenericIn(t.Elem(), deciding)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsGenericIn(f.Type, deciding) {
				return true
			}
		}
	}
	return false
}

// Clone deep-copies a JSON-shaped value through a JSON round trip. Values
// that cannot be encoded are returned as-is.
func Clone(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// Size returns the length of v's JSON encoding (0 if it cannot be encoded).
func Size(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// Decode decodes exactly one JSON value from data into a generic value
// (nil, bool, string, int64, float64, []any, map[string]any). Trailing
// non-whitespace data is an error.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON: trailing data after the first value")
	}
	return Normalize(v), nil
}

// NormalizeMap is Normalize for a map (nil stays nil).
func NormalizeMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return Normalize(m).(map[string]any)
}
