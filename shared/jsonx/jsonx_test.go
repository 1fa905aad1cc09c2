package jsonx

import (
	"reflect"
	"testing"
)

func TestDecode(t *testing.T) {
	v, err := Decode([]byte(`{"i": 1, "neg": -3, "f": 1.0, "e": 2e3, "big": 9223372036854775808, "l": [1, 2.5, null, "s", true]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"i": int64(1), "neg": int64(-3), "f": 1.0, "e": 2000.0, "big": 9223372036854775808.0,
		"l": []any{int64(1), 2.5, nil, "s", true}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("%#v", v)
	}
	if _, err := Decode([]byte(`{} x`)); err == nil {
		t.Fatal("trailing data accepted")
	}
	if _, err := Decode([]byte(`{`)); err == nil {
		t.Fatal("truncated JSON accepted")
	}
}
