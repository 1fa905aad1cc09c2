package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestWriterValues: the writer's two paths (COPY for append and
// replace, INSERT … ON CONFLICT for upsert) store the same values: NULL
// and the empty string kept apart, quotes, commas, newlines and
// backslashes verbatim, JSON numbers into integer and numeric columns,
// strings into dates, mappings and lists into jsonb, lists into arrays.
func TestWriterValues(t *testing.T) {
	ctx := context.Background()
	tl := newTool(t, Options{})
	ok(t, runSQL(t, tl, `DROP TABLE IF EXISTS w_copy, w_upsert;
		CREATE TABLE w_copy (k int PRIMARY KEY, s text, n numeric, d date, j jsonb, a int[], b boolean);
		CREATE TABLE w_upsert (LIKE w_copy INCLUDING ALL)`, nil))
	cols := []string{"k", "s", "n", "d", "j", "a", "b"}
	rows := [][]any{
		{float64(1), "", 2.5, "2026-11-27", map[string]any{"x": []any{1.0, "y"}}, []any{1.0, 2.0, nil}, true},
		{float64(2), nil, nil, nil, nil, nil, nil},
		{float64(3), "a \"quoted\", comma\nnew line \\ back\\slash", float64(1e6), "2020-02-29", []any{"p", nil}, []any{}, false},
		{float64(4), "NULL", "-0.125", "1999-12-31", "text as json?", []any{-7.0}, "true"},
	}
	e, o := tl.NewEndpoint(ctx, M{"connection": testDSN})
	if o != nil {
		t.Fatalf("endpoint: %+v", o.Error)
	}
	for table, mode := range map[string]WriteMode{"w_copy": ModeAppend, "w_upsert": ModeUpsert} {
		w, err := tl.OpenWriter(ctx, e, table, cols, mode, nil)
		if err != nil {
			t.Fatalf("%s: open: %v", table, err)
		}
		defer w.Close()
		// "text as json?" is not JSON: that row is written alone, last,
		// and must fail; the others commit.
		if err := w.Write(ctx, rows[:3]); err != nil {
			t.Fatalf("%s: write: %v", table, err)
		}
		if err := w.Commit(ctx); err != nil {
			t.Fatalf("%s: commit: %v", table, err)
		}
		w.Close()
		w, err = tl.OpenWriter(ctx, e, table, cols, mode, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		// The server may refuse the row when it arrives or at the COPY's
		// end (Commit).
		err = w.Write(ctx, rows[3:])
		if err == nil {
			err = w.Commit(ctx)
		}
		w.Close()
		if err == nil || !strings.Contains(err.Error(), "json") {
			t.Fatalf("%s: a value that is not JSON into jsonb: %v, want refused", table, err)
		}
	}
	q := `SELECT k, s IS NULL AS s_null, s, n::text AS n, d::text AS d, j::text AS j, a::text AS a, b FROM %s ORDER BY k`
	cp := ok(t, runSQL(t, tl, fmt.Sprintf(q, "w_copy"), nil))["rows"]
	up := ok(t, runSQL(t, tl, fmt.Sprintf(q, "w_upsert"), nil))["rows"]
	eq(t, cp, up)
	want := L{
		M{"k": int64(1), "s_null": false, "s": "", "n": "2.5", "d": "2026-11-27", "j": `{"x": [1, "y"]}`, "a": "{1,2,NULL}", "b": true},
		M{"k": int64(2), "s_null": true, "s": nil, "n": nil, "d": nil, "j": nil, "a": nil, "b": nil},
		M{"k": int64(3), "s_null": false, "s": "a \"quoted\", comma\nnew line \\ back\\slash", "n": "1000000", "d": "2020-02-29", "j": `["p", null]`, "a": "{}", "b": false},
	}
	eq(t, cp, want)
}
