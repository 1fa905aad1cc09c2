package jsonx

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"testing"
)

type (
	namedInt   int16
	namedUint  uint64
	namedFloat float32
)

// TestNumber is Number's rule, type by type, at the edges of each range.
func TestNumber(t *testing.T) {
	huge, _ := new(big.Int).SetString("170141183460469231731687303715884105727", 10)
	cases := []struct {
		name string
		in   any
		want any
	}{
		{"int", 7, int64(7)},
		{"int min", math.MinInt, int64(math.MinInt64)},
		{"int8 min", int8(math.MinInt8), int64(-128)},
		{"int16", int16(-300), int64(-300)},
		{"int32 max", int32(math.MaxInt32), int64(math.MaxInt32)},
		{"int64 max", int64(math.MaxInt64), int64(math.MaxInt64)},
		{"int64 min", int64(math.MinInt64), int64(math.MinInt64)},
		{"uint8 max", uint8(255), int64(255)},
		{"uint16 max", uint16(math.MaxUint16), int64(math.MaxUint16)},
		{"uint32 max", uint32(math.MaxUint32), int64(math.MaxUint32)},
		{"uint", uint(9), int64(9)},
		{"uintptr", uintptr(10), int64(10)},
		{"uint64 at MaxInt64 stays exact", uint64(math.MaxInt64), int64(math.MaxInt64)},
		{"uint64 above MaxInt64 is the nearest float", uint64(math.MaxInt64) + 1, 9223372036854775808.0},
		{"uint64 max", uint64(math.MaxUint64), 18446744073709551615.0},
		{"uint above MaxInt64", uint(math.MaxUint), float64(math.MaxUint)},
		{"float64", 2.5, 2.5},
		{"whole float64 stays a float", 2.0, 2.0},
		{"negative zero stays a float", math.Copysign(0, -1), math.Copysign(0, -1)},
		{"float64 max", math.MaxFloat64, math.MaxFloat64},
		{"float64 NaN", math.NaN(), "NaN"},
		{"float64 +Inf", math.Inf(1), "Infinity"},
		{"float64 -Inf", math.Inf(-1), "-Infinity"},
		{"float32 keeps its decimal form", float32(0.1), 0.1},
		{"float32 exact", float32(1.5), 1.5},
		{"float32 max", float32(math.MaxFloat32), 3.4028235e+38},
		{"float32 NaN", float32(math.NaN()), "NaN"},
		{"float32 -Inf", float32(math.Inf(-1)), "-Infinity"},
		{"json.Number integer", json.Number("42"), int64(42)},
		{"json.Number negative zero", json.Number("-0"), int64(0)},
		{"json.Number int64 max", json.Number("9223372036854775807"), int64(math.MaxInt64)},
		{"json.Number int64 min", json.Number("-9223372036854775808"), int64(math.MinInt64)},
		{"json.Number beyond int64", json.Number("9223372036854775808"), 9223372036854775808.0},
		{"json.Number below int64", json.Number("-9223372036854775809"), -9223372036854775809.0},
		{"json.Number with a point is a float", json.Number("1.0"), 1.0},
		{"json.Number with an exponent is a float", json.Number("2e3"), 2000.0},
		{"json.Number beyond the float range", json.Number("1e400"), "Infinity"},
		{"json.Number below the float range", json.Number("-1e400"), "-Infinity"},
		{"json.Number underflow", json.Number("1e-400"), 0.0},
		{"malformed json.Number stays text", json.Number("abc"), "abc"},
		{"big.Int small", big.NewInt(-5), int64(-5)},
		{"big.Int huge", huge, 1.7014118346046923e+38},
		{"big.Int nil", (*big.Int)(nil), nil},
		{"named int", namedInt(-3), int64(-3)},
		{"named uint above MaxInt64", namedUint(math.MaxUint64), 18446744073709551615.0},
		{"named float32", namedFloat(0.1), 0.1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Number(c.in)
			if !ok {
				t.Fatalf("Number(%#v): not a number", c.in)
			}
			if !same(got, c.want) {
				t.Fatalf("Number(%#v) = %#v (%T), want %#v (%T)", c.in, got, got, c.want, c.want)
			}
		})
	}
	for _, v := range []any{nil, "1", true, []byte("1"), big.NewFloat(1), complex(1, 0), struct{}{}} {
		if n, ok := Number(v); ok || n != nil {
			t.Errorf("Number(%#v) = %#v, %v; want not a number", v, n, ok)
		}
	}
}

// same compares numbers by kind and bits (so -0 and 0 differ).
func same(a, b any) bool {
	if fa, ok := a.(float64); ok {
		fb, ok := b.(float64)
		return ok && math.Float64bits(fa) == math.Float64bits(fb)
	}
	return reflect.DeepEqual(a, b)
}

// TestNumberSurvivesTheWire is why the rule is what it is: a converted
// number has the kind (and value) it gets back from encoding/json and
// Decode, the trip every value the engine keeps makes — except a whole
// float, which encoding/json writes as an integer literal (documented on
// Number).
func TestNumberSurvivesTheWire(t *testing.T) {
	inputs := []any{0, -1, int8(5), int16(-7), int32(1 << 30), int64(math.MinInt64), int64(math.MaxInt64),
		uint8(1), uint16(2), uint32(math.MaxUint32), uint(3), uint64(math.MaxInt64), uint64(math.MaxInt64) + 1,
		uint64(math.MaxUint64), 0.5, -1.25, 1e300, 1e-300, float32(0.1), float32(3.3), float32(-2.75e-20),
		json.Number("12"), json.Number("1.5"), json.Number("9223372036854775808"), big.NewInt(77),
		new(big.Int).Lsh(big.NewInt(1), 70), math.NaN(), math.Inf(1), float32(math.Inf(-1)), namedInt(4)}
	for _, in := range inputs {
		n, _ := Number(in)
		b, err := json.Marshal(n)
		if err != nil {
			t.Errorf("Number(%v) = %#v cannot be encoded: %v", in, n, err)
			continue
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !same(back, n) {
			t.Errorf("Number(%v) = %#v (%T) comes back from JSON as %#v (%T)", in, n, n, back, back)
		}
		// Converting the original through JSON directly (a path that
		// never calls Number) gives the same value, for every number JSON
		// can write.
		if raw, err := json.Marshal(in); err == nil {
			direct, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !same(direct, n) {
				t.Errorf("%v (%T): Number gives %#v, JSON gives %#v (%T)", in, in, n, direct, direct)
			}
		}
	}
	// The documented exception: a whole float stays a float, JSON makes it
	// an integer.
	if back, _ := Decode([]byte(mustJSON(t, 2.0))); !same(back, int64(2)) {
		t.Errorf("encoding/json no longer writes 2.0 as 2 (%#v): revisit Number's documentation", back)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNormalize(t *testing.T) {
	in := map[string]any{"a": json.Number("1"), "b": []any{json.Number("2.5"), int32(3), uint64(math.MaxUint64), float32(0.1)},
		"c": map[string]any{"d": math.NaN(), "e": "s", "f": nil, "g": true}}
	want := map[string]any{"a": int64(1), "b": []any{2.5, int64(3), 18446744073709551615.0, 0.1},
		"c": map[string]any{"d": "NaN", "e": "s", "f": nil, "g": true}}
	got := Normalize(in)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Normalize = %#v", got)
	}
	if !reflect.DeepEqual(in, want) {
		t.Fatal("Normalize converts maps and slices in place")
	}
	if NormalizeMap(nil) != nil {
		t.Fatal("NormalizeMap(nil) is not nil")
	}
}

type inner struct {
	V    any            `json:"v"`
	Rest []any          `json:"rest"`
	n    any            // unexported: never touched
	Skip json.Number    `json:"skip"` // not generic: kept as decoded
	Tags map[string]int `json:"tags"`
}

type outer struct {
	Args    map[string]any     `json:"args"`
	Item    any                `json:"item"`
	List    []any              `json:"list"`
	Ptr     *inner             `json:"ptr"`
	Val     inner              `json:"val"`
	ByName  map[string]*inner  `json:"by_name"`
	ByValue map[string]inner   `json:"by_value"`
	Arr     [2]any             `json:"arr"`
	Nested  [][]map[string]any `json:"nested"`
	Self    *outer             `json:"self"`
	Err     error              `json:"-"`
}

// TestUnmarshalStruct: every generic value of a struct target gets its
// kind, at any depth, whatever holds it (the store decodes states,
// commands, outcomes and plans this way; a field added later is covered).
func TestUnmarshalStruct(t *testing.T) {
	data := `{"args": {"a": 1, "b": [2, 2.5]}, "item": 3, "list": [4, {"x": 5}],
		"ptr": {"v": 6, "rest": [7], "skip": 8, "tags": {"t": 9}}, "val": {"v": 10.5},
		"by_name": {"k": {"v": 11}}, "by_value": {"k": {"v": 12, "rest": [13]}}, "arr": [14, 1e400],
		"nested": [[{"n": 15}]], "self": {"item": 16, "self": {"item": 17}}}`
	var o outer
	if err := Unmarshal([]byte(data), &o); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what string
		got  any
		want any
	}{
		{"args", o.Args, map[string]any{"a": int64(1), "b": []any{int64(2), 2.5}}},
		{"item", o.Item, int64(3)},
		{"list", o.List, []any{int64(4), map[string]any{"x": int64(5)}}},
		{"ptr.v", o.Ptr.V, int64(6)},
		{"ptr.rest", o.Ptr.Rest, []any{int64(7)}},
		{"ptr.skip", o.Ptr.Skip, json.Number("8")},
		{"val.v", o.Val.V, 10.5},
		{"by_name", o.ByName["k"].V, int64(11)},
		{"by_value.v", o.ByValue["k"].V, int64(12)},
		{"by_value.rest", o.ByValue["k"].Rest, []any{int64(13)}},
		{"arr", o.Arr, [2]any{int64(14), "Infinity"}},
		{"nested", o.Nested, [][]map[string]any{{{"n": int64(15)}}}},
		{"self.item", o.Self.Item, int64(16)},
		{"self.self.item", o.Self.Self.Item, int64(17)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
	var l []any
	if err := Unmarshal([]byte(`[1, 2.5, {"a": 3}]`), &l); err != nil || !reflect.DeepEqual(l, []any{int64(1), 2.5, map[string]any{"a": int64(3)}}) {
		t.Fatalf("Unmarshal into []any: %#v %v", l, err)
	}
	var v any
	if err := Unmarshal([]byte(`{"a": [1, 2.5]}`), &v); err != nil || !reflect.DeepEqual(v, map[string]any{"a": []any{int64(1), 2.5}}) {
		t.Fatalf("Unmarshal into any: %#v %v", v, err)
	}
	NormalizeInto(nil)           // not a pointer: nothing to do
	NormalizeInto((*outer)(nil)) // nil pointer: nothing to do
	NormalizeInto(&struct{ n any }{n: json.Number("1")})
}

// Types that recurse through each other are decided without looping.
type loopA struct {
	B *loopB `json:"b"`
}
type loopB struct {
	A *loopA `json:"a"`
	V any    `json:"v"`
}

func TestUnmarshalMutualRecursion(t *testing.T) {
	var a loopA
	if err := Unmarshal([]byte(`{"b": {"a": {"b": {"v": 1}}, "v": 2}}`), &a); err != nil {
		t.Fatal(err)
	}
	if a.B.V != int64(2) || a.B.A.B.V != int64(1) {
		t.Fatalf("%#v %#v", a.B.V, a.B.A.B.V)
	}
	var b loopB // decided after loopA: must not reuse a provisional answer
	if err := Unmarshal([]byte(`{"a": {"b": {"v": 3}}}`), &b); err != nil || b.A.B.V != int64(3) {
		t.Fatalf("%#v %v", b, err)
	}
}

func ExampleNumber() {
	for _, v := range []any{uint64(1 << 63), float32(0.1), json.Number("1e400"), int8(-1)} {
		n, _ := Number(v)
		fmt.Printf("%T %v\n", n, n)
	}
	// Output:
	// float64 9.223372036854776e+18
	// float64 0.1
	// string Infinity
	// int64 -1
}

func TestWiden32(t *testing.T) {
	for _, f := range []float32{0.1, 1.5, -3.3, 1e-30, math.MaxFloat32, math.SmallestNonzeroFloat32} {
		b, _ := json.Marshal(f)
		var back float64
		if err := json.Unmarshal(b, &back); err != nil || Widen32(f) != back {
			t.Errorf("Widen32(%v) = %v, JSON gives %v", f, Widen32(f), back)
		}
	}
	if g := Widen32(float32(math.Inf(1))); !math.IsInf(g, 1) || !math.IsNaN(Widen32(float32(math.NaN()))) {
		t.Error("Widen32 keeps NaN and infinities")
	}
	if n := testing.AllocsPerRun(100, func() { _ = Widen32(0.1) }); n != 0 {
		t.Errorf("Widen32 allocates %v times", n)
	}
}
