package noop

import (
	"context"
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/types"
)

func TestNoop(t *testing.T) {
	cases := []struct {
		args, config map[string]any
		want         any
	}{
		{nil, nil, nil},
		{map[string]any{"a": int64(1)}, nil, map[string]any{"a": int64(1)}},
		{map[string]any{"a": 1}, map[string]any{"result": "r"}, "r"},
		{map[string]any{"a": 1}, map[string]any{"result": nil}, map[string]any{"a": 1}}, // result: null is no result
	}
	for _, c := range cases {
		o := New().Exec(context.Background(), c.args, c.config, 0)
		if o.Status != types.StatusOK || o.Error != nil || !reflect.DeepEqual(o.Result, c.want) {
			t.Fatalf("%+v: got %+v", c, o)
		}
	}
}
