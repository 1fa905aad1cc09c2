// Package jsonx decodes JSON into generic Go values without losing integer
// precision: whole numbers become int64, others float64 (encoding/json's
// default float64-for-everything would turn 100 into 100.0 and break
// playbooks that compare ints, DSL.md "Templates").
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Unmarshal decodes data into v (like json.Unmarshal) and normalises every
// json.Number inside generic values (any, map[string]any, []any) to int64
// or float64.
func Unmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	switch p := v.(type) {
	case *any:
		*p = Normalize(*p)
	case *map[string]any:
		for k, x := range *p {
			(*p)[k] = Normalize(x)
		}
	case *[]any:
		for i, x := range *p {
			(*p)[i] = Normalize(x)
		}
	}
	return nil
}

// Normalize walks v and converts json.Number values to int64 (when integral
// and in range) or float64, in place for maps and slices.
func Normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
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
	return v
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

// NormalizeMap is Normalize for a map (nil stays nil): json.Number values
// left by decoding into struct fields of type map[string]any become int64
// or float64.
func NormalizeMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return Normalize(m).(map[string]any)
}
