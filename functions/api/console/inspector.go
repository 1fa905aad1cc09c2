package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/types"
)

// The step inspector (GET /console/executions/{id}/steps/{step}?run=N
// &iteration=I): one step run of an execution, read from its events as
// the api redacts them (Backend.Events: the same redaction as GET
// /executions/{id}/events) — its input (the token it was entered with),
// every task attempt with its rendered input (args and config, cut at the
// worker's bound), its whole captured logs as the event holds them and
// its error, its result, and the step's source in the playbook. A loop
// step lists its iterations; the attempts shown are those of one
// iteration (the first failed one unless ?iteration= says).

// InspectorMaxResult is the most bytes of a result the inspector shows
// inline.
const InspectorMaxResult = 64 << 10

// InspectorMaxLogs is the most whole logs (stored in the results tier) one
// inspector page reads; the other attempts show the tail their event
// holds.
const InspectorMaxLogs = 20

// inspectorPage is the inspector's data.
type inspectorPage struct {
	ID     string
	Status *inspect.Status
	Step   string
	// Info is the step's latest run as the status document has it.
	Info inspect.Step
	// Runs are the step's runs seen in the log (links); Run is the one
	// shown.
	Runs []runLink
	Run  int
	// ReusedFrom and ReusedRun: a rerun reused this run from that
	// execution's run (its inspector: ReusedURL).
	ReusedFrom string
	ReusedRun  int
	ReusedURL  string
	// Input is the run's token (its step.scheduled args), indented JSON;
	// From the step whose arc entered it.
	Input, From string
	// Loop: the step is a loop; Iterations its iterations in this run
	// (index order), Iteration the one whose attempts are shown (-1:
	// none).
	Loop       bool
	Iterations []iterationRow
	Iteration  int
	Attempts   []attemptView
	Result     *resultRow
	Error      string
	// Source is the step's YAML in the playbook, from line SourceLine.
	Source     []sourceLine
	SourceNote string
	EventsURL  string
}

// runLink is one run of the step.
type runLink struct {
	Run     int
	URL     string
	Current bool
}

// iterationRow is one iteration of a loop step run.
type iterationRow struct {
	Index            int
	Status           string
	Attempts, Failed int
	Duration         string
	Error            string
	URL              string
	Current          bool
}

// attemptView is one ended task attempt.
type attemptView struct {
	Task      string
	Attempt   int
	Iteration *int
	Kind      string
	Status    string
	Ended     string
	Duration  string
	HTTP      string
	Adopted   bool
	Error     string
	// Input is the attempt's rendered args and config (indented when it
	// parses: it may have been cut); Logs its captured output: whole, read
	// from the results tier when the event holds only its tail (LogsRef;
	// LogsNote says when it could not be read, and the tail is shown).
	Input    string
	Logs     string
	LogsRef  any
	LogsNote string
}

// sourceLine is one numbered line of the step's source.
type sourceLine struct {
	N    int
	Text string
}

// inspector serves the step inspector.
func (v *visit) inspector(id, step string) {
	var st inspect.Status
	if err := v.call(http.MethodGet, "/executions/"+url.PathEscape(id), nil, &st); err != nil {
		v.fail(err)
		return
	}
	evs, _, err := v.h.cfg.Backend.Events(v.r.Context(), id)
	if err != nil {
		v.fail(err)
		return
	}
	info, known := st.Steps[step]
	var mine []types.Event
	for _, e := range evs {
		if e.Step == step {
			mine = append(mine, e)
		}
	}
	if !known && len(mine) == 0 {
		v.fail(&Error{http.StatusNotFound, fmt.Sprintf("step %s did not run in execution %s", step, id)})
		return
	}
	q := v.r.URL.Query()
	self := v.base + "/executions/" + url.PathEscape(id) + "/steps/" + url.PathEscape(step)
	d := &inspectorPage{ID: id, Status: &st, Step: step, Info: info, Iteration: -1,
		EventsURL: v.base + "/executions/" + url.PathEscape(id) + "/events?" + url.Values{"step": {step}}.Encode()}
	// The runs seen, the one asked for (else the latest).
	runs := map[int]bool{}
	for _, e := range mine {
		if e.StepRun > 0 {
			runs[e.StepRun] = true
		}
	}
	d.Run = info.Run
	if n, err := strconv.Atoi(q.Get("run")); err == nil && runs[n] {
		d.Run = n
	}
	if d.Run == 0 {
		for n := range runs {
			d.Run = max(d.Run, n)
		}
	}
	for n := 1; n <= len(runs)+1 && len(runs) > 1; n++ {
		if runs[n] {
			d.Runs = append(d.Runs, runLink{Run: n, URL: self + "?run=" + strconv.Itoa(n), Current: n == d.Run})
		}
	}
	iters := map[int]*iterationRow{}
	var order []int
	iter := func(i int) *iterationRow {
		r := iters[i]
		if r == nil {
			r = &iterationRow{Index: i, Status: "running", URL: self + "?" + url.Values{"run": {strconv.Itoa(d.Run)}, "iteration": {strconv.Itoa(i)}}.Encode()}
			iters[i] = r
			order = append(order, i)
		}
		return r
	}
	var attempts []attemptView
	for _, e := range mine {
		if e.StepRun != d.Run {
			continue
		}
		switch e.EventType {
		case types.EvStepScheduled:
			if p, err := history.Decode[history.StepScheduled](e); err == nil && !p.Queued {
				d.From = p.From
				if len(p.Args) > 0 {
					d.Input = indentValue(p.Args, InspectorMaxResult)
				}
			}
		case types.EvLoopStarted:
			d.Loop = true
		case types.EvStepDone:
			p, _ := history.Decode[history.StepDone](e)
			if p.ReusedFrom != nil {
				d.ReusedFrom, d.ReusedRun = p.ReusedFrom.ExecutionID, p.ReusedFrom.StepRun
				d.ReusedURL = v.base + "/executions/" + url.PathEscape(p.ReusedFrom.ExecutionID) + "/steps/" + url.PathEscape(step) + "?run=" + strconv.Itoa(p.ReusedFrom.StepRun)
			}
			if p.Loop && p.ReusedFrom != nil {
				d.Loop = true
			}
			r := resultOfMax(step, p.Result, InspectorMaxResult)
			d.Result = &r
		case types.EvLoopDone:
			p, _ := history.Decode[history.LoopDone](e)
			r := resultOfMax(step, p.Result, InspectorMaxResult)
			d.Result = &r
		case types.EvStepFailed:
			p, _ := history.Decode[history.StepFailed](e)
			d.Error = errorText(p.Error)
		case types.EvLoopIterationStarted, types.EvLoopIterationDone, types.EvLoopIterationFailed, types.EvLoopIterationCanceled:
			if e.Iteration == nil {
				continue
			}
			r := iter(*e.Iteration)
			switch e.EventType {
			case types.EvLoopIterationDone:
				r.Status = string(types.StatusOK)
			case types.EvLoopIterationFailed:
				p, _ := history.Decode[history.IterationFailed](e)
				r.Status, r.Error = string(types.StatusError), errorText(p.Error)
			case types.EvLoopIterationCanceled:
				r.Status = string(types.StatusCanceled)
			}
			if e.DurationMS > 0 {
				r.Duration = fmtDur(time.Duration(e.DurationMS) * time.Millisecond)
			}
		case types.EvTaskAttemptDone, types.EvTaskAttemptFailed:
			a := attemptOf(e)
			if e.Iteration != nil {
				r := iter(*e.Iteration)
				r.Attempts++
				if e.EventType == types.EvTaskAttemptFailed {
					r.Failed++
				}
			}
			attempts = append(attempts, a)
		}
	}
	if d.Loop || len(iters) > 0 {
		d.Loop = true
		slices.Sort(order)
		if n, err := strconv.Atoi(q.Get("iteration")); err == nil && iters[n] != nil {
			d.Iteration = n
		} else {
			for _, i := range order {
				if iters[i].Status == string(types.StatusError) {
					d.Iteration = i
					break
				}
			}
			if d.Iteration < 0 && len(order) > 0 {
				d.Iteration = order[0]
			}
		}
		for _, i := range order {
			r := iters[i]
			r.Current = i == d.Iteration
			d.Iterations = append(d.Iterations, *r)
		}
		for _, a := range attempts {
			if a.Iteration != nil && *a.Iteration == d.Iteration {
				d.Attempts = append(d.Attempts, a)
			}
		}
	} else {
		d.Attempts = attempts
	}
	// Whole logs the events hold only the tail of (at most
	// InspectorMaxLogs read per page).
	read := 0
	for i := range d.Attempts {
		a := &d.Attempts[i]
		if a.LogsRef == nil {
			continue
		}
		if read == InspectorMaxLogs {
			a.LogsNote = "the tail of the log: open this attempt's iteration or run alone to read the whole log"
			continue
		}
		read++
		v, err := v.h.cfg.Backend.Result(v.r.Context(), id, a.LogsRef)
		if s, ok := v.(string); err == nil && ok {
			a.Logs = s
		} else {
			a.LogsNote = fmt.Sprintf("the tail of the log (the whole log could not be read: %v)", err)
		}
	}
	if d.Result == nil && d.Run == info.Run {
		if m, ok := st.Results.(map[string]any); ok {
			if res, ok := m[step]; ok {
				r := resultOfMax(step, res, InspectorMaxResult)
				d.Result = &r
			}
		}
	}
	if d.Error == "" && d.Run == info.Run && info.Error != nil {
		d.Error = errorText(info.Error)
	}
	if src, err := v.h.cfg.Backend.Source(v.r.Context(), id); err != nil {
		d.SourceNote = err.Error()
	} else {
		d.Source, d.SourceNote = stepSource(src, step)
	}
	v.render(http.StatusOK, "inspector", "Step "+step+" of "+id, d)
}

// attemptOf is an ended attempt's view.
func attemptOf(e types.Event) attemptView {
	a := attemptView{Task: e.Task, Attempt: e.Attempt, Iteration: e.Iteration, Status: string(e.Status)}
	if ts := e.Timestamp.Time; !ts.IsZero() {
		a.Ended = ts.UTC().Format(time.RFC3339Nano)
	}
	if e.DurationMS > 0 {
		a.Duration = fmtDur(time.Duration(e.DurationMS) * time.Millisecond)
	}
	p, _ := history.Decode[history.TaskAttempt](e)
	a.Kind, a.Adopted, a.Logs = p.Kind, p.Adopted, p.Logs
	if p.HTTPStatus != nil {
		a.HTTP = strconv.Itoa(*p.HTTPStatus)
	}
	if p.Error != nil {
		a.Error = errorText(p.Error.Map())
	}
	a.Input, a.LogsRef = p.Input, p.LogsRef
	var buf bytes.Buffer
	if p.Input != "" && json.Indent(&buf, []byte(p.Input), "", "  ") == nil {
		a.Input = buf.String()
	}
	return a
}

// stepSource is the YAML of step in a playbook's source, numbered from
// its line: from the step's mapping to the line before the next item or
// key at the list's indentation or less. The note says when the step is
// not found (a playbook written in another form).
func stepSource(src, step string) ([]sourceLine, string) {
	pb, err := dsl.Load([]byte(src), "playbook")
	if err != nil {
		return nil, "the playbook does not load: " + err.Error()
	}
	s := pb.Step(step)
	if s == nil || s.Line <= 0 {
		return nil, "step " + step + " has no line in the playbook's source"
	}
	lines := strings.Split(src, "\n")
	if s.Line > len(lines) {
		return nil, "step " + step + " has no line in the playbook's source"
	}
	first := lines[s.Line-1]
	// The item's dash, when the mapping starts on its line ("  - step: x").
	indent := len(first) - len(strings.TrimLeft(first, " "))
	if t := strings.TrimLeft(first, " "); strings.HasPrefix(t, "- ") {
		indent = len(first) - len(t)
	} else if indent >= 2 {
		indent -= 2
	}
	out := []sourceLine{{N: s.Line, Text: first}}
	for i := s.Line; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) != "" && len(l)-len(strings.TrimLeft(l, " ")) <= indent {
			break
		}
		out = append(out, sourceLine{N: i + 1, Text: l})
	}
	for len(out) > 1 && strings.TrimSpace(out[len(out)-1].Text) == "" {
		out = out[:len(out)-1]
	}
	return out, ""
}
