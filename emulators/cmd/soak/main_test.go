package main

import (
	"strings"
	"testing"
)

// TestDeriveSeeds: derived seeds are deterministic, distinct, 31-bit and
// depend on the base.
func TestDeriveSeeds(t *testing.T) {
	a, b := DeriveSeeds(1, 50), DeriveSeeds(1, 50)
	seen := map[uint64]bool{}
	for i := range a {
		if a[i] != b[i] || a[i] > 0x7fffffff || seen[a[i]] {
			t.Fatalf("seed %d: %d (again %d), seen %v", i, a[i], b[i], seen[a[i]])
		}
		seen[a[i]] = true
	}
	if DeriveSeeds(2, 1)[0] == a[0] {
		t.Fatal("seeds do not depend on the base")
	}
	if SeedOf("abc") != SeedOf(" abc\n") || SeedOf("abc") == SeedOf("abd") {
		t.Fatal("SeedOf is not a function of the trimmed text")
	}
	if _, _, err := parseDerive("1:0"); err == nil {
		t.Fatal("0 runs accepted")
	}
}

// TestSummarize: the summary counts the runs, lists passing and failing
// seeds, ignores other lines, and fails without a run or with a failed one.
func TestSummarize(t *testing.T) {
	in := `{"seed":7,"executions":200,"terminal":200,"faults":{}}
progress text
{"seed":9,"executions":40,"terminal":39,"problems":["x","y"]}
`
	line, ok := Summarize(strings.NewReader(in))
	want := `{"summary":true,"runs":2,"seeds":[7,9],"passed":[7],"failed":[9],"executions":240,"terminal":239,"problems":2}`
	if ok || line != want {
		t.Fatalf("Summarize = %s %v; want %s false", line, ok, want)
	}
	if _, ok := Summarize(strings.NewReader(`{"seed":1,"executions":5,"terminal":5}`)); !ok {
		t.Fatal("a passing run summarized as failed")
	}
	if _, ok := Summarize(strings.NewReader("")); ok {
		t.Fatal("no run summarized as passed")
	}
}
