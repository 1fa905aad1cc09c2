package dsl

import "testing"

// TestLoopChunkSize: loop.spec.chunk_size and its alias batch are read
// into Loop.ChunkSize.
func TestLoopChunkSize(t *testing.T) {
	const head = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: t\nworkflow:\n"
	for _, key := range []string{"chunk_size", "batch"} {
		pb := mustLoad(t, head+"  - step: start\n    loop:\n      in: [1, 2, 3]\n      iterator: x\n      spec: {mode: parallel, "+key+": 50}\n    tool: {kind: noop}\n")
		lp := pb.Workflow[0].Loop
		if lp.ChunkSize != 50 {
			t.Errorf("%s: ChunkSize = %d, want 50", key, lp.ChunkSize)
		}
		if _, kept := lp.Spec[key]; kept {
			t.Errorf("%s: also kept verbatim in Spec: %v", key, lp.Spec)
		}
	}
	pb := mustLoad(t, head+"  - step: start\n    loop: {in: [1], iterator: x}\n    tool: {kind: noop}\n")
	if n := pb.Workflow[0].Loop.ChunkSize; n != 0 {
		t.Errorf("unset chunk_size = %d, want 0", n)
	}
}

// TestLoopChunkSizeProblems: a chunk_size that is not a positive integer,
// or both spellings, is an error with its line and path.
func TestLoopChunkSizeProblems(t *testing.T) {
	const head = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: t\nworkflow:\n"
	loop := func(spec string) string {
		return "  - step: start\n    loop:\n      in: [1]\n      iterator: x\n      spec:\n        mode: parallel\n" + spec + "    tool: {kind: noop}\n"
	}
	cases := []struct {
		name, body string
		line       int
		path, msg  string
	}{
		{"zero", loop("        chunk_size: 0\n"), 12, "workflow[0].loop.spec.chunk_size", "loop.spec.chunk_size must be a positive integer (items per batch), got 0"},
		{"negative alias", loop("        batch: -3\n"), 12, "workflow[0].loop.spec.batch", "loop.spec.batch must be a positive integer (items per batch), got -3"},
		{"string", loop("        chunk_size: many\n"), 12, "workflow[0].loop.spec.chunk_size", "must be a positive integer (items per batch), got the string \"many\""},
		{"float", loop("        chunk_size: 2.5\n"), 12, "workflow[0].loop.spec.chunk_size", "must be a positive integer"},
		{"template", loop("        chunk_size: \"{{ workload.n }}\"\n"), 12, "workflow[0].loop.spec.chunk_size", "must be a positive integer"},
		{"both", loop("        chunk_size: 10\n        batch: 20\n"), 13, "workflow[0].loop.spec.batch", "loop.spec has both chunk_size and batch (its alias): keep chunk_size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ve := loadErr(t, head+c.body)
			find(t, ve.Problems, c.line, c.path, c.msg)
		})
	}
}
