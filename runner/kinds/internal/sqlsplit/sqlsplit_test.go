package sqlsplit

import (
	"reflect"
	"testing"
)

// TestSplit covers the shapes both SQL kinds see: NoETL's multi-statement
// blocks with quoted semicolons, dollar quoting, comments and blank
// statements.
func TestSplit(t *testing.T) {
	for in, want := range map[string][]string{
		"SELECT 1":   {"SELECT 1"},
		"SELECT 1;":  {"SELECT 1"},
		" ; ;\n":     nil,
		"-- only\n;": nil,
		"CREATE TABLE users (id INTEGER, name VARCHAR, age INTEGER);\nINSERT INTO users VALUES (1, 'Alice', 30), (2, 'Bob', 25);\nSELECT name FROM users;\n": {
			"CREATE TABLE users (id INTEGER, name VARCHAR, age INTEGER)", "INSERT INTO users VALUES (1, 'Alice', 30), (2, 'Bob', 25)", "SELECT name FROM users"},
		"INSERT INTO t VALUES ('a;b'); SELECT 'it''s; fine'": {"INSERT INTO t VALUES ('a;b')", "SELECT 'it''s; fine'"},
		"SELECT $$ a; b $$ AS x; SELECT $q$;$q$":             {"SELECT $$ a; b $$ AS x", "SELECT $q$;$q$"},
		"SELECT 1 /* ; */ ; SELECT \"a;b\" FROM t -- c;\n":   {"SELECT 1 /* ; */", "SELECT \"a;b\" FROM t -- c;"},
		"SELECT E'\\';' AS x; SELECT $1":                     {"SELECT E'\\';' AS x", "SELECT $1"},
	} {
		if got := Split(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Split(%q) = %q, want %q", in, got, want)
		}
	}
}
