package console

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/noetl/gcpengine/functions/api/console/layout"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/types"
)

// graphView is the playbook drawn as a graph: steps are nodes, arcs are
// edges (inline SVG, laid out by package layout).
type graphView struct {
	Width, Height float64
	Nodes         []graphNode
	Edges         []graphEdge
	// Arcs lists every arc with its full guard (the table under the
	// drawing: the same facts, readable without a pointer).
	Arcs []arcRow
}

// graphNode is one step.
type graphNode struct {
	Name string
	// X, Y is the top left corner; W, H the size.
	X, Y, W, H float64
	// Status is the step's status in this execution ("" = never
	// scheduled).
	Status string
	// Lines are the figures under the name.
	Lines []string
	// Marks are the step's kinds: entry, loop, join, final, fan-out.
	Marks []string
	// Title is the tooltip.
	Title string
}

// graphEdge is one arc.
type graphEdge struct {
	From, To string
	D        string // SVG path data
	// Class says what it is: "taken" (fired in this execution), "idle",
	// plus "back" (it points against the flow), "fail" (on step.failed)
	// and "implicit".
	Class string
	// Label is the guard, shortened; LX, LY its position.
	Label  string
	LX, LY float64
	// Anchor is the label's text-anchor: "end" left of an edge that goes
	// left, "start" otherwise (fanned-out labels part ways).
	Anchor string
	Title  string
}

// arcRow is one arc of the arcs table.
type arcRow struct {
	From, To, When, On string
	Taken              int
	Implicit           bool
}

// node sizes (SVG user units): the name's baseline is 22 below the top,
// the figure lines follow nodeLine apart from nodeTop.
const (
	nodeTop  = 30.0
	nodeLine = 15.0
	nodeMinW = 150.0
	nodeMaxW = 300.0
	charW    = 7.4 // average width of a 13px sans-serif character
)

// buildGraph lays out pb's steps and arcs, each step coloured by its
// status in st, with its figures (runs; attempts and failed attempts
// when stats has them, nil in summary mode), and each arc marked with the
// number of times it fired (taken: from next.evaluated events; nil in
// summary mode, where no arc is known to have fired or not).
func buildGraph(pb *dsl.Playbook, st *inspect.Status, stats map[string]*inspect.StepStats, taken map[[2]string]int) *graphView {
	index := map[string]int{}
	var steps []*dsl.Step
	for _, s := range pb.Workflow {
		if s == nil || s.Name == "" {
			continue
		}
		if _, dup := index[s.Name]; dup {
			continue
		}
		index[s.Name] = len(steps)
		steps = append(steps, s)
	}
	g := layout.Graph{}
	nodes := make([]graphNode, len(steps))
	for i, s := range steps {
		n := graphNode{Name: s.Name}
		var kinds []string
		for _, t := range s.Tasks {
			if t != nil && !contains(kinds, t.Kind) {
				kinds = append(kinds, t.Kind)
			}
		}
		if s.Name == pb.EntryStep() {
			n.Marks = append(n.Marks, "entry")
		}
		if s.Name == pb.FinalStep {
			n.Marks = append(n.Marks, "final")
		}
		if s.Loop != nil {
			n.Marks = append(n.Marks, "loop")
		}
		if len(s.JoinOf) > 0 {
			n.Marks = append(n.Marks, "join")
		}
		if s.Next != nil && s.Next.Mode == "inclusive" && len(s.Next.Arcs) > 1 {
			n.Marks = append(n.Marks, "fan-out")
		}
		ss, ran := st.Steps[s.Name]
		line1 := strings.Join(kinds, ", ")
		if s.Loop != nil {
			mode := s.Loop.Mode
			if mode == "" {
				mode = "sequential"
			}
			line1 = "loop " + mode + " · " + line1
		}
		n.Lines = append(n.Lines, shorten(line1, 40))
		if ran {
			n.Status = string(ss.Status)
			l2 := string(ss.Status)
			if ss.Runs > 1 || ss.Run > 1 {
				l2 += fmt.Sprintf(" · runs %d", max(ss.Runs, ss.Run))
			}
			if ss.Loop != nil {
				l2 += fmt.Sprintf(" · %d/%d", ss.Loop.Done, ss.Loop.Total)
			}
			n.Lines = append(n.Lines, l2)
			if s := stats[s.Name]; s != nil && s.Attempts > 0 {
				l3 := plural(s.Attempts, "attempt")
				if s.FailedAttempts > 0 {
					l3 += fmt.Sprintf(" · %d failed", s.FailedAttempts)
				}
				n.Lines = append(n.Lines, l3)
			}
		} else {
			n.Lines = append(n.Lines, "not reached")
		}
		w := float64(utf8.RuneCountInString(s.Name))*charW*1.1 + 40
		for _, l := range n.Lines {
			w = max(w, float64(utf8.RuneCountInString(l))*charW*0.92+24)
		}
		if len(n.Marks) > 0 {
			w = max(w, float64(utf8.RuneCountInString(s.Name))*charW*1.1+40+float64(len(n.Marks))*14)
		}
		n.W, n.H = min(max(w, nodeMinW), nodeMaxW), nodeTop+float64(len(n.Lines))*nodeLine+8
		n.Title = s.Name
		if s.Desc != "" {
			n.Title += ": " + s.Desc
		}
		if len(s.JoinOf) > 0 {
			n.Title += "\njoin of " + strings.Join(s.JoinOf, ", ")
		}
		nodes[i] = n
		g.Nodes = append(g.Nodes, layout.Node{W: n.W, H: n.H})
	}
	type arcRef struct {
		from int
		arc  *dsl.Arc
	}
	var arcs []arcRef
	view := &graphView{}
	for i, s := range steps {
		if s.Next == nil {
			continue
		}
		for _, a := range s.Next.Arcs {
			if a == nil {
				continue
			}
			to, ok := index[a.Step]
			view.Arcs = append(view.Arcs, arcRow{From: s.Name, To: a.Step, When: a.When, On: string(a.On), Taken: taken[[2]string{s.Name, a.Step}], Implicit: a.Implicit})
			if !ok {
				continue
			}
			arcs = append(arcs, arcRef{i, a})
			g.Edges = append(g.Edges, layout.Edge{From: i, To: to})
		}
	}
	if e, ok := index[pb.EntryStep()]; ok {
		g.Roots = []int{e}
	}
	res := layout.Layered(g, layout.Options{LayerGap: 70, NodeGap: 48, Margin: 20})
	// Guard labels sit beside their edges and may reach past the nodes:
	// widen the drawing (and move it right) so that none is cut off.
	lo, hi := 0.0, res.Width
	for k, ar := range arcs {
		p := res.Paths[k]
		if p.Self || len(p.Points) < 2 || ar.arc.When == "" && ar.arc.On == "" {
			continue
		}
		x, _, anchor := labelAt(p.Points)
		w := labelWidth(ar.arc)
		if anchor == "end" {
			lo = min(lo, x-w-6)
		} else {
			hi = max(hi, x+w+6)
		}
	}
	shift := -lo
	for i := range res.Centers {
		res.Centers[i].X += shift
	}
	for k := range res.Paths {
		for j := range res.Paths[k].Points {
			res.Paths[k].Points[j].X += shift
		}
	}
	view.Width, view.Height = hi+shift, res.Height
	for i := range nodes {
		c := res.Centers[i]
		nodes[i].X, nodes[i].Y = c.X-nodes[i].W/2, c.Y-nodes[i].H/2
	}
	view.Nodes = nodes
	for k, ar := range arcs {
		p := res.Paths[k]
		from, to := steps[ar.from].Name, ar.arc.Step
		e := graphEdge{From: from, To: to}
		cls := []string{"idle"}
		switch {
		case taken == nil:
			cls[0] = "unknown" // summary mode: the arcs' events were not read
		case taken[[2]string{from, to}] > 0:
			cls[0] = "taken"
		}
		if p.Back {
			cls = append(cls, "back")
		}
		if ar.arc.On == dsl.ArcOnStepFailed {
			cls = append(cls, "fail")
		}
		if ar.arc.Implicit {
			cls = append(cls, "implicit")
		}
		e.Class = strings.Join(cls, " ")
		label := guard(ar.arc)
		e.Title = from + " → " + to
		if label != "" {
			e.Title += ": " + label
		}
		if n := taken[[2]string{from, to}]; n > 0 {
			e.Title += fmt.Sprintf(" (taken %d×)", n)
		}
		e.Label = edgeLabel(ar.arc)
		if p.Self {
			n := nodes[ar.from]
			x, y := n.X+n.W, n.Y+n.H/2
			e.D = fmt.Sprintf("M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f", x, y-12, x+50, y-40, x+50, y+40, x, y+12)
			e.LX, e.LY, e.Anchor = x+54, y, "start"
		} else {
			e.D = pathD(p.Points, p.Back)
			e.LX, e.LY, e.Anchor = labelAt(p.Points)
		}
		view.Edges = append(view.Edges, e)
	}
	sort.SliceStable(view.Edges, func(i, j int) bool { return view.Edges[i].Class < view.Edges[j].Class })
	return view
}

// guard is an arc's condition as written: its event (when not the
// step's success) and its when.
func guard(a *dsl.Arc) string {
	if a.On != "" {
		return strings.TrimSpace("on " + string(a.On) + " " + a.When)
	}
	return a.When
}

// edgeLabel is the guard drawn beside an arc: without the template
// braces, cut to 34 characters (the arcs table has it whole).
func edgeLabel(a *dsl.Arc) string {
	l := strings.TrimSpace(guard(a))
	l = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "{{"), "}}"))
	return shorten(l, 34)
}

// labelWidth estimates the drawn width of an arc's label (11px text).
func labelWidth(a *dsl.Arc) float64 {
	return float64(utf8.RuneCountInString(edgeLabel(a))) * 6.4
}

// pathD is a smooth SVG path through points: vertical tangents at each
// point (edges run between layers), sideways ones for a back edge's
// first and last hop (it leaves and enters its nodes from the side).
func pathD(pts []layout.Point, back bool) string {
	if len(pts) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "M%.1f,%.1f", pts[0].X, pts[0].Y)
	for i := 1; i < len(pts); i++ {
		a, c := pts[i-1], pts[i]
		dy := (c.Y - a.Y) / 2
		fmt.Fprintf(&b, " C%.1f,%.1f %.1f,%.1f %.1f,%.1f", a.X, a.Y+dy, c.X, c.Y-dy, c.X, c.Y)
	}
	_ = back
	return b.String()
}

// labelAt is where an edge's label goes: beside its last hop, 60% of
// the way down (near the target, where fanned-out edges are apart), on
// the outer side of an edge that bends left or right.
func labelAt(pts []layout.Point) (float64, float64, string) {
	if len(pts) < 2 {
		return 0, 0, "start"
	}
	a, c := pts[len(pts)-2], pts[len(pts)-1]
	x, y := a.X+(c.X-a.X)*0.75, a.Y+(c.Y-a.Y)*0.6
	if c.X < a.X-1 {
		return x - 8, y, "end"
	}
	return x + 8, y, "start"
}

// takenArcs counts, per (from, to), the arcs next.evaluated events fired.
func takenArcs(evs []types.Event) map[[2]string]int {
	out := map[[2]string]int{}
	for _, e := range evs {
		if e.EventType != types.EvNextEvaluated {
			continue
		}
		p, _ := history.Decode[history.NextEvaluated](e) // a malformed list reads as none
		for _, to := range p.Fired {
			out[[2]string{e.Step, to}]++
		}
	}
	return out
}

// plural is "1 attempt", "2 attempts".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return itoa(n) + " " + word + "s"
}

// shorten cuts s to n runes with an ellipsis.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// itoa formats an int.
func itoa(i int) string { return strconv.Itoa(i) }
