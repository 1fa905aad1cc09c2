package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/types"
)

// eventsTable is one page of an execution's events, in the api's causal
// order, filtered by step and event type.
type eventsTable struct {
	// Action is the URL the filter form submits to.
	Action string
	Step   string
	Type   string
	Steps  []string
	Types  []string
	// Total is the number of events that pass the filters; Page and
	// Pages locate this page (1-based).
	Total, Page, Pages int
	Rows               []eventRow
	// Prev, Next, First and Last are the pager's URLs ("" when not
	// applicable).
	Prev, Next, First, Last string
	// Following: the execution runs, and the page shows the newest
	// events (the script keeps it current).
	Following bool
}

// eventRow is one event of the table.
type eventRow struct {
	Seq  int64
	Time string
	// At is the event's time in RFC 3339 (the page's script shows Time in
	// the visitor's zone).
	At        string
	Type      string
	Step      string
	Task      string
	Iteration string
	Attempt   string
	Status    string
	Duration  string
	Payload   string
	// Failed marks an event of a failure (the row is highlighted).
	Failed bool
}

// eventsTable builds the events table of evs from the visit's query
// (step, type, page); while the execution runs (live) and no page is
// asked for, the last page is shown. path is the page the pager links to
// ("" = the execution's page).
func (v *visit) eventsTable(id string, evs []types.Event, live bool, path string) *eventsTable {
	q := v.r.URL.Query()
	if path == "" {
		path = v.base + "/executions/" + url.PathEscape(id)
	}
	t := &eventsTable{Action: path, Step: q.Get("step"), Type: q.Get("type")}
	steps, kinds := map[string]bool{}, map[string]bool{}
	var rows []types.Event
	for _, e := range evs {
		if e.Step != "" {
			steps[e.Step] = true
		}
		kinds[string(e.EventType)] = true
		if (t.Step == "" || e.Step == t.Step) && (t.Type == "" || string(e.EventType) == t.Type) {
			rows = append(rows, e)
		}
	}
	for s := range steps {
		t.Steps = append(t.Steps, s)
	}
	for k := range kinds {
		t.Types = append(t.Types, k)
	}
	sort.Strings(t.Steps)
	sort.Strings(t.Types)
	t.Total = len(rows)
	t.Pages = max(1, (len(rows)+EventsPerPage-1)/EventsPerPage)
	t.Page = atoi(q.Get("page"))
	if q.Get("page") == "" && live {
		t.Page, t.Following = t.Pages, true
	}
	t.Page = min(t.Page, t.Pages)
	link := func(page int) string {
		lq := url.Values{}
		if t.Step != "" {
			lq.Set("step", t.Step)
		}
		if t.Type != "" {
			lq.Set("type", t.Type)
		}
		lq.Set("page", itoa(page))
		return path + "?" + lq.Encode() + "#events"
	}
	if t.Page > 1 {
		t.Prev, t.First = link(t.Page-1), link(1)
	}
	if t.Page < t.Pages {
		t.Next, t.Last = link(t.Page+1), link(t.Pages)
	}
	lo := (t.Page - 1) * EventsPerPage
	hi := min(lo+EventsPerPage, len(rows))
	for _, e := range rows[lo:hi] {
		t.Rows = append(t.Rows, rowOf(e))
	}
	return t
}

// rowOf is an event as a table row (its payload shortened to one line).
func rowOf(e types.Event) eventRow {
	r := eventRow{Seq: e.Seq, Type: string(e.EventType), Task: e.Task, Status: string(e.Status)}
	if ts := e.Timestamp.Time; !ts.IsZero() {
		r.Time, r.At = ts.UTC().Format("15:04:05.000"), ts.UTC().Format(time.RFC3339Nano)
	}
	if e.Step != "" {
		r.Step = e.Step
		if e.StepRun > 1 {
			r.Step += " #" + itoa(e.StepRun)
		}
	}
	if e.Iteration != nil {
		r.Iteration = itoa(*e.Iteration)
	}
	if e.Attempt > 0 {
		r.Attempt = itoa(e.Attempt)
	}
	if e.DurationMS > 0 {
		r.Duration = fmtDur(time.Duration(e.DurationMS) * time.Millisecond)
	}
	if len(e.Payload) > 0 {
		b, _ := json.Marshal(e.Payload)
		r.Payload = shorten(string(b), 180)
	}
	switch e.EventType {
	case types.EvTaskAttemptFailed, types.EvStepFailed, types.EvLoopIterationFailed, types.EvUnitDeadLettered, types.EvExecutionTimedOut:
		r.Failed = true
	}
	if e.Status == types.StatusFailed || e.Status == types.StatusError {
		r.Failed = true
	}
	return r
}

// eventsPageData is the events page's data (large executions: it reads
// every event, on request).
type eventsPageData struct {
	ID     string
	Status *inspect.Status
	Ended  bool
	// Follow: the page refreshes itself until the execution has ended
	// and its log is complete (see inspect.LogComplete and LogSettle).
	Follow bool
	Events *eventsTable
}

// eventsPage serves every event of an execution, a page at a time.
func (v *visit) eventsPage(id string) {
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
	data := &eventsPageData{ID: id, Status: &st, Ended: ended(st.Status)}
	data.Follow = !data.Ended || followLog(evs, &st, v.h.cfg.Now())
	data.Events = v.eventsTable(id, evs, data.Follow, v.base+"/executions/"+url.PathEscape(id)+"/events")
	v.render(http.StatusOK, "events", "Events of "+id, data)
}
