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

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/types"
)

// failingLister is a store whose list fails (the 503 path).
type failingLister struct{}

func (failingLister) ExecutionList(context.Context, store.ExecutionListParams) ([]store.ExecutionSummary, error) {
	return nil, errors.New("firestore: unavailable")
}

func (failingLister) ExecutionCount(context.Context, store.ExecutionListParams) (map[types.Status]int, error) {
	return nil, errors.New("firestore: unavailable")
}

func TestListExecutions(t *testing.T) {
	m := memstore.NewMemory()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, e := range []struct {
		id, playbook string
		status       types.Status
		creator      string
	}{
		{"e1", "alpha", engine.ExecOK, "alice@example.com"},
		{"e2", "alpha", engine.ExecFailed, "bob@example.com"},
		{"e3", "beta", engine.ExecRunning, "alice@example.com"},
		{"e4", "alpha", engine.ExecRunning, ""},
	} {
		st := &engine.State{ExecutionID: e.id, Playbook: e.playbook, Status: e.status, Creator: e.creator,
			CreatedAt: t0.Add(time.Duration(i) * time.Minute)}
		if err := m.ExecutionCreate(ctx, &store.Execution{State: st, Source: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	operator := auth.Principal{Name: "ops@example.com", Role: auth.Operator}
	alice := auth.Principal{Name: "alice@example.com", Role: auth.Runner}
	viewer := auth.Principal{Name: "carol@example.com", Role: auth.Viewer}
	for _, c := range []struct {
		query   string
		code    int
		ids     []string
		errPart string
		as      *auth.Principal
	}{
		{"", 200, []string{"e4", "e3", "e2", "e1"}, "", nil},
		// Below the operator role a caller lists its own executions
		// only, whatever ?creator= says (README "Security").
		{"", 200, []string{"e3", "e1"}, "", &alice},
		{"?creator=bob@example.com", 200, []string{"e3", "e1"}, "", &alice},
		{"?status=ok", 200, []string{"e1"}, "", &alice},
		{"", 200, []string{}, "", &viewer},
		{"?creator=bob@example.com", 200, []string{"e2"}, "", &operator},
		{"?status=running", 200, []string{"e4", "e3"}, "", nil},
		{"?playbook=alpha", 200, []string{"e4", "e2", "e1"}, "", nil},
		{"?playbook=alpha&status=running", 200, []string{"e4"}, "", nil},
		{"?limit=2", 200, []string{"e4", "e3"}, "", nil},
		{"?playbook=nope", 200, []string{}, "", nil},
		{"?status=bogus", 400, nil, `status "bogus" is not an execution status`, nil},
		{"?limit=0", 400, nil, "limit \"0\" is not an integer in 1..1000", nil},
		{"?limit=x", 400, nil, "limit \"x\" is not an integer", nil},
		{"?limit=1001", 400, nil, "1..1000", nil},
		// Pages: after the cursor of e3 (ListCursor of its summary).
		{"?before=" + url.QueryEscape(ListCursor(store.ExecutionSummary{ExecutionID: "e3", CreatedAt: t0.Add(2 * time.Minute)})), 200, []string{"e2", "e1"}, "", nil},
		{"?status=running&before=" + url.QueryEscape(ListCursor(store.ExecutionSummary{ExecutionID: "e4", CreatedAt: t0.Add(3 * time.Minute)})), 200, []string{"e3"}, "", nil},
		// Creation time: since inclusive, until exclusive.
		{"?since=" + url.QueryEscape(t0.Add(time.Minute).Format(time.RFC3339)) + "&until=" + url.QueryEscape(t0.Add(3*time.Minute).Format(time.RFC3339)), 200, []string{"e3", "e2"}, "", nil},
		{"?since=yesterday", 400, nil, `since "yesterday" is not an RFC 3339 time`, nil},
		{"?before=yesterday,e3", 400, nil, "is not a cursor", nil},
		{"?before=" + url.QueryEscape(t0.Format(time.RFC3339Nano)), 400, nil, "is not a cursor", nil},
	} {
		as := operator
		if c.as != nil {
			as = *c.as
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/executions"+c.query, nil)
		listExecutions(rec, req.WithContext(auth.WithPrincipal(req.Context(), as)), m)
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
			t.Errorf("%s as %s: ids %v, want %v", c.query, as.Name, ids, c.ids)
		}
	}
	// counts=true counts every status under the other filters (and the
	// caller's scope).
	for _, c := range []struct {
		query string
		as    auth.Principal
		want  string
	}{
		{"?counts=true&status=running", operator, `{"failed":1,"ok":1,"running":2}`},
		{"?counts=true&playbook=alpha", operator, `{"failed":1,"ok":1,"running":1}`},
		{"?counts=true", alice, `{"ok":1,"running":1}`},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/executions"+c.query, nil)
		listExecutions(rec, req.WithContext(auth.WithPrincipal(req.Context(), c.as)), m)
		var body struct {
			Counts json.RawMessage `json:"counts"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || string(body.Counts) != c.want {
			t.Errorf("%s as %s: counts %s (%v), want %s", c.query, c.as.Name, body.Counts, err, c.want)
		}
	}
	rec := httptest.NewRecorder()
	listExecutions(rec, httptest.NewRequest(http.MethodGet, "/executions", nil), failingLister{})
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "firestore: unavailable") {
		t.Errorf("store failure: %d %s, want 503 with the error", rec.Code, rec.Body)
	}
}
