package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// failingLister is a store whose list fails (the 503 path).
type failingLister struct{}

func (failingLister) ExecutionList(context.Context, store.ExecutionListParams) ([]store.ExecutionSummary, error) {
	return nil, errors.New("firestore: unavailable")
}

func TestListExecutions(t *testing.T) {
	m := store.NewMemory()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, e := range []struct {
		id, playbook string
		status       types.Status
	}{
		{"e1", "alpha", engine.ExecOK},
		{"e2", "alpha", engine.ExecFailed},
		{"e3", "beta", engine.ExecRunning},
		{"e4", "alpha", engine.ExecRunning},
	} {
		st := &engine.State{ExecutionID: e.id, Playbook: e.playbook, Status: e.status,
			CreatedAt: t0.Add(time.Duration(i) * time.Minute).Format(time.RFC3339Nano)}
		if err := m.ExecutionCreate(ctx, &store.Execution{State: st, Source: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		query   string
		code    int
		ids     []string
		errPart string
	}{
		{"", 200, []string{"e4", "e3", "e2", "e1"}, ""},
		{"?status=running", 200, []string{"e4", "e3"}, ""},
		{"?playbook=alpha", 200, []string{"e4", "e2", "e1"}, ""},
		{"?playbook=alpha&status=running", 200, []string{"e4"}, ""},
		{"?limit=2", 200, []string{"e4", "e3"}, ""},
		{"?playbook=nope", 200, []string{}, ""},
		{"?status=bogus", 400, nil, `status "bogus" is not an execution status`},
		{"?limit=0", 400, nil, "limit \"0\" is not an integer in 1..1000"},
		{"?limit=x", 400, nil, "limit \"x\" is not an integer"},
		{"?limit=1001", 400, nil, "1..1000"},
		// Pages: after the cursor of e3 (ListCursor of its summary).
		{"?before=" + url.QueryEscape(ListCursor(store.ExecutionSummary{ExecutionID: "e3", CreatedAt: t0.Add(2 * time.Minute)})), 200, []string{"e2", "e1"}, ""},
		{"?status=running&before=" + url.QueryEscape(ListCursor(store.ExecutionSummary{ExecutionID: "e4", CreatedAt: t0.Add(3 * time.Minute)})), 200, []string{"e3"}, ""},
		{"?before=yesterday,e3", 400, nil, "is not a cursor"},
		{"?before=" + url.QueryEscape(t0.Format(time.RFC3339Nano)), 400, nil, "is not a cursor"},
	} {
		rec := httptest.NewRecorder()
		listExecutions(rec, httptest.NewRequest(http.MethodGet, "/executions"+c.query, nil), m)
		if rec.Code != c.code {
			t.Errorf("%s: code %d, want %d: %s", c.query, rec.Code, c.code, rec.Body)
			continue
		}
		var body struct {
			Executions []store.ExecutionSummary `json:"executions"`
			Error      string                   `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v: %s", c.query, err, rec.Body)
		}
		if c.code != 200 {
			if !strings.Contains(body.Error, c.errPart) {
				t.Errorf("%s: error %q lacks %q", c.query, body.Error, c.errPart)
			}
			continue
		}
		if !strings.Contains(rec.Body.String(), `"executions":[`) {
			t.Errorf("%s: executions is not a JSON list: %s", c.query, rec.Body)
		}
		var ids []string
		for _, e := range body.Executions {
			ids = append(ids, e.ExecutionID)
			if e.Playbook == "" || e.Status == "" || e.CreatedAt.IsZero() {
				t.Errorf("%s: incomplete summary %+v", c.query, e)
			}
		}
		if strings.Join(ids, ",") != strings.Join(c.ids, ",") {
			t.Errorf("%s: ids %v, want %v", c.query, ids, c.ids)
		}
	}
	rec := httptest.NewRecorder()
	listExecutions(rec, httptest.NewRequest(http.MethodGet, "/executions", nil), failingLister{})
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "firestore: unavailable") {
		t.Errorf("store failure: %d %s, want 503 with the error", rec.Code, rec.Body)
	}
}
