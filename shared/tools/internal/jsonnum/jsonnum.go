// Package jsonnum decodes JSON into generic Go values while keeping integers
// integers: a number literal without fraction or exponent becomes int64 (when
// it fits), every other number float64. Tools use it for everything that
// crosses a JSON boundary (python results, HTTP bodies, jsonb columns) so that
// playbooks comparing ints keep working (DSL.md "Templates": "int stays int").
package jsonnum

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

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

// Normalize walks v (maps and slices are modified in place) and converts
// every json.Number to int64 when the literal is integral and in range, else
// to float64.
func Normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		return Number(x)
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
	default:
		return v
	}
}

// Number converts one json.Number: an integer literal ("12", "-3") becomes
// int64 when it fits, everything else ("1.0", "2e3", huge integers) float64.
func Number(n json.Number) any {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
