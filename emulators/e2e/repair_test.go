package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
	"github.com/noetl/gcpengine/shared/types"
)

// Repair and lifetime on the stack (README "Repair"): `noetl rebuild`
// rebuilds an execution's event read model from the events topic's
// replay subscription, and `noetl gc` deletes results by the lifetime of
// their execution.

// firestoreClient connects to the stack's Firestore emulator.
func firestoreClient(t *testing.T) *firestore.Client {
	t.Helper()
	fs, err := firestore.NewClient(context.Background(), os.Getenv("GOOGLE_CLOUD_PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

// batchIDs lists the batch documents of an execution's read model.
func batchIDs(t *testing.T, fs *firestore.Client, id string) []string {
	t.Helper()
	refs, err := fs.Collection("executions").Doc(id).Collection("batches").DocumentRefs(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// deleteBatches deletes the named batch documents of an execution.
func deleteBatches(t *testing.T, fs *firestore.Client, id string, ids []string) {
	t.Helper()
	for _, b := range ids {
		if _, err := fs.Collection("executions").Doc(id).Collection("batches").Doc(b).Delete(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// rebuildCLI runs `noetl rebuild ID -o json` and decodes its report.
func rebuildCLI(t *testing.T, id string) (int, map[string]any) {
	t.Helper()
	r := noetlCLI(t, "rebuild", id, "-o", "json")
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil && r.code != 3 {
		t.Fatalf("rebuild %s: exit %d, %v: %s %s", id, r.code, err, r.stdout, r.stderr)
	}
	return r.code, m
}

// A finished execution's event list is rebuilt identical after its read
// model is deleted; a second rebuild writes nothing; a partly deleted read
// model gets back exactly what was deleted; an execution id the topic
// holds nothing of is reported with its gaps (exit 1), an id that is no
// execution id is exit 3.
func TestRebuildEventLog(t *testing.T) {
	RequireStack(t)
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: rebuild_e2e}
workflow:
  - step: start
    tool: {kind: noop, result: {n: 3}}
    next: {arcs: [{step: fan}]}
  - step: fan
    loop: {in: "{{ [1, 2, 3] }}", iterator: x}
    tool: {kind: noop, result: {x: "{{ x }}"}}
    next: {arcs: [{step: end}]}
  - step: end
    tool: {kind: noop, result: {done: true}}
`
	id := startInline(t, src, nil)
	if st := waitStatus(t, id, 60*time.Second); st["status"] != "ok" {
		t.Fatalf("execution %s: %v %v", id, st["status"], st["failures"])
	}
	before := Events(t, id)
	if len(before) < 10 {
		t.Fatalf("only %d events", len(before))
	}
	fs := firestoreClient(t)
	all := batchIDs(t, fs, id)
	deleteBatches(t, fs, id, all)
	if n := len(fetchEvents(t, id)); n != 0 {
		t.Fatalf("%d events after deleting the read model", n)
	}

	// (Batches that hold only operation counts may still be projected
	// after the deletion — a late one, or under delivery chaos a delayed
	// duplicate of a deleted one: they are "present", and carry no
	// event. Every event is written back.)
	code, rep := rebuildCLI(t, id)
	if code != 0 || rep["complete"] != true || int(asInt(rep["written"]))+int(asInt(rep["present"])) < len(all) || int(asInt(rep["written_events"])) != len(before) ||
		int(asInt(rep["written"]))+int(asInt(rep["present"])) != int(asInt(rep["batches"])) || int(asInt(rep["events"])) != len(before) {
		t.Fatalf("rebuild: exit %d, report %v; want complete, the %d deleted batches written or present again, all %d events written", code, rep, len(all), len(before))
	}
	if after := fetchEvents(t, id); !reflect.DeepEqual(after, before) {
		t.Fatalf("rebuilt event list differs:\nbefore %s\nafter  %s", MustJSON(before), MustJSON(after))
	}

	// Idempotent: nothing to write, the same list.
	// (Operation counts of the api's own reads may be in flight: batches
	// without events.)
	all = batchIDs(t, fs, id)
	code, rep = rebuildCLI(t, id)
	if code != 0 || int(asInt(rep["written_events"])) != 0 || int(asInt(rep["present"])) < len(all) || int(asInt(rep["events"])) != len(before) {
		t.Fatalf("second rebuild: exit %d, %v; want no event written, %d batches present", code, rep, len(all))
	}
	// Half of the read model gone: exactly that half comes back.
	half := all[:len(all)/2]
	deleteBatches(t, fs, id, half)
	code, rep = rebuildCLI(t, id)
	if code != 0 || int(asInt(rep["written"])) < len(half) || int(asInt(rep["written_events"])) != len(before)-int(asInt(rep["events_before"])) || int(asInt(rep["events_before"])) >= len(before) {
		t.Fatalf("partial rebuild: exit %d, %v; want %d written, %d present", code, rep, len(half), len(all)-len(half))
	}
	if after := fetchEvents(t, id); !reflect.DeepEqual(after, before) {
		t.Fatal("event list after the partial rebuild differs")
	}

	// An execution id of a minute ago that nothing published: the gaps.
	ghost := fmt.Sprint(((time.Now().Add(-time.Minute).UnixMilli() - types.IDEpoch) << 22) | 12345)
	code, rep = rebuildCLI(t, ghost)
	if code != 1 || rep["complete"] != false || !strings.Contains(MustJSON(rep["missing"]), "playbook.execution.requested") || int(asInt(rep["written"])) != 0 {
		t.Fatalf("rebuild of an id without events: exit %d, %v; want exit 1 naming the missing start", code, rep)
	}
	if r := noetlCLI(t, "rebuild", "not-an-id"); r.code != 3 {
		t.Fatalf("rebuild not-an-id: exit %d %s %s; want 3", r.code, r.stdout, r.stderr)
	}
}

// resultObjects lists the results bucket's objects of an execution.
func resultObjects(t *testing.T, id string) []string {
	t.Helper()
	ctx := context.Background()
	c, err := storage.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []string
	it := c.Bucket(os.Getenv("NOETL_RESULTS_BUCKET")).Objects(ctx, &storage.Query{Prefix: "noetl/"})
	for {
		o, err := it.Next()
		if err == iterator.Done {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if x, ok := results.KeyExecution(o.Name); ok && x == id {
			out = append(out, o.Name)
		}
	}
}

// ageRecord makes an ended execution's record look as if it ended days
// ago (its state's finished_at; the rest of the document as it was): the
// stack cannot wait out NOETL_RETENTION_DAYS.
func ageRecord(t *testing.T, fs *firestore.Client, id string, days int) {
	t.Helper()
	ctx := context.Background()
	ref := fs.Collection("executions").Doc(id)
	snap, err := ref.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := snap.Data()["state"].(string)
	var st map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		t.Fatalf("state of %s: %v", id, err)
	}
	if _, ok := st["finished_at"]; !ok {
		t.Fatalf("execution %s has no finished_at: %s", id, s)
	}
	st["finished_at"], _ = json.Marshal(time.Now().UTC().AddDate(0, 0, -days).Format(time.RFC3339Nano))
	b, _ := json.Marshal(st)
	if _, err := ref.Update(ctx, []firestore.Update{{Path: "state", Value: string(b)}}); err != nil {
		t.Fatal(err)
	}
}

// verdict asks `noetl gc --dry-run --execution ID` for an execution's
// verdict.
func verdict(t *testing.T, id string) string {
	t.Helper()
	r := noetlCLI(t, "gc", "--dry-run", "--execution", id, "-o", "json")
	var m map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil {
		t.Fatalf("gc --dry-run --execution %s: exit %d %s %s", id, r.code, r.stdout, r.stderr)
	}
	return fmt.Sprint(m["verdict"])
}

// GC by lifetime: after `noetl gc`, the results of an execution that
// ended more than NOETL_RETENTION_DAYS ago and of one whose record is gone
// are deleted (every object under its prefix); those of an execution that
// ended within its retention, of a running one, and of one a pending DLQ
// entry names (even when it ended long ago) are kept. `gc --execution
// --force` deletes an ended execution's results early but never a
// running one's.
func TestGCByLifetime(t *testing.T) {
	RequireStack(t)
	fs := firestoreClient(t)
	big := func(name, rest string) string {
		return `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: ` + name + `}
workflow:
  - step: big
    tool: {kind: python, code: "result = {'blob': 'x' * 70000}"}
` + rest
	}
	expired := startInline(t, big("gc_expired", ""), nil)
	orphan := startInline(t, big("gc_orphan", ""), nil)
	kept := startInline(t, big("gc_kept", ""), nil)
	live := startInline(t, big("gc_live", `    next: {arcs: [{step: wait}]}
  - step: wait
    tool: {kind: python, timeout: 300, code: "import time\ntime.sleep(90)\nresult = 1"}
`), nil)
	held := startInline(t, big("gc_dlq", ""), nil)
	for _, id := range []string{expired, orphan, kept, held} {
		if st := waitStatus(t, id, 90*time.Second); st["status"] != "ok" {
			t.Fatalf("execution %s: %v %v", id, st["status"], st["failures"])
		}
	}
	// The DLQ-held execution ended, but a pending DLQ entry names it (one
	// of its event batches that materialize dead-lettered, filed as
	// materialize files it): the entry alone keeps its results once the
	// execution looks long ended.
	st, err := firestorestore.OpenFirestore(context.Background(), os.Getenv("GOOGLE_CLOUD_PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	entry := "gc-e2e-" + held
	if err := st.DLQPut(context.Background(), store.DLQEntry{MessageID: entry, ExecutionID: held, Kind: store.DLQMessage, Source: "materialize",
		Topic: "events", Attempts: 10, LastError: "dead-lettered for TestGCByLifetime", Payload: "{}"}); err != nil {
		t.Fatal(err)
	}
	defer apiDo(t, http.MethodPost, "/dlq/"+entry+"/discard", map[string]any{"reason": "TestGCByLifetime"})
	deadline := time.Now().Add(60 * time.Second)
	for len(resultObjects(t, live)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the running execution %s wrote no result object", live)
		}
		time.Sleep(500 * time.Millisecond)
	}
	objs := map[string][]string{}
	for _, id := range []string{expired, orphan, kept, live, held} {
		if objs[id] = resultObjects(t, id); len(objs[id]) == 0 {
			t.Fatalf("execution %s has no result object", id)
		}
	}
	ageRecord(t, fs, expired, 31)
	ageRecord(t, fs, held, 31)
	if _, err := fs.Collection("executions").Doc(orphan).Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{expired: "expired", orphan: "orphan", kept: "kept", live: "live", held: "dlq"} {
		if got := verdict(t, id); got != want {
			t.Errorf("verdict of %s = %s, want %s", id, got, want)
		}
	}

	// A forced delete never touches a running execution.
	r := noetlCLI(t, "gc", "--execution", live, "--force", "--apply", "-o", "json")
	var one map[string]any
	_ = json.Unmarshal([]byte(r.stdout), &one)
	if r.code != 0 || one["verdict"] != "live" || asInt(one["deleted"]) != 0 || len(resultObjects(t, live)) != len(objs[live]) {
		t.Fatalf("forced gc of a running execution: exit %d %s %s", r.code, r.stdout, r.stderr)
	}

	// Without --apply, gc is a dry run: it reports, and deletes nothing.
	r = noetlCLI(t, "gc", "-o", "json")
	var rep map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep["dry_run"] != true {
		t.Fatalf("gc (dry run): exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if deleted := MustJSON(rep["deleted_executions"]); !strings.Contains(deleted, expired) || !strings.Contains(deleted, orphan) {
		t.Errorf("gc's dry run names %s, want %s and %s", deleted, expired, orphan)
	}
	for _, id := range []string{expired, orphan} {
		if n := len(resultObjects(t, id)); n != len(objs[id]) {
			t.Errorf("execution %s: %d of %d result objects left after a dry run", id, n, len(objs[id]))
		}
	}
	r = noetlCLI(t, "gc", "--apply", "-o", "json")
	rep = nil
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep["dry_run"] != false {
		t.Fatalf("gc --apply: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	deleted := MustJSON(rep["deleted_executions"])
	for _, id := range []string{expired, orphan} {
		if n := len(resultObjects(t, id)); n != 0 || !strings.Contains(deleted, id) {
			t.Errorf("execution %s (%s): %d result objects left after gc (report %s)", id, verdict(t, id), n, deleted)
		}
	}
	for _, id := range []string{kept, live, held} {
		if got := resultObjects(t, id); len(got) != len(objs[id]) || strings.Contains(deleted, id) {
			t.Errorf("execution %s: %d of %d result objects left after gc", id, len(got), len(objs[id]))
		}
	}

	// --force deletes an ended execution's results within its retention.
	r = noetlCLI(t, "gc", "--execution", kept, "--force", "--apply", "-o", "json")
	if r.code != 0 || len(resultObjects(t, kept)) != 0 {
		t.Fatalf("forced gc of an ended execution: exit %d %s %s, %d objects left", r.code, r.stdout, r.stderr, len(resultObjects(t, kept)))
	}
	if code, m := apiDo(t, http.MethodPost, "/executions/"+live+"/cancel", nil); code != http.StatusOK && code != http.StatusAccepted {
		t.Errorf("cancel %s: %d %v", live, code, m)
	}
}
