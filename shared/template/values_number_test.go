package template

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"testing"
)

// TestNormalizeNumbers: template values take their number kind from the
// engine's one rule (jsonx.Number), then int64 becomes int and a whole
// float within ±2^53 becomes int.
func TestNormalizeNumbers(t *testing.T) {
	type level uint8
	cases := []struct {
		name string
		in   any
		want any
	}{
		{"int64", int64(-4), -4},
		{"uint64 above MaxInt64 is the nearest float", uint64(math.MaxUint64), 18446744073709551615.0},
		{"uint at MaxInt64 is exact", uint64(math.MaxInt64), math.MaxInt64},
		{"float32 keeps its decimal form", float32(0.1), 0.1},
		{"whole float32", float32(3), 3},
		{"NaN is its string", math.NaN(), "NaN"},
		{"-Inf is its string", float32(math.Inf(-1)), "-Infinity"},
		{"json.Number beyond the float range", json.Number("1e400"), "Infinity"},
		{"json.Number whole float", json.Number("2.0"), 2},
		{"json.Number beyond int64", json.Number("9223372036854775808"), 9223372036854775808.0},
		{"big.Int", big.NewInt(12), 12},
		{"named unsigned", level(7), 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Normalize(c.in); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Normalize(%#v) = %#v (%T), want %#v (%T)", c.in, got, got, c.want, c.want)
			}
		})
	}
}
