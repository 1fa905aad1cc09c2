// Package layout places a directed graph in layers (the Sugiyama method:
// Sugiyama, Tagawa and Toda, "Methods for visual understanding of
// hierarchical system structures", 1981; the phases as in Gansner et al.,
// "A technique for drawing directed graphs", 1993): cycles are broken by
// reversing DFS back edges, nodes get layers by longest path, edges that
// span several layers are split by dummy nodes, the order within each
// layer is improved by barycentre sweeps (keeping the order with the
// fewest crossings), and x coordinates are pulled towards the mean of
// each node's neighbours while keeping the order and the gaps.
//
// It is pure and deterministic (the same graph always gets the same
// drawing) and meant for the graphs of playbooks: tens of nodes, not
// thousands (the crossing reduction is quadratic in a layer's width).
// Rendering is the caller's: Layered returns node centres and edge
// polylines in a coordinate space whose origin is the top left corner.
package layout

import (
	"math"
	"sort"
)

// Node is a node to place: its size in the output's units.
type Node struct {
	W, H float64
}

// Edge is a directed edge between two nodes (indexes into Graph.Nodes).
// An edge from a node to itself is a self loop.
type Edge struct {
	From, To int
}

// Graph is the input of Layered.
type Graph struct {
	Nodes []Node
	Edges []Edge
	// Roots are nodes to visit first when breaking cycles (the entry
	// step): edges back to them are the ones reversed. Optional.
	Roots []int
}

// Options are the spacing of a layout (zero values take the defaults).
type Options struct {
	// LayerGap is the vertical space between two layers (default 60).
	LayerGap float64
	// NodeGap is the least horizontal space between two nodes of a layer
	// (default 40).
	NodeGap float64
	// Margin surrounds the drawing (default 16).
	Margin float64
	// DummyWidth is the width an edge passing through a layer takes
	// (default 24).
	DummyWidth float64
}

// Point is a position.
type Point struct{ X, Y float64 }

// Path is how one input edge is drawn.
type Path struct {
	// Points run from the source's border to the target's border, through
	// the edge's dummy nodes; a self loop has none (draw it beside its
	// node).
	Points []Point
	// Back reports an edge reversed to break a cycle (it points upwards
	// or sideways in the drawing).
	Back bool
	// Self reports a self loop.
	Self bool
}

// Result is a layout: the centre of each node (by index), the path of
// each edge (by index), each node's layer, and the drawing's size.
type Result struct {
	Centers []Point
	Layers  []int
	Paths   []Path
	Width   float64
	Height  float64
}

// vertex is a node of the layered graph: an input node or a dummy.
type vertex struct {
	node  int // input node, or -1 for a dummy
	layer int
	w, h  float64
	x     float64
	pos   int // position in its layer
	up    []int
	down  []int
}

// Layered lays g out top to bottom.
func Layered(g Graph, o Options) Result {
	if o.LayerGap == 0 {
		o.LayerGap = 60
	}
	if o.NodeGap == 0 {
		o.NodeGap = 40
	}
	if o.Margin == 0 {
		o.Margin = 16
	}
	if o.DummyWidth == 0 {
		o.DummyWidth = 24
	}
	n := len(g.Nodes)
	res := Result{Centers: make([]Point, n), Layers: make([]int, n), Paths: make([]Path, len(g.Edges))}
	if n == 0 {
		res.Width, res.Height = 2*o.Margin, 2*o.Margin
		return res
	}
	back := backEdges(g)
	// Layers by longest path over the acyclic orientation.
	out := make([][]int, n)
	indeg := make([]int, n)
	for i, e := range g.Edges {
		if e.From == e.To || !valid(e, n) {
			continue
		}
		f, t := e.From, e.To
		if back[i] {
			f, t = t, f
		}
		out[f] = append(out[f], t)
		indeg[t]++
	}
	layer := make([]int, n)
	queue := []int{}
	for v := 0; v < n; v++ {
		if indeg[v] == 0 {
			queue = append(queue, v)
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, t := range out[v] {
			if layer[v]+1 > layer[t] {
				layer[t] = layer[v] + 1
			}
			indeg[t]--
			if indeg[t] == 0 {
				queue = append(queue, t)
			}
		}
	}
	// Vertices: the nodes, then a dummy per layer crossed by an edge.
	vs := make([]*vertex, n)
	for i, nd := range g.Nodes {
		vs[i] = &vertex{node: i, layer: layer[i], w: nd.W, h: nd.H}
	}
	chains := make([][]int, len(g.Edges)) // vertex chain of each edge, top to bottom
	for i, e := range g.Edges {
		if e.From == e.To || !valid(e, n) {
			continue
		}
		top, bottom := e.From, e.To
		if back[i] {
			top, bottom = bottom, top
		}
		chain := []int{top}
		for l := layer[top] + 1; l < layer[bottom]; l++ {
			vs = append(vs, &vertex{node: -1, layer: l, w: o.DummyWidth})
			chain = append(chain, len(vs)-1)
		}
		chain = append(chain, bottom)
		for k := 0; k+1 < len(chain); k++ {
			a, b := chain[k], chain[k+1]
			vs[a].down = append(vs[a].down, b)
			vs[b].up = append(vs[b].up, a)
		}
		chains[i] = chain
	}
	nl := 0
	for _, v := range vs {
		nl = max(nl, v.layer+1)
	}
	layers := make([][]int, nl)
	// Initial order: a DFS from the roots, so a chain stays in one column.
	seen := make([]bool, len(vs))
	var visit func(v int)
	visit = func(v int) {
		if seen[v] {
			return
		}
		seen[v] = true
		layers[vs[v].layer] = append(layers[vs[v].layer], v)
		for _, d := range vs[v].down {
			visit(d)
		}
	}
	for _, r := range g.Roots {
		if r >= 0 && r < n {
			visit(r)
		}
	}
	for v := range vs {
		if len(vs[v].up) == 0 {
			visit(v)
		}
	}
	for v := range vs {
		visit(v)
	}
	order(vs, layers)
	place(vs, layers, o)
	// y: each layer as tall as its tallest node.
	ys := make([]float64, nl)
	y := o.Margin
	for l, ly := range layers {
		h := 0.0
		for _, v := range ly {
			h = max(h, vs[v].h)
		}
		ys[l] = y + h/2
		y += h + o.LayerGap
	}
	res.Height = y - o.LayerGap + o.Margin
	for _, v := range vs {
		res.Width = max(res.Width, v.x+v.w/2+o.Margin)
	}
	for i := 0; i < n; i++ {
		res.Centers[i] = Point{vs[i].x, ys[vs[i].layer]}
		res.Layers[i] = vs[i].layer
	}
	for i, e := range g.Edges {
		if !valid(e, n) {
			continue
		}
		if e.From == e.To {
			res.Paths[i] = Path{Self: true}
			continue
		}
		chain := chains[i]
		pts := make([]Point, 0, len(chain))
		for k, v := range chain {
			c := Point{vs[v].x, ys[vs[v].layer]}
			switch {
			case k == 0:
				c.Y += vs[v].h / 2
			case k == len(chain)-1:
				c.Y -= vs[v].h / 2
			}
			pts = append(pts, c)
		}
		if back[i] {
			for a, b := 0, len(pts)-1; a < b; a, b = a+1, b-1 {
				pts[a], pts[b] = pts[b], pts[a]
			}
		}
		res.Paths[i] = Path{Points: pts, Back: back[i]}
	}
	return res
}

func valid(e Edge, n int) bool { return e.From >= 0 && e.From < n && e.To >= 0 && e.To < n }

// backEdges marks the edges a DFS (from the roots first, then every node
// in index order) finds pointing to a node on its stack: reversing them
// leaves the graph acyclic.
func backEdges(g Graph) []bool {
	n := len(g.Nodes)
	adj := make([][]int, n) // edge indexes by source
	for i, e := range g.Edges {
		if valid(e, n) && e.From != e.To {
			adj[e.From] = append(adj[e.From], i)
		}
	}
	back := make([]bool, len(g.Edges))
	state := make([]int, n) // 0 new, 1 on stack, 2 done
	var dfs func(v int)
	dfs = func(v int) {
		state[v] = 1
		for _, i := range adj[v] {
			t := g.Edges[i].To
			switch state[t] {
			case 0:
				dfs(t)
			case 1:
				back[i] = true
			}
		}
		state[v] = 2
	}
	for _, r := range g.Roots {
		if r >= 0 && r < n && state[r] == 0 {
			dfs(r)
		}
	}
	for v := 0; v < n; v++ {
		if state[v] == 0 {
			dfs(v)
		}
	}
	return back
}

// order reduces crossings: alternate downward and upward barycentre
// sweeps, keeping the best ordering seen.
func order(vs []*vertex, layers [][]int) {
	renumber := func() {
		for _, ly := range layers {
			for p, v := range ly {
				vs[v].pos = p
			}
		}
	}
	renumber()
	snapshot := func() [][]int {
		c := make([][]int, len(layers))
		for l, ly := range layers {
			c[l] = append([]int(nil), ly...)
		}
		return c
	}
	best, bestX := snapshot(), crossings(vs, layers)
	for it := 0; it < 24 && bestX > 0; it++ {
		if it%2 == 0 {
			for l := 1; l < len(layers); l++ {
				sortBy(vs, layers[l], func(v *vertex) []int { return v.up })
				renumber()
			}
		} else {
			for l := len(layers) - 2; l >= 0; l-- {
				sortBy(vs, layers[l], func(v *vertex) []int { return v.down })
				renumber()
			}
		}
		if x := crossings(vs, layers); x < bestX {
			best, bestX = snapshot(), x
		}
	}
	copy(layers, best)
	renumber()
}

// sortBy orders a layer by the mean position of each vertex's neighbours
// (a vertex without any keeps its place).
func sortBy(vs []*vertex, ly []int, nbrs func(*vertex) []int) {
	key := make(map[int]float64, len(ly))
	for _, v := range ly {
		ns := nbrs(vs[v])
		if len(ns) == 0 {
			key[v] = float64(vs[v].pos)
			continue
		}
		s := 0.0
		for _, u := range ns {
			s += float64(vs[u].pos)
		}
		key[v] = s / float64(len(ns))
	}
	sort.SliceStable(ly, func(i, j int) bool { return key[ly[i]] < key[ly[j]] })
}

// crossings counts the edge crossings between consecutive layers.
func crossings(vs []*vertex, layers [][]int) int {
	total := 0
	for l := 0; l+1 < len(layers); l++ {
		type seg struct{ a, b int }
		var segs []seg
		for _, v := range layers[l] {
			for _, d := range vs[v].down {
				segs = append(segs, seg{vs[v].pos, vs[d].pos})
			}
		}
		for i := range segs {
			for j := i + 1; j < len(segs); j++ {
				if (segs[i].a-segs[j].a)*(segs[i].b-segs[j].b) < 0 {
					total++
				}
			}
		}
	}
	return total
}

// place assigns x coordinates: packed left to right, then pulled towards
// the mean x of each vertex's neighbours (alternately above and below),
// keeping the order and the gaps.
func place(vs []*vertex, layers [][]int, o Options) {
	gap := func(a, b *vertex) float64 { return a.w/2 + b.w/2 + o.NodeGap }
	for _, ly := range layers {
		x := 0.0
		for i, v := range ly {
			if i > 0 {
				x += gap(vs[ly[i-1]], vs[v])
			}
			vs[v].x = x
		}
	}
	for it := 0; it < 16; it++ {
		sweep := func(l int, nbrs func(*vertex) []int) {
			ly := layers[l]
			want := make([]float64, len(ly))
			for i, v := range ly {
				ns := nbrs(vs[v])
				if len(ns) == 0 {
					want[i] = vs[v].x
					continue
				}
				s := 0.0
				for _, u := range ns {
					s += vs[u].x
				}
				want[i] = s / float64(len(ns))
			}
			fit(vs, ly, want, gap)
		}
		if it%2 == 0 {
			for l := 1; l < len(layers); l++ {
				sweep(l, func(v *vertex) []int { return v.up })
			}
		} else {
			for l := len(layers) - 2; l >= 0; l-- {
				sweep(l, func(v *vertex) []int { return v.down })
			}
		}
	}
	minX := math.Inf(1)
	for _, v := range vs {
		minX = min(minX, v.x-v.w/2)
	}
	for _, v := range vs {
		v.x += o.Margin - minX
	}
}

// fit moves the vertices of a layer as close to want as the gaps allow,
// keeping their order: each run of vertices pushed together sits at the
// mean of its wishes (the "pool adjacent violators" of isotonic
// regression, with the gaps as offsets).
func fit(vs []*vertex, ly []int, want []float64, gap func(a, b *vertex) float64) {
	if len(ly) == 0 {
		return
	}
	// off[i]: where vertex i sits relative to the first vertex of a
	// block packed tight.
	off := make([]float64, len(ly))
	for i := 1; i < len(ly); i++ {
		off[i] = off[i-1] + gap(vs[ly[i-1]], vs[ly[i]])
	}
	type block struct {
		first, last int
		sum         float64 // sum of (want - off) over the block
		start       float64 // the block's first vertex position minus its off
	}
	var blocks []block
	for i := range ly {
		b := block{first: i, last: i, sum: want[i] - off[i]}
		b.start = b.sum
		blocks = append(blocks, b)
		for len(blocks) > 1 {
			p, c := blocks[len(blocks)-2], blocks[len(blocks)-1]
			if p.start <= c.start {
				break
			}
			m := block{first: p.first, last: c.last, sum: p.sum + c.sum}
			m.start = m.sum / float64(m.last-m.first+1)
			blocks = append(blocks[:len(blocks)-2], m)
		}
	}
	for _, b := range blocks {
		for i := b.first; i <= b.last; i++ {
			vs[ly[i]].x = b.start + off[i]
		}
	}
}
