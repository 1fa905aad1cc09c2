package template

import (
	"testing"
)

func benchScope() Scope { return NewScope(benchParams()) }

func benchParams() ScopeParams {
	idx := 0
	return ScopeParams{
		Workload: map[string]any{
			"initial_value": 100,
			"api_url":       "http://paginated-api:5555",
			"users": []any{
				map[string]any{"id": 1, "name": "Alice"},
				map[string]any{"id": 2, "name": "Bob"},
				map[string]any{"id": 3, "name": "Charlie"},
			},
		},
		Ctx:       map[string]any{"current_page": 2, "has_more": true},
		Results:   map[string]any{"process_data": map[string]any{"data": map[string]any{"temp_table": "temp_session_12345"}}},
		Iterator:  "user",
		Item:      map[string]any{"id": 1, "name": "Alice"},
		LoopIndex: &idx,
		Extra: map[string]any{
			"outcome": map[string]any{"status": "error", "http": map[string]any{"status": 503}},
		},
	}
}

func benchRender(b *testing.B, tmpl string) {
	s := benchScope()
	if _, err := Render(tmpl, s); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Render(tmpl, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderNative measures single-expression templates (cached parse,
// native result).
func BenchmarkRenderNative(b *testing.B) {
	b.Run("name", func(b *testing.B) { benchRender(b, "{{ initial_value }}") })
	b.Run("path", func(b *testing.B) { benchRender(b, "{{ ctx.current_page }}") })
	b.Run("default", func(b *testing.B) {
		benchRender(b, "{{ args.input_data.temp_table | default(process_data.data.temp_table) }}")
	})
	b.Run("condition", func(b *testing.B) {
		benchRender(b, "{{ outcome.status == 'error' and outcome.http.status in [500, 502, 503] }}")
	})
	b.Run("list", func(b *testing.B) { benchRender(b, "{{ users }}") })
}

// BenchmarkRenderText measures mixed-text templates (cached parse, string
// result).
func BenchmarkRenderText(b *testing.B) {
	b.Run("url", func(b *testing.B) { benchRender(b, "{{ api_url }}/api/v1/assessments?page={{ ctx.current_page }}") })
	b.Run("if", func(b *testing.B) {
		benchRender(b, "{% if ctx.has_more %}page {{ ctx.current_page + 1 }}{% else %}done{% endif %}")
	})
	b.Run("loop", func(b *testing.B) {
		benchRender(b, "{% for u in users %}{{ loop.index }}:{{ u.name | upper }};{% endfor %}")
	})
	b.Run("tojson", func(b *testing.B) { benchRender(b, "body={{ users | tojson }}") })
}

// BenchmarkRenderPlain measures the no-markup fast path.
func BenchmarkRenderPlain(b *testing.B) {
	benchRender(b, "http://paginated-api:5555/api/v1/assessments")
}

// BenchmarkParse measures a first render (parse + rewrite, no cache).
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if cp := parse("{{ args.input_data.temp_table | default(process_data.data.temp_table) }}", DefaultLimits); cp.err != nil {
			b.Fatal(cp.err)
		}
	}
}

// BenchmarkNewScope measures building a scope from benchParams (inputs
// already built; nothing needs conversion).
func BenchmarkNewScope(b *testing.B) {
	p := benchParams()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = NewScope(p)
	}
}

// BenchmarkTruthy measures a bare `when:` expression.
func BenchmarkTruthy(b *testing.B) {
	s := benchScope()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Truthy("outcome.http.status in [500, 502, 503]", s); err != nil {
			b.Fatal(err)
		}
	}
}
