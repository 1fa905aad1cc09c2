package results

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/types"
)

// fnv1a32 is the reference FNV-1a 32-bit hash, written out so the test does
// not trust hash/fnv blindly.
func fnv1a32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func TestLogicalURI(t *testing.T) {
	var l Locator
	c := types.ResultCoords{Tenant: "acme", Project: "etl", ExecutionID: "e-123", Step: "fetch", Frame: 2, Row: 7, Attempt: 1}
	if got, want := l.LogicalURI(c), "noetl://acme/etl/results/e-123/fetch/2/7/1"; got != want {
		t.Fatalf("LogicalURI = %q, want %q", got, want)
	}
	// Stable: same coords, same URI; the locator's placement does not matter.
	other := Locator{Env: "prod", Region: "eu", Cell: "c9", ShardCount: 3}
	if l.LogicalURI(c) != other.LogicalURI(c) {
		t.Fatal("LogicalURI depends on placement")
	}
	d := types.ResultCoords{ExecutionID: "e", Step: "s", Attempt: 1}
	if got, want := l.LogicalURI(d), "noetl://default/default/results/e/s/0/0/1"; got != want {
		t.Fatalf("defaults: LogicalURI = %q, want %q", got, want)
	}
}

func TestParseLogicalURIRoundTrip(t *testing.T) {
	var l Locator
	for _, c := range []types.ResultCoords{
		{Tenant: "acme", Project: "etl", ExecutionID: "e-123", Step: "fetch", Frame: 2, Row: 7, Attempt: 1},
		{Tenant: "t", Project: "p", ExecutionID: "0194/abc", Step: "a step/with slash?&%", Frame: 0, Row: 0, Attempt: 0},
		{Tenant: "ü", Project: "日本", ExecutionID: "x", Step: "y", Frame: 123456, Row: 99, Attempt: 12},
	} {
		uri := l.LogicalURI(c)
		if strings.Count(uri, "/") != 9 {
			t.Errorf("%q: want 9 slashes (escaped segments)", uri)
		}
		got, err := ParseLogicalURI(uri)
		if err != nil {
			t.Fatalf("ParseLogicalURI(%q): %v", uri, err)
		}
		if got != c {
			t.Errorf("round trip %q = %+v, want %+v", uri, got, c)
		}
	}
	// Defaults come back explicit.
	got, err := ParseLogicalURI(l.LogicalURI(types.ResultCoords{ExecutionID: "e", Step: "s"}))
	if err != nil || got.Tenant != "default" || got.Project != "default" {
		t.Fatalf("defaults: %+v, %v", got, err)
	}
}

func TestParseLogicalURIErrors(t *testing.T) {
	for _, s := range []string{
		"",
		"http://a/b/results/e/s/0/0/1",
		"noetl://a/b/result/e/s/0/0/1",
		"noetl://a/b/results/e/s/0/0",
		"noetl://a/b/results/e/s/0/0/1/2",
		"noetl://a/b/results/e/s/0/x/1",
		"noetl://a/b/results/e/s/0/-1/1",
		"noetl://a/b/results/e/s/0/01/1",
		"noetl://a/b/results/e/s/0/0/1@",
		"noetl://a/b/results/e/s/0/0/1@v/2",
		"noetl://a/b/results/e/s/0/0/1@v%202",
		"noetl://a/b/results//s/0/0/1",
		"noetl://a/b/results/e/%zz/0/0/1",
		"noetl://execution/e/result/name/id",
	} {
		if _, err := ParseLogicalURI(s); !errors.Is(err, ErrBadURI) {
			t.Errorf("ParseLogicalURI(%q) err = %v, want ErrBadURI", s, err)
		}
	}
}

func TestPhysicalKeyLayout(t *testing.T) {
	l := Locator{Env: "dev", Region: "us-central1", Cell: "c1", ShardCount: 16}
	// An id drawn at 2026-03-04T23:30:00-05:00: the key uses its UTC day,
	// read from the id (never the time of the write).
	created := time.Date(2026, 3, 4, 23, 30, 0, 0, time.FixedZone("x", -5*3600))
	id := fmt.Sprint((created.UnixMilli()-types.IDEpoch)<<22 | 5<<12 | 7)
	c := types.ResultCoords{Tenant: "acme", Project: "etl", ExecutionID: id, Step: "fetch", Frame: 2, Row: 7, Attempt: 1}
	shard := fnv1a32("acme"+"etl"+id) % 16
	want := fmt.Sprintf("noetl/env=dev/region=us-central1/cell=c1/shard=%04d/tenant=acme/project=etl/date=2026-03-05/execution=%s/results/fetch/2/7/1.feather", shard, id)
	if got := l.PhysicalKey(c, "feather"); got != want {
		t.Fatalf("PhysicalKey =\n %q\nwant\n %q", got, want)
	}
	if got := l.Shard(c); got != int(shard) {
		t.Fatalf("Shard = %d, want %d", got, shard)
	}
	// A pure function of the URI: parsing the URI back gives the same key.
	back, err := ParseLogicalURI(l.LogicalURI(c))
	if err != nil || l.PhysicalKey(back, "feather") != want {
		t.Fatalf("key from the parsed URI = %q, %v", l.PhysicalKey(back, "feather"), err)
	}
	// A version is part of both names.
	v := c
	v.Version = "v2.1"
	if !strings.HasSuffix(l.LogicalURI(v), "/fetch/2/7/1@v2.1") || !strings.HasSuffix(l.PhysicalKey(v, "json"), "/fetch/2/7/1@v2.1.json") {
		t.Fatalf("versioned names: %q %q", l.LogicalURI(v), l.PhysicalKey(v, "json"))
	}
	if got, err := ParseLogicalURI(l.LogicalURI(v)); err != nil || got != l.Defaulted(v) {
		t.Fatalf("versioned round trip: %+v %v", got, err)
	}

	// Zero Locator: placement and tenant defaults, 16 shards; an id that
	// is not a snowflake dates from the id epoch.
	var z Locator
	d := types.ResultCoords{ExecutionID: "e", Step: "s", Attempt: 1}
	wantZ := fmt.Sprintf("noetl/env=default/region=default/cell=default/shard=%04d/tenant=default/project=default/date=2020-01-01/execution=e/results/s/0/0/1.json",
		fnv1a32("defaultdefaulte")%16)
	if got := z.PhysicalKey(d, "json"); got != wantZ {
		t.Fatalf("zero Locator PhysicalKey = %q, want %q", got, wantZ)
	}
	// The deployment's tenant and project fill empty coordinates.
	tp := Locator{Tenant: "acme", Project: "etl"}
	if got := tp.LogicalURI(d); got != "noetl://acme/etl/results/e/s/0/0/1" {
		t.Fatalf("configured tenant: %q", got)
	}

	// Escaping keeps one segment per coordinate.
	e := types.ResultCoords{ExecutionID: "a/b", Step: "c/d", Attempt: 1}
	k := z.PhysicalKey(e, "json")
	if !strings.Contains(k, "/execution=a%2Fb/results/c%2Fd/0/0/1.json") {
		t.Fatalf("escaped key = %q", k)
	}
}

// The cell map places an execution by its creation time: moving shards
// to another cell from a date on leaves earlier executions where they
// were written.
func TestCellMapPlacement(t *testing.T) {
	move := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	m := &CellMap{
		Cells:      []Cell{{Name: "c1", Bucket: "b1", Region: "us-central1"}, {Name: "c2", Bucket: "b2", Region: "europe-west1"}},
		Placements: []Placement{{Cell: "c1"}, {Since: move, Cell: "c2", Shards: map[int]string{3: "c1"}}},
	}
	if err := m.Validate(16); err != nil {
		t.Fatal(err)
	}
	l := Locator{Env: "prod", Cells: m}
	idAt := func(t time.Time, seq int64) string { return fmt.Sprint((t.UnixMilli()-types.IDEpoch)<<22 | seq) }
	var before, after types.ResultCoords
	for i := int64(0); ; i++ { // an execution not on shard 3, before and after the move
		before = types.ResultCoords{ExecutionID: idAt(move.Add(-time.Hour), i), Step: "s"}
		after = types.ResultCoords{ExecutionID: idAt(move.Add(time.Hour), i), Step: "s"}
		if l.Shard(before) != 3 && l.Shard(after) != 3 {
			break
		}
	}
	if c, _ := l.Place(before); c.Name != "c1" {
		t.Fatalf("before the move: cell %s", c.Name)
	}
	if c, _ := l.Place(after); c.Name != "c2" || !strings.Contains(l.PhysicalKey(after, "json"), "/region=europe-west1/cell=c2/") {
		t.Fatalf("after the move: cell %s, key %s", c.Name, l.PhysicalKey(after, "json"))
	}
	for i := int64(0); i < 10000; i++ { // shard 3 stays in c1
		c := types.ResultCoords{ExecutionID: idAt(move.Add(time.Hour), i), Step: "s"}
		if l.Shard(c) == 3 {
			if cell, _ := l.Place(c); cell.Name != "c1" {
				t.Fatalf("shard 3 after the move: cell %s", cell.Name)
			}
			break
		}
	}
	for name, bad := range map[string]*CellMap{
		"no cells":      {Placements: []Placement{{Cell: "c1"}}},
		"unknown cell":  {Cells: m.Cells, Placements: []Placement{{Cell: "c9"}}},
		"bad shard":     {Cells: m.Cells, Placements: []Placement{{Cell: "c1", Shards: map[int]string{16: "c2"}}}},
		"order":         {Cells: m.Cells, Placements: []Placement{{Cell: "c1", Since: move}, {Cell: "c2", Since: move}}},
		"no bucket":     {Cells: []Cell{{Name: "c1", Region: "r"}}, Placements: []Placement{{Cell: "c1"}}},
		"bad name":      {Cells: []Cell{{Name: "c/1", Bucket: "b", Region: "r"}}, Placements: []Placement{{Cell: "c/1"}}},
		"twice":         {Cells: []Cell{m.Cells[0], m.Cells[0]}, Placements: []Placement{{Cell: "c1"}}},
		"other storage": {Cells: []Cell{{Name: "c1", Provider: "s3", Bucket: "b", Region: "r"}}, Placements: []Placement{{Cell: "c1"}}},
	} {
		if err := bad.Validate(16); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
}

func TestShardRangeDeterministicSpread(t *testing.T) {
	for _, n := range []int{1, 2, 7, 16, 1000} {
		l := Locator{ShardCount: n}
		hit := map[int]bool{}
		for i := 0; i < 2000; i++ {
			c := types.ResultCoords{Tenant: "t", Project: "p", ExecutionID: fmt.Sprintf("exec-%d", i), Step: "s"}
			s := l.Shard(c)
			if s < 0 || s >= n {
				t.Fatalf("ShardCount %d: shard %d out of range", n, s)
			}
			if s2 := l.Shard(c); s2 != s {
				t.Fatalf("not deterministic: %d then %d", s, s2)
			}
			// Execution affinity: step, frame, row, attempt do not move it.
			c2 := c
			c2.Step, c2.Frame, c2.Row, c2.Attempt = "other", 5, 6, 7
			if l.Shard(c2) != s {
				t.Fatal("shard depends on more than tenant+project+execution")
			}
			hit[s] = true
		}
		if want := min(n, 2000); n <= 16 && len(hit) != want {
			t.Errorf("ShardCount %d: %d shards hit by 2000 executions, want %d", n, len(hit), want)
		}
	}
	// ShardCount ≤ 0 means 16.
	c := types.ResultCoords{ExecutionID: "x"}
	if (Locator{ShardCount: -1}).Shard(c) != (Locator{ShardCount: 16}).Shard(c) {
		t.Fatal("ShardCount -1 is not the default 16")
	}
}
