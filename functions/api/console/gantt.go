package console

import (
	"fmt"
	"html"
	"html/template"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/types"
)

// Timeline geometry (SVG user units; the drawing scales to the page).
const (
	ganttW      = 1160.0
	ganttLabelW = 200.0
	ganttRight  = 16.0
	ganttTop    = 28.0
	rowStep     = 22.0
	rowLane     = 16.0
	rowGap      = 4.0
	// MaxLaneIterations is the most iterations of one loop run drawn one
	// by one (packed in lanes); more are drawn as a density strip.
	MaxLaneIterations = 3000
	// MaxLanes is the most lanes drawn for one loop run; a loop that ran
	// wider is drawn as a density strip.
	MaxLanes = 64
	// densityBuckets is the number of bars of a density strip.
	densityBuckets = 60
)

// ganttView is the timeline drawn as a Gantt chart.
type ganttView struct {
	Width, Height float64
	// X0 and X1 bound the time axis.
	X0, X1 float64
	Ticks  []tick
	Rows   []ganttRow
	Bars   []ganttBar
	Gaps   []ganttGap
	// Summary says in words what the drawing shows.
	Summary string
	// Iterations counts the iterations drawn or summarised; Attempts,
	// Failed and Retried the task attempts (all, failed, retried).
	Iterations, Attempts, Failed, Retried int
}

// tick is a time-axis mark.
type tick struct {
	X     float64
	Label string
}

// ganttRow is one labelled row.
type ganttRow struct {
	Y, H   float64
	Label  string
	Title  string
	Indent bool
	Odd    bool
}

// ganttBar is one drawn interval: a step run, an iteration, a task
// attempt, or a density bar.
type ganttBar struct {
	X, Y, W, H float64
	// Kind is "run", "wait", "iteration", "attempt" or "density".
	Kind  string
	Class string
	Title string
	// Index is an iteration's index; Retried marks an attempt the policy
	// retried.
	Index   int
	Retried bool
}

// ganttGap is a retry's backoff: from a failed attempt's end to the next
// attempt's start.
type ganttGap struct {
	X1, X2, Y float64
	Title     string
}

// ganttScale maps times onto the axis.
type ganttScale struct {
	t0   time.Time
	span time.Duration
}

func (s ganttScale) x(t time.Time) float64 {
	if t.IsZero() {
		return ganttLabelW
	}
	f := float64(t.Sub(s.t0)) / float64(s.span)
	return ganttLabelW + min(max(f, 0), 1)*(ganttW-ganttLabelW-ganttRight)
}

// bar returns x and width of [a, b], at least 1.5 units wide.
func (s ganttScale) bar(a, b time.Time) (float64, float64) {
	x := s.x(a)
	w := max(s.x(b)-x, 1.5)
	return x, w
}

// buildGantt draws tl between t0 and t1 (the execution's span). Loops
// of more than MaxLaneIterations iterations (or wider than MaxLanes), and
// loops whose iterations are not in tl (summary mode: profiles holds
// their engine.LoopProfile by step), are drawn as density strips.
func buildGantt(tl *inspect.Timeline, t0, t1 time.Time, profiles map[string]*engine.LoopProfile) *ganttView {
	if !t1.After(t0) {
		t1 = t0.Add(time.Millisecond)
	}
	sc := ganttScale{t0, t1.Sub(t0)}
	g := &ganttView{Width: ganttW, X0: ganttLabelW, X1: ganttW - ganttRight}
	g.Ticks = ticks(sc)
	y := ganttTop
	odd := false
	row := func(label, title string, h float64, indent bool) float64 {
		g.Rows = append(g.Rows, ganttRow{Y: y, H: h, Label: label, Title: title, Indent: indent, Odd: odd})
		top := y
		y += h + rowGap
		return top
	}
	var lanesTotal, loops int
	for _, r := range tl.Runs {
		odd = !odd
		label := r.Step
		if r.Run > 1 {
			label += " #" + itoa(r.Run)
		}
		start, end := r.Started, r.Ended
		if start.IsZero() {
			start = r.Scheduled
		}
		if end.IsZero() {
			end = t1
		}
		dur := ""
		if !start.IsZero() {
			dur = fmtDur(end.Sub(start))
		}
		top := row(label, fmt.Sprintf("%s run %d: %s %s", r.Step, r.Run, r.Status, dur), rowStep, false)
		if !r.Scheduled.IsZero() && !r.Started.IsZero() && r.Started.After(r.Scheduled) {
			x, w := sc.bar(r.Scheduled, r.Started)
			g.Bars = append(g.Bars, ganttBar{X: x, Y: top + 6, W: w, H: rowStep - 12, Kind: "wait", Class: "wait",
				Title: fmt.Sprintf("%s run %d waited %s to start", r.Step, r.Run, fmtDur(r.Started.Sub(r.Scheduled)))})
		}
		if !start.IsZero() {
			x, w := sc.bar(start, end)
			g.Bars = append(g.Bars, ganttBar{X: x, Y: top + 2, W: w, H: rowStep - 4, Kind: "run", Class: "st-" + string(r.Status),
				Title: fmt.Sprintf("%s run %d: %s, %s", r.Step, r.Run, r.Status, dur)})
		}
		switch {
		case r.Loop != nil && len(r.Loop.Iterations) > 0 && len(r.Loop.Iterations) <= MaxLaneIterations:
			loops++
			g.Iterations += len(r.Loop.Iterations)
			lanes := packLanes(r.Loop.Iterations, t1)
			if len(lanes) > MaxLanes {
				for _, it := range r.Loop.Iterations {
					g.count(it.Attempts)
				}
				g.density(sc, row, r, densityOf(r.Loop.Iterations, start, end))
				break
			}
			lanesTotal += len(lanes)
			for li, lane := range lanes {
				top := row(fmt.Sprintf("lane %d", li+1), fmt.Sprintf("%s: iterations run one after another in lane %d", r.Step, li+1), rowLane, true)
				for _, it := range lane {
					a, b := iterSpan(it, t1)
					x, w := sc.bar(a, b)
					g.Bars = append(g.Bars, ganttBar{X: x, Y: top, W: w, H: rowLane, Kind: "iteration", Class: "it-" + string(it.Status), Index: it.Index,
						Title: fmt.Sprintf("#%d %s %s, %d attempts", it.Index, it.Status, fmtDur(b.Sub(a)), len(it.Attempts))})
					g.attempts(sc, it.Attempts, top+3, rowLane-6, t1, fmt.Sprintf("#%d", it.Index), false)
				}
			}
		case r.Loop != nil && len(r.Loop.Iterations) > 0:
			loops++
			g.Iterations += len(r.Loop.Iterations)
			for _, it := range r.Loop.Iterations {
				g.count(it.Attempts)
			}
			g.density(sc, row, r, densityOf(r.Loop.Iterations, start, end))
		case r.Loop != nil && profiles[r.Step] != nil:
			loops++
			p := profiles[r.Step]
			n := 0
			for _, c := range p.Ended {
				n += c
			}
			g.Iterations += n
			g.density(sc, row, r, densityOfProfile(p))
		default:
			tasks := map[string]float64{}
			var order []string
			for _, a := range r.Attempts {
				if _, ok := tasks[a.Task]; !ok {
					order = append(order, a.Task)
					tasks[a.Task] = 0
				}
			}
			for _, task := range order {
				top := row(task, r.Step+" task "+task, rowLane, true)
				var mine []inspect.Attempt
				for _, a := range r.Attempts {
					if a.Task == task {
						mine = append(mine, a)
					}
				}
				g.attempts(sc, mine, top, rowLane, t1, r.Step+" task "+task, true)
			}
		}
	}
	g.Height = y + 8
	var parts []string
	parts = append(parts, fmt.Sprintf("%d step runs", len(tl.Runs)))
	if loops > 0 {
		s := fmt.Sprintf("%d iterations", g.Iterations)
		if lanesTotal > 0 {
			s += fmt.Sprintf(" in %d lanes", lanesTotal)
		}
		parts = append(parts, s)
	}
	if g.Attempts > 0 {
		parts = append(parts, fmt.Sprintf("%d task attempts, %d failed, %d retried", g.Attempts, g.Failed, g.Retried))
	}
	g.Summary = strings.Join(parts, " · ")
	return g
}

// count adds attempts to the totals without drawing them.
func (g *ganttView) count(as []inspect.Attempt) {
	for _, a := range as {
		g.Attempts++
		if a.Status == types.StatusError {
			g.Failed++
		}
		if a.Retried {
			g.Retried++
		}
	}
}

// attempts draws task attempts in one row (top, height h), with the
// backoff of each retried one up to the next attempt of its task.
func (g *ganttView) attempts(sc ganttScale, as []inspect.Attempt, top, h float64, t1 time.Time, what string, label bool) {
	g.count(as)
	for i, a := range as {
		end := a.Ended
		if end.IsZero() {
			end = t1
		}
		x, w := sc.bar(a.Started, end)
		cls := "at-ok"
		switch {
		case a.Status == types.StatusError:
			cls = "at-error"
		case a.Status == "":
			cls = "at-running"
		}
		title := fmt.Sprintf("%s: %s attempt %d, %s, %s", what, a.Task, a.Attempt, statusWord(a.Status), fmtDur(end.Sub(a.Started)))
		if a.Error != nil {
			title += " — " + shorten(errorText(a.Error), 70)
		}
		if a.Retried {
			title += fmt.Sprintf(" — retried after %gs", a.DelayS)
		}
		g.Bars = append(g.Bars, ganttBar{X: x, Y: top, W: w, H: h, Kind: "attempt", Class: cls, Title: title, Retried: a.Retried})
		if a.Retried && !a.Ended.IsZero() {
			for _, b := range as[i+1:] {
				if b.Task == a.Task {
					if b.Started.After(a.Ended) {
						g.Gaps = append(g.Gaps, ganttGap{X1: sc.x(a.Ended), X2: sc.x(b.Started), Y: top + h/2,
							Title: fmt.Sprintf("%s: backoff %s before attempt %d (delay %gs)", what, fmtDur(b.Started.Sub(a.Ended)), b.Attempt, a.DelayS)})
					}
					break
				}
			}
		}
	}
	_ = label
}

// density is one loop run's iterations as a strip: a bar per time bucket,
// as high as the number of iterations that ended in it (failed ones in
// their own colour).
type density struct {
	from, to       time.Time
	ended, failed  []int
	total, maxEach int
}

func (g *ganttView) density(sc ganttScale, row func(string, string, float64, bool) float64, r *inspect.Run, d density) {
	h := rowStep * 1.6
	top := row("iterations", fmt.Sprintf("%s: %d iterations ended, by time", r.Step, d.total), h, true)
	if d.maxEach == 0 || len(d.ended) == 0 {
		return
	}
	step := d.to.Sub(d.from) / time.Duration(len(d.ended))
	for i, n := range d.ended {
		if n == 0 {
			continue
		}
		a := d.from.Add(time.Duration(i) * step)
		x, w := sc.bar(a, a.Add(step))
		bh := max(h*float64(n)/float64(d.maxEach), 1.5)
		f := 0
		if d.failed != nil {
			f = d.failed[i]
		}
		title := fmt.Sprintf("%s, %s–%s: %d iterations ended", r.Step, a.UTC().Format("15:04:05.000"), a.Add(step).UTC().Format("15:04:05.000"), n)
		if f > 0 {
			title += fmt.Sprintf(" (%d failed)", f)
		}
		g.Bars = append(g.Bars, ganttBar{X: x, Y: top + h - bh, W: w, H: bh, Kind: "density", Class: "dens", Title: title})
		if f > 0 {
			fh := max(bh*float64(f)/float64(n), 1.5)
			g.Bars = append(g.Bars, ganttBar{X: x, Y: top + h - fh, W: w, H: fh, Kind: "density", Class: "dens-failed", Title: title})
		}
	}
}

// densityOf buckets iterations by their end.
func densityOf(its []*inspect.Iteration, from, to time.Time) density {
	if !to.After(from) {
		to = from.Add(time.Millisecond)
	}
	d := density{from: from, to: to, ended: make([]int, densityBuckets), failed: make([]int, densityBuckets)}
	span := to.Sub(from)
	for _, it := range its {
		if it.Ended.IsZero() {
			continue
		}
		i := int(float64(it.Ended.Sub(from)) / float64(span) * densityBuckets)
		i = min(max(i, 0), densityBuckets-1)
		d.ended[i]++
		d.total++
		if it.Status == types.StatusError {
			d.failed[i]++
		}
	}
	for _, n := range d.ended {
		d.maxEach = max(d.maxEach, n)
	}
	return d
}

// densityOfProfile is a loop profile as a density.
func densityOfProfile(p *engine.LoopProfile) density {
	d := density{from: time.UnixMicro(p.FirstUS), to: time.UnixMicro(p.LastUS + 1), ended: p.Ended, failed: p.Failed}
	for _, n := range p.Ended {
		d.total += n
		d.maxEach = max(d.maxEach, n)
	}
	return d
}

// iterSpan is an iteration's interval (its first attempt or its end
// stands in for a missing start; t1 for a missing end).
func iterSpan(it *inspect.Iteration, t1 time.Time) (time.Time, time.Time) {
	a, b := it.Started, it.Ended
	if a.IsZero() && len(it.Attempts) > 0 {
		a = it.Attempts[0].Started
	}
	if b.IsZero() {
		b = t1
	}
	if a.IsZero() {
		a = b
	}
	return a, b
}

// packLanes places iterations in lanes, each lane a sequence of
// iterations that do not overlap (the first lane free at an iteration's
// start takes it): what ran in parallel is what shares the time axis.
func packLanes(its []*inspect.Iteration, t1 time.Time) [][]*inspect.Iteration {
	sorted := append([]*inspect.Iteration(nil), its...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, _ := iterSpan(sorted[i], t1)
		b, _ := iterSpan(sorted[j], t1)
		if !a.Equal(b) {
			return a.Before(b)
		}
		return sorted[i].Index < sorted[j].Index
	})
	var lanes [][]*inspect.Iteration
	var ends []time.Time
	for _, it := range sorted {
		a, b := iterSpan(it, t1)
		placed := false
		for i := range lanes {
			if !ends[i].After(a) {
				lanes[i] = append(lanes[i], it)
				ends[i] = b
				placed = true
				break
			}
		}
		if !placed {
			lanes = append(lanes, []*inspect.Iteration{it})
			ends = append(ends, b)
		}
	}
	return lanes
}

// ticks marks the time axis at a round interval (about 8 marks).
func ticks(sc ganttScale) []tick {
	steps := []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
		50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
		5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
		10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if sc.span/s <= 8 {
			step = s
			break
		}
	}
	var out []tick
	for d := time.Duration(0); d <= sc.span; d += step {
		out = append(out, tick{X: sc.x(sc.t0.Add(d)), Label: "+" + fmtDur(d)})
	}
	return out
}

// fmtDur formats a duration for people: 850ms, 1.25s, 3m04s, 2h05m.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "0ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", d.Seconds()), "0"), ".") + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// statusWord is a status for a sentence ("running" for none yet).
func statusWord(s types.Status) string {
	if s == "" {
		return "running"
	}
	return string(s)
}

// num1 formats an SVG coordinate: one decimal, without a trailing ".0".
func num1(x float64) string {
	s := strconv.FormatFloat(x, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// SVG draws the timeline as compact SVG (the demo's 249 iterations and
// 1,500 attempts must fit a page of under 150 KB): the step runs, waits
// and density bars are rects with their title; a loop's iterations are
// rects grouped by status (data-index, a short title); the task attempts
// that ended ok and were not retried are one path per lane and status;
// failed, running and retried attempts are rects with their title, and
// each backoff a line. Text is escaped here (html.EscapeString).
func (g *ganttView) SVG() template.HTML {
	var b strings.Builder
	b.Grow(64 << 10)
	w, h := num1(g.Width), num1(g.Height)
	b.WriteString(`<svg class="gantt" viewBox="0 0 ` + w + ` ` + h + `" width="` + w + `" height="` + h + `" role="group" aria-labelledby="timeline-h timeline-summary">`)
	for _, r := range g.Rows {
		cls := "row"
		if r.Odd {
			cls = "row odd"
		}
		b.WriteString(`<rect class="` + cls + `" x="0" y="` + num1(r.Y-2) + `" width="` + w + `" height="` + num1(r.H+4) + `"/>`)
	}
	for _, t := range g.Ticks {
		x := num1(t.X)
		b.WriteString(`<line class="tick" x1="` + x + `" y1="18" x2="` + x + `" y2="` + h + `"/><text class="ticklabel" x="` + x + `" y="13">` + html.EscapeString(t.Label) + `</text>`)
	}
	for _, r := range g.Rows {
		cls, x := "rowlabel", "6"
		if r.Indent {
			cls, x = "rowlabel sub", "18"
		}
		b.WriteString(`<text class="` + cls + `" x="` + x + `" y="` + num1(r.Y+r.H-4) + `"><title>` + html.EscapeString(r.Title) + `</title>` + html.EscapeString(r.Label) + `</text>`)
	}
	rect := func(bar ganttBar, attrs string) {
		b.WriteString(`<rect` + attrs + ` x="` + num1(bar.X) + `" y="` + num1(bar.Y) + `" width="` + num1(bar.W) + `" height="` + num1(bar.H) + `"><title>` + html.EscapeString(bar.Title) + `</title></rect>`)
	}
	// Iterations by status, attempts that need no title by lane.
	type laneKey struct {
		cls  string
		y, h float64
	}
	its := map[string][]ganttBar{}
	var itOrder []string
	type lanePath struct {
		d    strings.Builder
		endX float64
	}
	paths := map[laneKey]*lanePath{}
	var pathOrder []laneKey
	for _, bar := range g.Bars {
		switch {
		case bar.Kind == "iteration":
			if _, ok := its[bar.Class]; !ok {
				itOrder = append(itOrder, bar.Class)
			}
			its[bar.Class] = append(its[bar.Class], bar)
		case bar.Kind == "attempt" && bar.Class == "at-ok" && !bar.Retried:
			// A stroke as thick as the bar along its middle: "h" draws
			// it, "m" moves to the next one (relative to the last end).
			k := laneKey{bar.Class, bar.Y, bar.H}
			p := paths[k]
			if p == nil {
				p = &lanePath{}
				paths[k] = p
				pathOrder = append(pathOrder, k)
				p.d.WriteString("M" + num1(bar.X) + " " + num1(bar.Y+bar.H/2))
			} else {
				p.d.WriteString("m" + num1(bar.X-p.endX) + " 0")
			}
			p.d.WriteString("h" + num1(bar.W))
			p.endX = bar.X + bar.W
		default:
			attrs := ` class="bar ` + bar.Kind + ` ` + bar.Class + `" data-kind="` + bar.Kind + `"`
			if bar.Retried {
				attrs += ` data-retried="true"`
			}
			rect(bar, attrs)
		}
	}
	for _, cls := range itOrder {
		b.WriteString(`<g class="bar iteration ` + cls + `">`)
		for _, bar := range its[cls] {
			rect(bar, ` data-index="`+strconv.Itoa(bar.Index)+`"`)
		}
		b.WriteString(`</g>`)
	}
	for _, k := range pathOrder {
		b.WriteString(`<path class="bar attempt ` + k.cls + `" stroke-width="` + num1(k.h) + `" d="` + paths[k].d.String() + `"/>`)
	}
	for _, gp := range g.Gaps {
		b.WriteString(`<line class="gap" data-kind="backoff" x1="` + num1(gp.X1) + `" y1="` + num1(gp.Y) + `" x2="` + num1(gp.X2) + `" y2="` + num1(gp.Y) + `"><title>` + html.EscapeString(gp.Title) + `</title></line>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
