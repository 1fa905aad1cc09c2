package toolspec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestSpecTags checks every kind's declaration: a key and a doc string per
// field, no spelling used twice, defaults inside their enumeration.
func TestSpecTags(t *testing.T) {
	if len(Specs()) != len(Kinds()) {
		t.Fatalf("kind names are not unique: %v", Kinds())
	}
	for _, kind := range Kinds() {
		seen := map[string]string{}
		for _, f := range Fields(kind) {
			if strings.TrimSpace(f.Doc) == "" {
				t.Errorf("%s.%s has no doc", kind, f.Key)
			}
			for _, k := range append([]string{f.Key}, f.Aliases...) {
				if prev, dup := seen[k]; dup {
					t.Errorf("%s: spelling %q is used by %s and %s", kind, k, prev, f.Key)
				}
				seen[k] = f.Key
			}
			if f.Default != "" && len(f.Enum) > 0 && !oneOfFold(f.Default, f.Enum) {
				t.Errorf("%s.%s: default %q is not in its enum %v", kind, f.Key, f.Default, f.Enum)
			}
		}
	}
}

func TestDecodeAliases(t *testing.T) {
	var pg Postgres
	if err := Decode(map[string]any{"credential": "pg_local", "sql": "select 1", "db_port": "5433"}, &pg); err != nil {
		t.Fatal(err)
	}
	if pg.Auth != "pg_local" || pg.Command != "select 1" || pg.Port != "5433" {
		t.Fatalf("decoded %+v", pg)
	}
	var g GCS
	if err := Decode(map[string]any{"operation": "list", "bucket": "b", "prefix": "p/", "key": "o", "missing_ok": "true"}, &g); err != nil {
		t.Fatal(err)
	}
	if g.Action != "list" || g.Bucket != "b" || g.Prefix != "p/" || g.Object != "o" || !g.MissingOK {
		t.Fatalf("decoded %+v", g)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"unknown key", map[string]any{"command": "x", "comand": "y"}, `key "comand" is not read by kind postgres`},
		{"two spellings", map[string]any{"auth": "a", "credential": "b"}, "auth and credential are spellings of the same key (auth)"},
		{"wrong type", map[string]any{"command": map[string]any{"a": 1}}, "command must be a string, got a mapping"},
		{"wrong scalar", map[string]any{"host": []any{"a"}}, "host must be a string, got a list"},
	} {
		var pg Postgres
		err := Decode(c.cfg, &pg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	var g GCS
	if err := Decode(map[string]any{"missing_ok": "perhaps"}, &g); err == nil {
		t.Error("missing_ok: perhaps decoded")
	}
	// The loader's mapping timeout is dropped for kinds that do not read it.
	if err := Decode(map[string]any{"timeout": map[string]any{"total": 3}, "command": "x"}, &Shell{}); err != nil {
		t.Errorf("timeout mapping: %v", err)
	}
}

// TestDecodeAfterJSONHop: a configuration that crossed the runner's JSON
// hop (numbers as json.Number) decodes to the same spec.
func TestDecodeAfterJSONHop(t *testing.T) {
	cfg := map[string]any{"action": "upload", "destination": "gs://b/o", "data": map[string]any{"n": 1.5, "l": []any{"x"}},
		"metadata": map[string]any{"k": "v"}, "missing_ok": true}
	var direct GCS
	if err := Decode(cfg, &direct); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var hop map[string]any
	if err := d.Decode(&hop); err != nil {
		t.Fatal(err)
	}
	var after GCS
	if err := Decode(hop, &after); err != nil {
		t.Fatal(err)
	}
	after.Data = direct.Data // json.Number vs float64 inside an any
	if !reflect.DeepEqual(direct, after) {
		t.Fatalf("after the hop %+v, before %+v", after, direct)
	}
	// The spec itself round-trips through JSON under its canonical keys.
	sb, err := json.Marshal(direct)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(sb, &back); err != nil {
		t.Fatal(err)
	}
	var again GCS
	if err := Decode(back, &again); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, direct) {
		t.Fatalf("spec round trip %+v, want %+v", again, direct)
	}
}

func TestCheck(t *testing.T) {
	probs := Check("postgres", map[string]any{"credential": "pg", "sql": "x", "port": "{{ workload.port }}", "commnd": "y", "pool": map[string]any{}})
	var unknown, warn []string
	for _, p := range probs {
		switch {
		case p.Unknown:
			unknown = append(unknown, p.Key)
		case p.Warning:
			warn = append(warn, p.Key)
		default:
			t.Errorf("unexpected problem %v", p)
		}
	}
	if !reflect.DeepEqual(unknown, []string{"commnd"}) || !reflect.DeepEqual(warn, []string{"pool"}) {
		t.Fatalf("unknown %v, warnings %v", unknown, warn)
	}
	probs = Check("gcs", map[string]any{"action": "move", "bucket": map[string]any{}})
	if len(probs) != 2 || !strings.Contains(probs[0].Message, `"move" is not available here (one of upload,`) || !strings.Contains(probs[1].Message, "must be a string") {
		t.Fatalf("gcs problems %v", probs)
	}
	if got := Missing("postgres", map[string]any{"auth": "x"}, func(k string) bool { return false }); len(got) != 1 || got[0][0] != "command" || !contains(got[0], "script") {
		t.Fatalf("missing %v", got)
	}
	if got := Missing("postgres", map[string]any{"cmds": []any{"x"}}, nil); len(got) != 0 {
		t.Fatalf("missing %v", got)
	}
	if got := Missing("postgres", map[string]any{"query": "select 1"}, nil); len(got) != 0 {
		t.Fatalf("missing %v", got)
	}
}

func contains(xs []string, x string) bool {
	for _, e := range xs {
		if e == x {
			return true
		}
	}
	return false
}
