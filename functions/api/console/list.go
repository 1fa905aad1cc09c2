package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// PageSize is the number of executions on one page of the list.
const PageSize = 50

// listStatuses are the status filter's choices (GET /executions?status=).
var listStatuses = []string{"requested", "running", "ok", "failed", "canceled"}

// listWithin are the "created within" choices of the list.
var listWithin = []struct{ Value, Label string }{{"1h", "the last hour"}, {"24h", "the last 24 hours"}, {"7d", "the last 7 days"}, {"30d", "the last 30 days"}}

// listFilters are the list's query parameters a page link carries.
var listFilters = []string{"status", "playbook", "creator", "within", "since", "until", "tz"}

// listPage is the executions list's data.
type listPage struct {
	Status, Playbook, Creator, Within, Since, Until, TZ string
	Statuses                                            []string
	WithinChoices                                       []struct{ Value, Label string }
	// MayCreator: the visitor may filter by creator (an operator: below,
	// the api lists the visitor's own executions only).
	MayCreator bool
	// Counts are the executions per status under the other filters, each
	// with the list's URL filtered by it.
	Counts []statusCount
	Total  int
	Rows   []listRow
	// Next is the URL of the next page ("" on the last one); First is set
	// on every page but the first.
	Next, First string
	// Filtered: some filter is set (the page offers to clear them).
	Filtered bool
	// Live: some shown execution has not ended (the page refreshes).
	Live  bool
	Error string
}

// statusCount is one status's count in the list's header.
type statusCount struct {
	Status  string
	N       int
	URL     string
	Current bool
}

// listRow is one execution of the list.
type listRow struct {
	store.ExecutionSummary
	// Duration runs from creation to the last update (the end, for an
	// ended execution) or to now.
	Duration time.Duration
	Ended    bool
}

// parseWhen reads a time filter: RFC 3339, or a datetime-local value
// ("2026-11-28T10:00", seconds optional) in the visitor's zone, tz being
// its offset in minutes west of UTC as the browser's
// Date.getTimezoneOffset gives it (the page's script fills it; UTC
// without it).
func parseWhen(s, tz string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	off, _ := strconv.Atoi(tz)
	if off < -24*60 || off > 24*60 {
		off = 0
	}
	loc := time.FixedZone("", -off*60)
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// withinOf is a "created within" choice's duration.
func withinOf(s string) (time.Duration, bool) {
	switch s {
	case "1h":
		return time.Hour, true
	case "24h":
		return 24 * time.Hour, true
	case "7d":
		return 7 * 24 * time.Hour, true
	case "30d":
		return 30 * 24 * time.Hour, true
	}
	return 0, false
}

// executions serves the list: GET /executions with the filters and the
// page cursor of the query, newest first, with the counts per status.
func (v *visit) executions() {
	q := v.r.URL.Query()
	data := &listPage{Status: q.Get("status"), Playbook: q.Get("playbook"), Creator: q.Get("creator"), Within: q.Get("within"),
		Since: q.Get("since"), Until: q.Get("until"), TZ: q.Get("tz"), Statuses: listStatuses, MayCreator: v.principal.Role >= auth.Operator}
	data.WithinChoices = listWithin
	api := url.Values{"limit": {strconv.Itoa(PageSize)}, "counts": {"true"}}
	for _, k := range []string{"status", "playbook", "creator", "before"} {
		if x := q.Get(k); x != "" {
			api.Set(k, x)
		}
	}
	now := v.h.cfg.Now()
	bad := func(msg string) {
		data.Error = msg
		v.render(http.StatusBadRequest, "executions", "Executions", data)
	}
	if d, ok := withinOf(data.Within); ok {
		api.Set("since", now.Add(-d).UTC().Format(time.RFC3339Nano))
	} else if data.Within != "" {
		bad("created within " + strconv.Quote(data.Within) + ": choose 1h, 24h, 7d or 30d")
		return
	}
	for _, f := range []struct{ key, val string }{{"since", data.Since}, {"until", data.Until}} {
		if f.val == "" {
			continue
		}
		t, ok := parseWhen(f.val, data.TZ)
		if !ok {
			bad(f.key + " " + strconv.Quote(f.val) + " is not a date and time (2026-11-28T10:00)")
			return
		}
		if f.key == "since" && api.Get("since") != "" {
			if prev, _ := time.Parse(time.RFC3339Nano, api.Get("since")); prev.After(t) {
				continue // "within" is the later bound
			}
		}
		api.Set(f.key, t.UTC().Format(time.RFC3339Nano))
	}
	for _, k := range listFilters {
		if k != "tz" && q.Get(k) != "" {
			data.Filtered = true
		}
	}
	var body struct {
		Executions []store.ExecutionSummary `json:"executions"`
		Counts     map[types.Status]int     `json:"counts"`
	}
	if err := v.call(http.MethodGet, "/executions?"+api.Encode(), nil, &body); err != nil {
		if e, ok := err.(*Error); ok && e.Code == http.StatusBadRequest {
			bad(e.Message)
			return
		}
		v.fail(err)
		return
	}
	link := func(set map[string]string) string {
		lq := url.Values{}
		for _, k := range listFilters {
			if x := q.Get(k); x != "" {
				lq.Set(k, x)
			}
		}
		for k, x := range set {
			if x == "" {
				lq.Del(k)
			} else {
				lq.Set(k, x)
			}
		}
		if len(lq) == 0 {
			return v.base + "/"
		}
		return v.base + "/?" + lq.Encode()
	}
	for _, s := range listStatuses {
		n := body.Counts[types.Status(s)]
		data.Total += n
		data.Counts = append(data.Counts, statusCount{Status: s, N: n, URL: link(map[string]string{"status": s}), Current: s == data.Status})
	}
	for _, e := range body.Executions {
		row := listRow{ExecutionSummary: e, Ended: ended(e.Status)}
		end := now
		if row.Ended {
			end = e.UpdatedAt
		}
		if !e.CreatedAt.IsZero() && end.After(e.CreatedAt) {
			row.Duration = end.Sub(e.CreatedAt)
		}
		if !row.Ended {
			data.Live = true
		}
		data.Rows = append(data.Rows, row)
	}
	if len(body.Executions) == PageSize {
		last := body.Executions[len(body.Executions)-1]
		data.Next = link(map[string]string{"before": last.CreatedAt.UTC().Format(time.RFC3339Nano) + "," + last.ExecutionID})
	}
	if q.Get("before") != "" {
		data.First = link(map[string]string{"before": ""})
	}
	v.render(http.StatusOK, "executions", "Executions", data)
}

// search goes to the execution whose id the search form names (GET
// /console/search?id=...): its page says when there is none.
func (v *visit) search() {
	id := strings.TrimSpace(v.r.URL.Query().Get("id"))
	if id == "" {
		http.Redirect(v.w, v.r, v.base+"/", http.StatusSeeOther)
		return
	}
	http.Redirect(v.w, v.r, v.base+"/executions/"+url.PathEscape(id), http.StatusSeeOther)
}

// ended reports whether an execution status is final.
func ended(s types.Status) bool {
	return s == types.StatusOK || s == types.StatusFailed || s == types.StatusCanceled
}

// LogSettle bounds how long after an execution ended its pages keep
// following an event log that is still incomplete (see inspect.LogComplete): the
// batches of one execution are projected in whatever order their
// deliveries land, and a delivery held back by Pub/Sub's retry backoff
// lands seconds after the end. Past it the page stops refreshing and
// shows the log as it is.
const LogSettle = 5 * time.Minute

// followLog reports whether a page of an ended execution keeps following
// its event log: until the log is complete (inspect.LogComplete), for at
// most LogSettle after the end.
func followLog(evs []types.Event, st *inspect.Status, now time.Time) bool {
	if inspect.LogComplete(st, evs) {
		return false
	}
	return st == nil || st.FinishedAt.IsZero() || now.Sub(st.FinishedAt) < LogSettle
}
