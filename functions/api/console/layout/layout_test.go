package layout

import (
	"reflect"
	"testing"
)

func nodes(n int) []Node {
	out := make([]Node, n)
	for i := range out {
		out[i] = Node{W: 100, H: 40}
	}
	return out
}

// check asserts the invariants of every layout: nodes of a layer do not
// overlap and keep the gap, forward edges go from a lower layer to a
// higher one and end on their nodes' borders, everything is inside the
// drawing.
func check(t *testing.T, g Graph, r Result, o Options) {
	t.Helper()
	if o.NodeGap == 0 {
		o.NodeGap = 40
	}
	for i := range g.Nodes {
		for j := i + 1; j < len(g.Nodes); j++ {
			if r.Layers[i] != r.Layers[j] {
				continue
			}
			d := r.Centers[i].X - r.Centers[j].X
			if d < 0 {
				d = -d
			}
			if need := g.Nodes[i].W/2 + g.Nodes[j].W/2 + o.NodeGap; d < need-1e-6 {
				t.Errorf("nodes %d and %d of layer %d are %.1f apart, want ≥ %.1f", i, j, r.Layers[i], d, need)
			}
		}
		c := r.Centers[i]
		if c.X-g.Nodes[i].W/2 < 0 || c.X+g.Nodes[i].W/2 > r.Width || c.Y-g.Nodes[i].H/2 < 0 || c.Y+g.Nodes[i].H/2 > r.Height {
			t.Errorf("node %d at %+v is outside the drawing %.0f×%.0f", i, c, r.Width, r.Height)
		}
	}
	for i, e := range g.Edges {
		p := r.Paths[i]
		if e.From == e.To {
			if !p.Self {
				t.Errorf("edge %d is a self loop, not marked Self", i)
			}
			continue
		}
		if len(p.Points) < 2 {
			t.Fatalf("edge %d has %d points", i, len(p.Points))
		}
		if !p.Back && r.Layers[e.From] >= r.Layers[e.To] {
			t.Errorf("forward edge %d goes from layer %d to layer %d", i, r.Layers[e.From], r.Layers[e.To])
		}
		first, last := p.Points[0], p.Points[len(p.Points)-1]
		if first.X != r.Centers[e.From].X || last.X != r.Centers[e.To].X {
			t.Errorf("edge %d does not start and end at its nodes: %+v → %+v", i, first, last)
		}
		if !p.Back && (first.Y != r.Centers[e.From].Y+g.Nodes[e.From].H/2 || last.Y != r.Centers[e.To].Y-g.Nodes[e.To].H/2) {
			t.Errorf("edge %d does not leave the bottom of its source and enter the top of its target: %+v → %+v", i, first, last)
		}
		if want := r.Layers[e.To] - r.Layers[e.From]; !p.Back && len(p.Points) != want+1 {
			t.Errorf("edge %d spans %d layers with %d points", i, want, len(p.Points))
		}
	}
}

func TestChainIsAColumn(t *testing.T) {
	g := Graph{Nodes: nodes(4), Edges: []Edge{{0, 1}, {1, 2}, {2, 3}}}
	r := Layered(g, Options{})
	check(t, g, r, Options{})
	for i := 0; i < 4; i++ {
		if r.Layers[i] != i {
			t.Errorf("node %d in layer %d", i, r.Layers[i])
		}
		if r.Centers[i].X != r.Centers[0].X {
			t.Errorf("node %d at x %.1f, the chain's first at %.1f", i, r.Centers[i].X, r.Centers[0].X)
		}
	}
}

func TestFanOutAndJoin(t *testing.T) {
	// 0 → 1, 2, 3 → 4 (an inclusive fan-out and its join), plus 0 → 4.
	g := Graph{Nodes: nodes(5), Edges: []Edge{{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 4}, {3, 4}, {0, 4}}}
	r := Layered(g, Options{})
	check(t, g, r, Options{})
	if r.Layers[4] != 2 || r.Layers[1] != 1 {
		t.Fatalf("layers %v", r.Layers)
	}
	// The join and the fork sit between the outer branches.
	lo, hi := min(r.Centers[1].X, r.Centers[3].X), max(r.Centers[1].X, r.Centers[3].X)
	for _, v := range []int{0, 4} {
		if x := r.Centers[v].X; x < lo || x > hi {
			t.Errorf("node %d at x %.1f, outside the branches [%.1f, %.1f]", v, x, lo, hi)
		}
	}
	if len(r.Paths[6].Points) != 3 {
		t.Errorf("the long edge 0 → 4 has %d points, want 3 (one dummy)", len(r.Paths[6].Points))
	}
}

func TestCyclesAreBroken(t *testing.T) {
	// 0 → 1 → 2 → 1 (a retry arc back), 2 → 3, 3 → 3 (self loop).
	g := Graph{Nodes: nodes(4), Edges: []Edge{{0, 1}, {1, 2}, {2, 1}, {2, 3}, {3, 3}}, Roots: []int{0}}
	r := Layered(g, Options{})
	check(t, g, r, Options{})
	if !r.Paths[2].Back || r.Paths[1].Back {
		t.Errorf("back edges: %v %v, want only 2 → 1", r.Paths[1].Back, r.Paths[2].Back)
	}
	p := r.Paths[2].Points
	if p[0].X != r.Centers[2].X || p[len(p)-1].X != r.Centers[1].X {
		t.Errorf("the back edge's points run %+v, want from node 2 to node 1", p)
	}
	if !r.Paths[4].Self {
		t.Error("self loop not marked")
	}
	if r.Layers[0] != 0 || r.Layers[1] != 1 || r.Layers[2] != 2 || r.Layers[3] != 3 {
		t.Errorf("layers %v", r.Layers)
	}
}

func TestCrossingsAreRemoved(t *testing.T) {
	// Two layers wired crosswise in index order: 0→5, 1→4, 2→3.
	g := Graph{Nodes: nodes(6), Edges: []Edge{{0, 5}, {1, 4}, {2, 3}, {0, 3}}}
	r := Layered(g, Options{})
	check(t, g, r, Options{})
	type seg struct{ a, b float64 }
	var segs []seg
	for _, p := range r.Paths {
		segs = append(segs, seg{p.Points[0].X, p.Points[len(p.Points)-1].X})
	}
	x := 0
	for i := range segs {
		for j := i + 1; j < len(segs); j++ {
			if (segs[i].a-segs[j].a)*(segs[i].b-segs[j].b) < 0 {
				x++
			}
		}
	}
	if x != 0 {
		t.Errorf("%d crossings left", x)
	}
}

func TestDeterministicAndDegenerate(t *testing.T) {
	g := Graph{Nodes: nodes(7), Edges: []Edge{{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}, {4, 0}, {5, 6}, {9, 1}}}
	a, b := Layered(g, Options{}), Layered(g, Options{})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two layouts of one graph differ")
	}
	if a.Paths[7].Points != nil {
		t.Error("an edge to an unknown node must be left out")
	}
	empty := Layered(Graph{}, Options{})
	if empty.Width <= 0 || empty.Height <= 0 || len(empty.Centers) != 0 {
		t.Errorf("empty graph: %+v", empty)
	}
	one := Layered(Graph{Nodes: nodes(1)}, Options{Margin: 10})
	if one.Width != 120 || one.Height != 60 || one.Centers[0] != (Point{60, 30}) {
		t.Errorf("one node: %+v", one)
	}
}
