package jsonx

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
)

// The strings that stand for the float values JSON cannot write. They are
// the tokens Python's json module writes for float('nan') and
// float('inf'), the spelling NoETL's results use.
const (
	NaN         = "NaN"
	Infinity    = "Infinity"
	NegInfinity = "-Infinity"
)

// Number converts a Go number to the engine's generic number value and
// reports whether v is a number at all (for any other value n is nil and
// ok false). It is the one rule every decoder and driver converter
// delegates to (jsonx.Normalize, template.Normalize, the duckdb and
// postgres converters, store decoding):
//
//	int, int8, int16, int32, int64      int64 (exact)
//	uint, uint8 … uint64, uintptr       int64 when ≤ math.MaxInt64 (exact),
//	                                    else float64 (the nearest double)
//	float64 (finite)                    float64, unchanged — whole values
//	                                    included (2.0 stays a float)
//	float32 (finite)                    float64 of its shortest decimal form
//	                                    (float32(0.1) → 0.1, not
//	                                    0.10000000149011612)
//	NaN, +Inf, -Inf (either width)      the strings "NaN", "Infinity",
//	                                    "-Infinity"
//	json.Number                         int64 when it is an integer literal
//	                                    in int64's range, else the float64 it
//	                                    reads as (±Inf when beyond the float
//	                                    range, so "Infinity"/"-Infinity"); a
//	                                    malformed literal stays its text
//	*big.Int                            int64 when it fits, else float64
//	                                    (nil: nil)
//	named types (type N int32, …)       by their kind, as above
//
// Why: every value the engine keeps crosses JSON (the state document, event
// batches, Cloud Task bodies, the results tier) between the step that made
// it and the step that reads it, and decoding is where numbers get their
// kind (Decode: an integer literal in int64's range is int64, any other
// number float64). The rule gives a Go number the kind it would get on
// that first crossing, so a value means the same before and after it
// travels and a path that converts it early agrees with one that does
// not:
//
//   - integers beyond int64 (a uint64 above math.MaxInt64, a big.Int) are
//     written by encoding/json as integer literals that decode as float64:
//     they are float64 here too. Such a value loses its low bits, as it does
//     in every JSON reader that keeps numbers as doubles (RFC 8259 §6:
//     integers beyond 2^53 are not interoperable); a playbook that needs
//     the exact digits (a 64-bit hash) casts to text in its SQL. A text
//     form here would make the same value a string on one path and a
//     number on another.
//   - float32 is written by encoding/json with 32-bit precision ("0.1"),
//     which decodes as the float64 0.1: widening the bits instead would
//     make the in-memory value differ from the one read back.
//   - JSON cannot encode NaN or ±Inf (json.Marshal fails, which would make
//     a state write fail for ever): they become the strings above, as the
//     SQL kinds always did for NaN and infinite columns.
//   - a whole float64 stays a float: a DOUBLE column stays a float column
//     in the results tier, and a JSON literal 2.0 decodes as a float. This
//     is the one place the wire changes a kind (encoding/json writes 2.0
//     as 2, which decodes as int64); templates compare 2 and 2.0 as equal
//     and print both as 2 (template.Normalize), so playbooks do not see it.
//
// Driver-specific types (DECIMAL/NUMERIC, HUGEINT, intervals, times, UUIDs)
// are not Go numbers: their converters (runner/kinds/duckdb,
// runner/kinds/postgres) decide their shape and call Number for the
// numbers they produce.
func Number(v any) (n any, ok bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		return Float(x), true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint64:
		return Uint(x), true
	case uint:
		return Uint(uint64(x)), true
	case uint32:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uintptr:
		return Uint(uint64(x)), true
	case float32:
		return Float32(x), true
	case json.Number:
		return numberLiteral(x), true
	case *big.Int:
		if x == nil {
			return nil, true
		}
		if x.IsInt64() {
			return x.Int64(), true
		}
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, true
	case nil, string, bool:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return Uint(rv.Uint()), true
	case reflect.Float32:
		return Float32(float32(rv.Float())), true
	case reflect.Float64:
		return Float(rv.Float()), true
	}
	return nil, false
}

// Uint converts an unsigned integer by Number's rule: int64 when it fits,
// else the nearest float64.
func Uint(u uint64) any {
	if u <= math.MaxInt64 {
		return int64(u)
	}
	return float64(u)
}

// Float converts a float64 by Number's rule: itself when finite, else the
// string NaN, Infinity or NegInfinity.
func Float(f float64) any {
	switch {
	case math.IsNaN(f):
		return NaN
	case math.IsInf(f, 1):
		return Infinity
	case math.IsInf(f, -1):
		return NegInfinity
	}
	return f
}

// Float32 converts a float32 by Number's rule: the float64 of its shortest
// decimal form (Widen32), or the string for NaN and ±Inf.
func Float32(f float32) any {
	return Float(Widen32(f))
}

// Widen32 returns the float64 of f's shortest decimal form, the value
// encoding/json's text of f decodes to (float32(0.1) → 0.1, where a
// conversion gives 0.10000000149011612); NaN and ±Inf convert as they are.
// It does not allocate (the results tier's Feather encoder uses it).
func Widen32(f float32) float64 {
	g := float64(f)
	if math.IsNaN(g) || math.IsInf(g, 0) {
		return g
	}
	var buf [32]byte
	d, err := strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], g, 'g', -1, 32)), 64)
	if err != nil { // unreachable: AppendFloat's output always parses
		return g
	}
	return d
}

// numberLiteral converts a json.Number by Number's rule.
func numberLiteral(x json.Number) any {
	s := string(x)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return s // not a number literal (json.Number("abc")): kept as text
	}
	return Float(f)
}
