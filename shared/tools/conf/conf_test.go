package conf

import (
	"encoding/json"
	"testing"
	"time"
)

func TestStringify(t *testing.T) {
	cases := map[string]any{
		"": nil, "s": "s", "true": true, "7": 7, "8": int64(8), "2": 2.0, "0.5": 0.5, "1e+20": 1e20,
		"3": json.Number("3"), `{"a":1}`: map[string]any{"a": 1}, `[1,"x"]`: []any{1, "x"},
	}
	for want, in := range cases {
		if got := Stringify(in); got != want {
			t.Errorf("Stringify(%#v) = %q, want %q", in, got, want)
		}
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[any]time.Duration{1: time.Second, 0.25: 250 * time.Millisecond, "2": 2 * time.Second, int64(3): 3 * time.Second} {
		if got, ok := Seconds(in); !ok || got != want {
			t.Errorf("Seconds(%v) = %v %v", in, got, ok)
		}
	}
	if _, ok := Seconds("soon"); ok {
		t.Error("non-number accepted")
	}
}

func TestLookup(t *testing.T) {
	m := map[string]any{"a": nil, "b": "x", "c": ""}
	if v, ok := String(m, "a", "b"); !ok || v != "x" {
		t.Fatalf("%v %v", v, ok)
	}
	if _, ok := String(m, "c"); ok {
		t.Fatal("empty string counted as present")
	}
	if o := ConfigError("bad %s", "x"); o.Status != "error" || o.Error.Kind != "config" || o.Error.Message != "bad x" || o.Error.Retryable {
		t.Fatalf("%+v", o.Error)
	}
}
