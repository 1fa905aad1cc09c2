package console

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// PageSize is the number of executions on one page of the list.
const PageSize = 50

// listStatuses are the status filter's choices (GET /executions?status=).
var listStatuses = []string{"requested", "running", "ok", "failed", "canceled"}

// listPage is the executions list's data.
type listPage struct {
	Status, Playbook string
	Statuses         []string
	Rows             []listRow
	// Next is the URL of the next page ("" on the last one); First is set
	// on every page but the first.
	Next, First string
	// Live: some shown execution has not ended (the page refreshes).
	Live  bool
	Error string
}

// listRow is one execution of the list.
type listRow struct {
	store.ExecutionSummary
	// Duration runs from creation to the last update (the end, for an
	// ended execution) or to now.
	Duration time.Duration
	Ended    bool
}

// executions serves the list: GET /executions with the filters and the
// page cursor of the query, newest first.
func (v *visit) executions() {
	q := v.r.URL.Query()
	data := &listPage{Status: q.Get("status"), Playbook: q.Get("playbook"), Statuses: listStatuses}
	api := url.Values{"limit": {strconv.Itoa(PageSize)}}
	for _, k := range []string{"status", "playbook", "before"} {
		if x := q.Get(k); x != "" {
			api.Set(k, x)
		}
	}
	var body struct {
		Executions []store.ExecutionSummary `json:"executions"`
	}
	if err := v.call(http.MethodGet, "/executions?"+api.Encode(), nil, &body); err != nil {
		if e, ok := err.(*Error); ok && e.Code == http.StatusBadRequest {
			data.Error = e.Message
			v.render(http.StatusBadRequest, "executions", "Executions", data)
			return
		}
		v.fail(err)
		return
	}
	now := v.h.cfg.Now()
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
		nq := url.Values{}
		for _, k := range []string{"status", "playbook"} {
			if x := q.Get(k); x != "" {
				nq.Set(k, x)
			}
		}
		nq.Set("before", last.CreatedAt.UTC().Format(time.RFC3339Nano)+","+last.ExecutionID)
		data.Next = v.base + "/?" + nq.Encode()
	}
	if q.Get("before") != "" {
		fq := url.Values{}
		for _, k := range []string{"status", "playbook"} {
			if x := q.Get(k); x != "" {
				fq.Set(k, x)
			}
		}
		data.First = v.base + "/?" + fq.Encode()
	}
	v.render(http.StatusOK, "executions", "Executions", data)
}

// ended reports whether an execution status is final.
func ended(s types.Status) bool {
	return s == types.StatusOK || s == types.StatusFailed || s == types.StatusCanceled
}

// logEnded reports whether an execution's event log holds its
// playbook.finished event: the state is written before the batch that
// carries the last events lands, so a page that stopped following on the
// state alone could show an ended execution without its end in the log.
func logEnded(evs []types.Event) bool {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].EventType == types.EvPlaybookFinished {
			return true
		}
	}
	return false
}
