package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
)

// dlqStatuses are the DLQ list's status filter choices.
var dlqStatuses = []store.DLQStatus{store.DLQPending, store.DLQReplayed, store.DLQDiscarded}

// DLQScan is how many of the newest DLQ entries are searched for an
// execution's own (GET /dlq lists at most 1,000 and has no execution
// filter).
const DLQScan = 1000

// dlqListPage is the DLQ list's data.
type dlqListPage struct {
	Status   string
	Statuses []store.DLQStatus
	Rows     []dlqRow
	Error    string
}

// dlqEntryPage is one DLQ entry's data.
type dlqEntryPage struct {
	Entry   dlqRow
	Payload string
	Context string
}

// dlqList serves GET /dlq (filtered by status).
func (v *visit) dlqList() {
	status := v.r.URL.Query().Get("status")
	data := &dlqListPage{Status: status, Statuses: dlqStatuses}
	q := url.Values{"limit": {"200"}}
	if status != "" {
		q.Set("status", status)
	}
	var body struct {
		Entries []store.DLQEntry `json:"entries"`
	}
	if err := v.call(http.MethodGet, "/dlq?"+q.Encode(), nil, &body); err != nil {
		if e, ok := err.(*Error); ok && e.Code == http.StatusBadRequest {
			data.Error = e.Message
			v.render(http.StatusBadRequest, "dlq", "Dead-letter queue", data)
			return
		}
		v.fail(err)
		return
	}
	for _, e := range body.Entries {
		data.Rows = append(data.Rows, dlqRow{DLQEntry: e, Pending: e.Status == store.DLQPending})
	}
	v.render(http.StatusOK, "dlq", "Dead-letter queue", data)
}

// dlqOf returns the DLQ entries of one execution among the newest
// DLQScan entries.
func (v *visit) dlqOf(id string) ([]dlqRow, error) {
	var body struct {
		Entries []store.DLQEntry `json:"entries"`
	}
	if err := v.call(http.MethodGet, "/dlq?limit="+itoa(DLQScan), nil, &body); err != nil {
		return nil, err
	}
	var out []dlqRow
	for _, e := range body.Entries {
		if e.ExecutionID == id {
			out = append(out, dlqRow{DLQEntry: e, Pending: e.Status == store.DLQPending})
		}
	}
	return out, nil
}

// dlqEntry serves one entry with its redacted payload (GET /dlq/{id}).
func (v *visit) dlqEntry(id string) {
	var e store.DLQEntry
	if err := v.call(http.MethodGet, "/dlq/"+url.PathEscape(id), nil, &e); err != nil {
		v.fail(err)
		return
	}
	v.render(http.StatusOK, "dlq-entry", "DLQ entry "+id, &dlqEntryPage{Entry: dlqRow{DLQEntry: e, Pending: e.Status == store.DLQPending},
		Payload: indentJSON(e.Payload), Context: indentJSON(e.ContextExcerpt)})
}

// dlqAction replays or discards an entry (POST /dlq/{id}/replay|discard)
// and goes back to where the form was (the entry, or an execution).
func (v *visit) dlqAction(id, action string) {
	if !v.checkCSRF() {
		return
	}
	body := map[string]any{}
	if p := strings.TrimSpace(v.r.PostFormValue("patch")); p != "" && action == "replay" {
		var patch map[string]any
		if err := jsonx.Unmarshal([]byte(p), &patch); err != nil || patch == nil {
			v.fail(&Error{http.StatusBadRequest, "the patch is not a JSON object: " + errText(err)})
			return
		}
		body["patch"] = patch
	}
	if action == "discard" {
		reason := strings.TrimSpace(v.r.PostFormValue("reason"))
		if reason == "" {
			v.fail(&Error{http.StatusBadRequest, "discarding an entry needs a reason"})
			return
		}
		body["reason"] = reason
	}
	if err := v.call(http.MethodPost, "/dlq/"+url.PathEscape(id)+"/"+action, body, nil); err != nil {
		v.fail(err)
		return
	}
	v.h.cfg.Log.InfoContext(v.r.Context(), "console dlq "+action, "dlq_id", id, "principal", v.principal.Name)
	back := v.base + "/dlq/" + url.PathEscape(id)
	if ex := v.r.PostFormValue("execution"); ex != "" {
		back = v.base + "/executions/" + url.PathEscape(ex) + "#dlq"
	}
	http.Redirect(v.w, v.r, back, http.StatusSeeOther)
}

// indentJSON indents JSON text (as it is when it does not parse).
func indentJSON(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") == nil {
		return buf.String()
	}
	return s
}
