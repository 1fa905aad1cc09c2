package history_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/history"
)

// fill sets every exported field of v (recursively) to a non-zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(2)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem())
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e)
		m.SetMapIndex(reflect.ValueOf("k"), e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}

// TestTagsAreTheWireForm: the json tags alone spell the wire form: for
// every payload type, with every field set and with none set, Encode
// writes what encoding/json writes of the struct (apart from the
// payload-less null and the wire:"list" [] that encoding/json has no tag
// for), so the keys are spelt in one place.
func TestTagsAreTheWireForm(t *testing.T) {
	for _, typ := range history.EventTypes() {
		for _, full := range []bool{true, false} {
			a := history.For(typ)
			if full {
				fill(reflect.ValueOf(a).Elem())
			}
			enc := history.Encode(a)
			if enc == nil {
				if full && typ != "workflow.started" && typ != "task.done" {
					t.Errorf("%s: a payload with every field set encoded null", typ)
				}
				continue
			}
			got, err := json.Marshal(enc)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			if typ == "next.evaluated" && !full {
				want = []byte(`{"fired":[],"matched":[]}`)
			}
			got, want = canonical(t, got), canonical(t, want)
			if string(got) != string(want) {
				t.Errorf("%s (full %v):\n Encode %s\n   json %s", typ, full, got, want)
			}
			if err := history.DecodeInto(history.For(typ), typ, enc); err != nil {
				t.Errorf("%s: decode of its own encoding: %v", typ, err)
			}
		}
	}
}
