package telemetry

import (
	"strings"
	"testing"
)

func TestSignature(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{nil, "null"},
		{"secret value", "string"},
		{int64(3), "int"},
		{2.5, "float"},
		{true, "bool"},
		{[]any{}, "[]"},
		{[]any{map[string]any{"b": "x", "a": []any{1}}}, "[{a:[int],b:string}]"},
		{map[string]any{"password": "hunter2", "user": map[string]any{"id": 7, "tags": nil}}, "{password:string,user:{id:int,tags:null}}"},
		{[]map[string]any{{"k": 1.0}}, "[{k:float}]"},
		{struct{ X int }{1}, "struct { X int }"},
	}
	for _, c := range cases {
		if got := Signature(c.in); got != c.want {
			t.Errorf("Signature(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	deep := any("leaf")
	for range 10 {
		deep = map[string]any{"n": deep}
	}
	if got := Signature(deep); got != "{n:{n:{n:{n:{n:{n:…}}}}}}" {
		t.Errorf("deep: %q", got)
	}
	wide := map[string]any{}
	for i := range 100 {
		wide[strings.Repeat("k", 3)+string(rune('a'+i%26))+string(rune('a'+i/26))] = i
	}
	if got := Signature(wide); !strings.HasSuffix(got, ",…}") || strings.Count(got, ":int") != 32 {
		t.Errorf("wide: %q", got)
	}
	long := map[string]any{strings.Repeat("x", 600): 1}
	if got := Signature(long); len(got) > sigMaxLen+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("long: %d bytes", len(got))
	}
}

func TestHTTPSignature(t *testing.T) {
	cases := []struct{ method, url, want string }{
		{"get", "https://api.example.com/users/{id}", "GET https://api.example.com/users/{id}"},
		{"", "https://alice:s3cr3t@api.example.com/x?token=abc&page=2#frag", "GET https://api.example.com/x?token&page"},
		{"POST", "{{ base }}/v1/items?key={{ api_key }}", "POST {{ base }}/v1/items?key"},
		{"put", "http://h/p#only-fragment", "PUT http://h/p"},
		{"GET", "http://u@h:8080/a@b", "GET http://h:8080/a@b"},
	}
	for _, c := range cases {
		if got := HTTPSignature(c.method, c.url); got != c.want {
			t.Errorf("HTTPSignature(%q, %q) = %q, want %q", c.method, c.url, got, c.want)
		}
	}
}

func TestSpecSignature(t *testing.T) {
	cases := []struct {
		kind string
		cfg  map[string]any
		want string
	}{
		{"http", map[string]any{"method": "post", "url": "https://api/x?sig=1", "body": map[string]any{"ssn": "123"}}, "POST https://api/x?sig"},
		{"http", map[string]any{"endpoint": "https://api/e"}, "GET https://api/e"},
		{"postgres", map[string]any{"command": "-- load users\n  insert into users values ('alice', 'pw')"}, "postgres INSERT"},
		{"postgres", map[string]any{"sql": "(select 1);"}, "postgres SELECT"},
		{"postgres", map[string]any{}, "postgres"},
		{"python", map[string]any{"code": "print('token=abc')"}, "python"},
		{"noop", map[string]any{"result": map[string]any{"a": "b"}}, "noop {result:{a:string}}"},
	}
	for _, c := range cases {
		got := SpecSignature(c.kind, c.cfg)
		if got != c.want {
			t.Errorf("SpecSignature(%s, %v) = %q, want %q", c.kind, c.cfg, got, c.want)
		}
		for _, leak := range []string{"alice", "pw", "123", "abc", "load users"} {
			if strings.Contains(got, leak) {
				t.Errorf("SpecSignature(%s) leaks %q: %q", c.kind, leak, got)
			}
		}
	}
}
