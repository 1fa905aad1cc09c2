package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/noetl/gcpengine/shared/inspect"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// The actions on one execution: cancel (confirmed on its own page first)
// and rerun (POST /executions/{id}/rerun: from the start, from the failed
// step, or from a chosen step, with a workload fix).

// cancelPageData is the cancel confirmation's data.
type cancelPageData struct {
	ID     string
	Status *inspect.Status
	Ended  bool
	Error  string
}

// cancelPage asks to confirm a cancellation (GET): nothing is canceled
// until its form is posted.
func (v *visit) cancelPage(id string) {
	var st inspect.Status
	if err := v.call(http.MethodGet, "/executions/"+url.PathEscape(id), nil, &st); err != nil {
		v.fail(err)
		return
	}
	v.render(http.StatusOK, "cancel", "Cancel execution "+id, &cancelPageData{ID: id, Status: &st, Ended: ended(st.Status)})
}

// cancel cancels an execution (POST /executions/{id}/cancel) and goes
// back to its page.
func (v *visit) cancel(id string) {
	if !v.checkCSRF() {
		return
	}
	reason := strings.TrimSpace(v.r.PostFormValue("reason"))
	if reason == "" {
		reason = "canceled from the console by " + v.principal.Name
	}
	if err := v.call(http.MethodPost, "/executions/"+url.PathEscape(id)+"/cancel", map[string]any{"reason": reason}, nil); err != nil {
		v.fail(err)
		return
	}
	v.h.cfg.Log.InfoContext(v.r.Context(), "console cancel", "execution_id", id, "principal", v.principal.Name)
	http.Redirect(v.w, v.r, v.base+"/executions/"+url.PathEscape(id), http.StatusSeeOther)
}

// rerunPageData is the rerun form's data.
type rerunPageData struct {
	ID     string
	Status *inspect.Status
	Ended  bool
	// Steps are the steps that ran, in the order they first ran; Failed
	// names the execution's failed steps (from "failed" is offered when
	// one failed).
	Steps    []string
	Failed   bool
	From     string
	Workload string
	// Recorded is the execution's workload (redacted), for reference.
	Recorded string
	Error    string
}

// rerunData reads what the rerun form shows of execution id.
func (v *visit) rerunData(id string) (*rerunPageData, error) {
	var st inspect.Status
	if err := v.call(http.MethodGet, "/executions/"+url.PathEscape(id), nil, &st); err != nil {
		return nil, err
	}
	d := &rerunPageData{ID: id, Status: &st, Ended: ended(st.Status), Steps: ranSteps(&st), Recorded: indentValue(st.Workload, 8192)}
	for _, s := range st.Steps {
		if s.Status == types.StatusFailed {
			d.Failed = true
		}
	}
	return d, nil
}

// ranSteps are an execution's steps in the order they (last) started.
func ranSteps(st *inspect.Status) []string {
	names := make([]string, 0, len(st.Steps))
	for n := range st.Steps {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := st.Steps[names[i]].StartedAt, st.Steps[names[j]].StartedAt
		if !a.Equal(b) {
			return a.Before(b)
		}
		return names[i] < names[j]
	})
	return names
}

// rerunPage is the rerun form (GET).
func (v *visit) rerunPage(id string) {
	d, err := v.rerunData(id)
	if err != nil {
		v.fail(err)
		return
	}
	d.From = v.r.URL.Query().Get("from")
	v.render(http.StatusOK, "rerun", "Rerun "+id, d)
}

// rerun starts a rerun (POST /executions/{id}/rerun with the form's from
// and workload) and goes to the new execution; a refusal is shown on the
// form, with what was typed.
func (v *visit) rerun(id string) {
	if !v.checkCSRF() {
		return
	}
	from := strings.TrimSpace(v.r.PostFormValue("from"))
	wlText := strings.TrimSpace(v.r.PostFormValue("workload"))
	body := map[string]any{"from": from}
	refuse := func(code int, msg string) {
		d, err := v.rerunData(id)
		if err != nil {
			v.fail(err)
			return
		}
		d.From, d.Workload, d.Error = from, wlText, msg
		v.render(code, "rerun", "Rerun "+id, d)
	}
	if wlText != "" {
		var wl map[string]any
		if err := jsonx.Unmarshal([]byte(wlText), &wl); err != nil || wl == nil {
			refuse(http.StatusBadRequest, "The workload is not a JSON object: "+errText(err))
			return
		}
		body["workload"] = wl
	}
	var got struct {
		ExecutionID string `json:"execution_id"`
	}
	if err := v.call(http.MethodPost, "/executions/"+url.PathEscape(id)+"/rerun", body, &got); err != nil {
		if e, ok := err.(*Error); ok && (e.Code == http.StatusBadRequest || e.Code == http.StatusConflict || e.Code == http.StatusRequestEntityTooLarge) {
			refuse(e.Code, e.Message)
			return
		}
		v.fail(err)
		return
	}
	v.h.cfg.Log.InfoContext(v.r.Context(), "console rerun", "execution_id", got.ExecutionID, "rerun_of", id, "from", from, "principal", v.principal.Name)
	http.Redirect(v.w, v.r, v.base+"/executions/"+url.PathEscape(got.ExecutionID), http.StatusSeeOther)
}

func errText(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}

// indentValue is v as indented JSON, cut at max bytes (with a marker).
func indentValue(v any, max int) string {
	if v == nil {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return ""
	}
	s := strings.ToValidUTF8(string(b), "")
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "\n…(cut)"
	}
	return s
}
