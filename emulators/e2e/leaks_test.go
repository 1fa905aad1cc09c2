package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/firestore"
	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/tasks/cloudtasks"
)

// scanner looks for known secret values, in their plain, URL-escaped and
// base64 spellings, and reports where each was found.
type scanner struct {
	mu      sync.Mutex
	needles map[string]string // spelling → secret's label
	hits    map[string][]string
	scanned map[string]int // place kind → items scanned
}

func newScanner(secrets map[string]string) *scanner {
	s := &scanner{needles: map[string]string{}, hits: map[string][]string{}, scanned: map[string]int{}}
	for label, v := range secrets {
		s.needles[v] = label
		s.needles[url.QueryEscape(v)] = label
		s.needles[strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(v)), "=")] = label
		s.needles[strings.TrimRight(base64.URLEncoding.EncodeToString([]byte(v)), "=")] = label
	}
	return s
}

// scan records every secret found in data, at place (kind: what sort of
// place, for the counts).
func (s *scanner) scan(kind, place string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scanned[kind]++
	for n, label := range s.needles {
		if i := bytes.Index(data, []byte(n)); i >= 0 {
			lo, hi := max(0, i-80), min(len(data), i+len(n)+80)
			s.hits[label] = append(s.hits[label], fmt.Sprintf("%s %s: …%s…", kind, place, data[lo:hi]))
		}
	}
}

// Secret-leak scan (README "Security"): known secret values are seeded into
// credentials (POST /credentials: a postgres password, an http header
// value) and the workload (a secret-named field); a playbook prints them
// (stdout and stderr), returns them in results (one over the inline
// budget: offloaded to GCS), copies them into ctx, arc args and loop
// items, retries a task whose error carries them (delayed retries wait in
// the timers queue) and fails with them in the error; units carrying them
// are posted to execute forged and as signed poison, and dead-lettered.
// Then every log line, event, Firestore document of the execution (with
// its subcollections) and every execution and DLQ document, Cloud Task
// body seen while it ran, GCS object of the results bucket, span file and
// API response is scanned: zero hits.
func TestNoSecretLeaks(t *testing.T) {
	RequireStack(t)
	base := os.Getenv("NOETL_FUNCTIONS_URL")
	sfx := randSuffix()
	secrets := map[string]string{
		"credential password":     "CredPw9" + sfx,
		"credential header value": "HdrVal7" + sfx,
		"workload api_token":      "WlTok5" + sfx,
	}
	sc := newScanner(secrets)
	api := func(method, path string, body any) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			rd = strings.NewReader(MustJSON(body))
		}
		req, _ := http.NewRequest(method, base+"/api"+path, rd)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		sc.scan("api", method+" "+path, b)
		return resp.StatusCode, b
	}
	pgCred, hdrCred := "leak_pg_"+sfx, "leak_hdr_"+sfx
	if code, b := api("POST", "/credentials", map[string]any{"name": pgCred, "kind": "postgres", "grants": []string{"inline:token"}, "data": map[string]any{
		"host": "127.0.0.1", "port": 5432, "user": "leakuser", "password": secrets["credential password"], "database": "noetl"}}); code != 201 {
		t.Fatalf("POST /credentials: %d %s", code, b)
	}
	if code, b := api("POST", "/credentials", map[string]any{"name": hdrCred, "kind": "http_header", "grants": []string{"inline:token"}, "data": map[string]any{
		"header": "X-Leak-Key", "value": secrets["credential header value"]}}); code != 201 {
		t.Fatalf("POST /credentials: %d %s", code, b)
	}
	defer api("DELETE", "/credentials/"+pgCred, nil)
	defer api("DELETE", "/credentials/"+hdrCred, nil)

	// Watch the queues while the executions run: every task body and
	// header seen is scanned.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	project, location := os.Getenv("GOOGLE_CLOUD_PROJECT"), os.Getenv("NOETL_LOCATION")
	queue := func(id string) string { return "projects/" + project + "/locations/" + location + "/queues/" + id }
	td, err := cloudtasks.Open(ctx, queue("work"), queue("timers"), base+"/execute")
	if err != nil {
		t.Fatal(err)
	}
	defer td.Close()
	seen := map[string]bool{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			for _, q := range []string{td.WorkQueue, td.TimersQueue} {
				it := td.Client().ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: q, ResponseView: cloudtaskspb.Task_FULL, PageSize: 1000})
				for {
					tk, err := it.Next()
					if err != nil {
						break
					}
					hr := tk.GetHttpRequest()
					if seen[tk.Name] || hr == nil {
						continue
					}
					seen[tk.Name] = true
					hb, _ := json.Marshal(hr.Headers)
					sc.scan("task", tk.Name, append(append([]byte{}, hr.Body...), hb...))
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	pb := filepath.Join(t.TempDir(), "leaky.yaml")
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: leak_scan}
workload: {pg: "` + pgCred + `", hdr: "` + hdrCred + `"}
keychain:
  - {name: db, kind: postgres, credential: "{{ workload.pg }}"}
  - {name: api, kind: http_header, credential: "{{ workload.hdr }}"}
workflow:
  - step: start
    tool:
      - first:
          kind: python
          args: {pw: "{{ keychain.db.password }}", hv: "{{ keychain.api.value }}", wl: "{{ workload.api_token }}"}
          code: |
            result = {"echo": [pw, hv, wl]}
      - show:
          kind: python
          args: {pw: "{{ keychain.db.password }}", hv: "{{ keychain.api.value }}", wl: "{{ workload.api_token }}", prev: "{{ _prev.echo }}"}
          code: |
            import sys
            print("password", pw, "header", hv, "token", wl, "prev", prev)
            print("on stderr", pw, hv, wl, file=sys.stderr)
            result = {"echo": prev, "big": [pw + "/" + hv + "/" + wl + "/" + str(i) for i in range(9000)]}
    set:
      ctx.copied: "{{ keychain.db.password }}"
      ctx.token: "{{ workload.api_token }}"
    next:
      arcs:
        - step: fan
          args: {pw: "{{ keychain.db.password }}", wl: "{{ workload.api_token }}", hv: "{{ keychain.api.value }}"}
  - step: fan
    loop:
      in: "{{ [keychain.db.password, keychain.api.value, workload.api_token] }}"
      iterator: item
    tool:
      kind: python
      args: {it: "{{ item }}", pw: "{{ keychain.db.password }}", a: "{{ input }}"}
      code: |
        print("item", it, pw, a)
        result = {"item": it, "pw": pw, "args": a}
    next:
      arcs:
        - step: flaky
  - step: flaky
    tool:
      - setup:
          kind: python
          args: {pw: "{{ keychain.db.password }}"}
          code: |
            result = {"carried": pw}
      - boom:
          kind: python
          args: {pw: "{{ keychain.db.password }}", wl: "{{ workload.api_token }}", hv: "{{ keychain.api.value }}"}
          code: |
            raise RuntimeError("failed with " + pw + " and " + wl + " and " + hv)
          spec:
            policy:
              rules:
                - when: "{{ outcome.status == 'error' and _attempt < 3 }}"
                  then: {do: retry, attempts: 3, backoff: fixed, delay: 1.5}
                - else:
                    then: {do: fail}
`
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, MustJSON(map[string]any{"api_token": secrets["workload api_token"]}))
	sc.scan("cli", "scripts/run stdout+stderr", []byte(r.Stdout+r.Stderr))
	if r.Status != "failed" || r.ExecutionID == "" {
		t.Fatalf("the leaky playbook must fail at flaky: status %q code %d\n%s\n%s", r.Status, r.Code, r.Stdout, r.Stderr)
	}
	id := r.ExecutionID
	evs := Events(t, id)
	if Count(evs, "task.attempt.failed", "flaky") < 3 || Count(evs, "loop.iteration.done", "fan") != 3 || Count(evs, "result.stored", "start") != 1 {
		t.Fatalf("the playbook did not exercise retries, the loop and the results tier: attempts failed %d, iterations %d, stored %d",
			Count(evs, "task.attempt.failed", "flaky"), Count(evs, "loop.iteration.done", "fan"), Count(evs, "result.stored", "start"))
	}
	// The same execution's units, posted to execute by someone else
	// (unsigned) and as signed poison (a body reference to nothing),
	// carrying the secrets: both are refused and dead-lettered.
	leakyArgs := map[string]any{"pw": secrets["credential password"], "hv": secrets["credential header value"], "wl": secrets["workload api_token"]}
	forged := []byte(MustJSON(map[string]any{"id": "forged", "kind": "run_step", "execution_id": id, "step": "flaky", "step_run": 1, "task_index": 1, "attempt": 1, "args": leakyArgs}))
	if code, b := PostUnit(t, forged, ""); code != http.StatusOK {
		t.Fatalf("forged unit: %d %s", code, b)
	}
	poison := []byte(MustJSON(map[string]any{"id": "poison", "kind": "run_step", "execution_id": id, "step": "flaky", "step_run": 1, "attempt": 1, "args": leakyArgs,
		"body_ref": map[string]any{"key": "bodies/none.json", "sha256": "00", "bytes": 1}}))
	if code, b := PostUnit(t, poison, Signer(t).Sign(sign.Command, poison)); code != http.StatusOK {
		t.Fatalf("poison unit: %d %s", code, b)
	}
	time.Sleep(2 * time.Second)
	cancel()
	wg.Wait()

	// API responses.
	api("GET", "/executions/"+id, nil)
	api("GET", "/executions/"+id+"/events", nil)
	api("GET", "/executions/"+id+"/cost", nil)
	api("GET", "/credentials", nil)
	api("GET", "/credentials/"+pgCred, nil)
	api("GET", "/credentials/"+hdrCred, nil)
	sc.scan("events", id, []byte(MustJSON(evs)))

	// Console pages: the list, the execution (as drawn, with every event
	// read, its events page and cost), the DLQ and this execution's
	// entries (the forged and poison units).
	for _, p := range []string{"/", "/executions/" + id, "/executions/" + id + "?detail=all", "/executions/" + id + "/events",
		"/executions/" + id + "/events?type=task.attempt.failed", "/executions/" + id + "/cost", "/dlq",
		// The step inspector: rendered inputs and whole logs.
		"/executions/" + id + "/steps/start", "/executions/" + id + "/steps/fan", "/executions/" + id + "/steps/flaky"} {
		code, body, _ := consolePage(t, p)
		if code != http.StatusOK {
			t.Errorf("console %s: %d", p, code)
		}
		sc.scan("console", p, body)
	}

	// Firestore: the execution's document with every subcollection
	// (batches, outbox, loops, iterations, units, attempts, ...), every
	// other execution document, and every DLQ entry. (The other
	// executions' subcollections are left out: the secrets are this run's
	// own, and a shared stack holds tens of thousands of such documents.)
	fctx := context.Background()
	fs, err := firestore.NewClient(fctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	dlqFound := 0
	var dlqIDs []string
	scanDocs := func(it *firestore.DocumentIterator, col string) {
		for {
			snap, err := it.Next()
			if err == iterator.Done {
				break
			}
			if err != nil {
				t.Fatalf("list %s: %v", col, err)
			}
			b, _ := json.Marshal(snap.Data())
			sc.scan("firestore", snap.Ref.Path, b)
			if col == "dlq" && strings.Contains(string(b), id) {
				dlqFound++
				dlqIDs = append(dlqIDs, snap.Ref.ID)
			}
		}
	}
	var walk func(ref *firestore.DocumentRef)
	walk = func(ref *firestore.DocumentRef) {
		subs := ref.Collections(fctx)
		for {
			sub, err := subs.Next()
			if err != nil {
				break
			}
			scanDocs(sub.Documents(fctx), sub.ID)
			refs := sub.DocumentRefs(fctx)
			for {
				r, err := refs.Next()
				if err != nil {
					break
				}
				walk(r)
			}
		}
	}
	scanDocs(fs.Collection("executions").Documents(fctx), "executions")
	walk(fs.Collection("executions").Doc(id))
	scanDocs(fs.Collection("dlq").Documents(fctx), "dlq")
	// Every DLQ entry naming the execution, on its console page.
	for _, dlqID := range dlqIDs {
		code, body, _ := consolePage(t, "/dlq/"+url.PathEscape(dlqID))
		if code != http.StatusOK {
			t.Errorf("console DLQ entry %s: %d", dlqID, code)
		}
		sc.scan("console", "/dlq/"+dlqID, body)
	}
	if dlqFound < 2 {
		t.Errorf("the forged and poison units were not dead-lettered (%d dlq entries name the execution)", dlqFound)
	}

	// GCS: every object of the results bucket (Feather tables decoded).
	gcs, err := storage.NewClient(fctx)
	if err != nil {
		t.Fatal(err)
	}
	defer gcs.Close()
	bucket := gcs.Bucket(os.Getenv("NOETL_RESULTS_BUCKET"))
	objs := bucket.Objects(fctx, nil)
	ours := 0
	for {
		a, err := objs.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rd, err := bucket.Object(a.Name).NewReader(fctx)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rd)
		rd.Close()
		if strings.Contains(a.Name, id) {
			ours++
		}
		sc.scan("gcs", a.Name, data)
		if strings.HasSuffix(a.Name, ".feather") || strings.HasSuffix(a.Name, ".arrow") {
			if rows, err := results.DecodeFeather(data); err == nil {
				b, _ := json.Marshal(rows)
				sc.scan("gcs", a.Name+" (decoded)", b)
			}
		}
		meta, _ := json.Marshal(a.Metadata)
		sc.scan("gcs", a.Name+" (metadata)", meta)
	}
	if ours == 0 {
		t.Error("no results-tier object of the execution was scanned (the big result must be offloaded)")
	}

	// Every log line of the stack.
	logs, _ := filepath.Glob(filepath.Join(os.Getenv("NOETL_STACK_DIR"), "logs", "*.log"))
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc.scan("log", filepath.Base(f), b)
	}

	// Span files, when the stack exports spans to files (NOETL_TRACE_DIR,
	// default <stack>/traces).
	traceDir := os.Getenv("NOETL_TRACE_DIR")
	if traceDir == "" {
		traceDir = filepath.Join(os.Getenv("NOETL_STACK_DIR"), "traces")
	}
	_ = filepath.WalkDir(traceDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				sc.scan("trace", p, b)
			}
		}
		return nil
	})

	t.Logf("scanned: %v", sc.scanned)
	if sc.scanned["task"] == 0 || sc.scanned["firestore"] == 0 || len(logs) == 0 || sc.scanned["console"] < 7+dlqFound {
		t.Fatalf("the scan saw no task bodies, documents, logs or console pages: %v", sc.scanned)
	}
	for label, where := range sc.hits {
		for i, w := range where {
			if i == 10 {
				t.Errorf("%s: ... %d more", label, len(where)-10)
				break
			}
			t.Errorf("%s leaked in %s", label, w)
		}
	}
}
