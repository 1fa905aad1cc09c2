package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/genproto/googleapis/type/latlng"
)

// MaxDocBytes is the bound no Firestore document may exceed while a loop
// of any size runs (README "Architecture": 256 KiB, a quarter of Firestore's 1 MiB).
const MaxDocBytes = 256 << 10

// loopItems is the size of TestLoopAtScale's loop: NOETL_E2E_LOOP_ITEMS,
// default 100,000 (scripts/test runs 2,000 under delivery chaos).
func loopItems(t *testing.T) int {
	if v := os.Getenv("NOETL_E2E_LOOP_ITEMS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("NOETL_E2E_LOOP_ITEMS=%q is not a positive count", v)
		}
		return n
	}
	return 100000
}

// TestLoopAtScale: a 100,000-item parallel noop loop (max_in_flight 200)
// completes, and no Firestore document of the execution exceeds 256 KiB —
// sampled while it runs (the execution document and the loop plans, which
// change during the loop) and every document of the execution scanned at
// the end (README "Architecture").
func TestLoopAtScale(t *testing.T) {
	RequireStack(t)
	n := loopItems(t)
	ctx := context.Background()
	fs, err := firestore.NewClient(ctx, os.Getenv("GOOGLE_CLOUD_PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	src := fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: scale_loop, path: tests/scale_loop}
workflow:
  - step: start
    loop:
      in: "{{ range(%d) | list }}"
      iterator: i
      spec: {mode: parallel, max_in_flight: 200}
    tool: {kind: noop, result: {i: "{{ i }}"}}
    next:
      arcs:
        - step: end
  - step: end
    tool: {kind: noop, result: {n: "{{ start.results | length }}"}}
`, n)
	id := startInline(t, src, nil)
	exec := fs.Collection("executions").Doc(id)

	// Sample the documents that change during the loop.
	var mu sync.Mutex
	largest := map[string]int{}
	note := func(path string, size int) {
		mu.Lock()
		if size > largest[path] {
			largest[path] = size
		}
		mu.Unlock()
	}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			if s, err := exec.Get(ctx); err == nil {
				note(relPath(s.Ref), docSize(s))
			}
			docs, _ := exec.Collection("loops").Documents(ctx).GetAll()
			for _, s := range docs {
				note(relPath(s.Ref), docSize(s))
			}
		}
	}()
	st := waitStatus(t, id, 20*time.Minute)
	close(stop)
	<-sampled
	if st["status"] != "ok" {
		t.Fatalf("execution %s: %s", st["status"], MustJSON(st))
	}

	// Every document of the execution, at the end.
	// An iteration's record is a document of its own or an entry of a
	// group record document (a batch's ends committed together).
	counts := map[string]int{}
	recorded := map[int]bool{}
	if err := scanDocs(ctx, exec, func(s *firestore.DocumentSnapshot) {
		note(relPath(s.Ref), docSize(s))
		counts[s.Ref.Parent.ID]++
		switch s.Ref.Parent.ID {
		case "iterations":
			if st, _ := s.DataAt("status"); st == "ok" {
				i, _ := s.DataAt("index")
				recorded[int(i.(int64))] = true
			}
		case "iteration_groups":
			idx, _ := s.DataAt("indexes")
			l, _ := idx.([]any)
			for _, i := range l {
				recorded[int(i.(int64))] = true
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(recorded) != n {
		t.Errorf("%d iterations recorded (%d iteration documents, %d group documents), want %d", len(recorded), counts["iterations"], counts["iteration_groups"], n)
	}
	type entry struct {
		path string
		size int
	}
	var all []entry
	for p, s := range largest {
		all = append(all, entry{p, s})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].size > all[j].size })
	for i, e := range all {
		if i < 5 {
			t.Logf("largest document %d: %s, %d bytes", i+1, e.path, e.size)
		}
		if e.size > MaxDocBytes {
			t.Errorf("document %s reached %d bytes (> %d)", e.path, e.size, MaxDocBytes)
		}
	}
	t.Logf("%d items: documents by collection %v", n, counts)

	// The console's page of the execution: drawn from the state and the
	// loop's profile (one density strip, never a row per iteration),
	// under MaxConsolePage bytes; its server time is logged (the issue's
	// budget: 2 s; speed is not asserted in tests). The page keeps
	// following an ended execution until its log is complete (batches
	// are projected in any order; under delivery chaos some iterations'
	// ends land after playbook.finished), so it is read once it stops.
	followed := time.Now().Add(2 * time.Minute)
	for {
		code, body, _ := consolePage(t, "/executions/"+id)
		if code == http.StatusOK && !strings.Contains(string(body), "data-follow") {
			break
		}
		if time.Now().After(followed) {
			t.Fatalf("the console page of %s still follows 2 minutes after the end (status %d)", id, code)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for i := range 3 {
		code, body, ms := consolePage(t, "/executions/"+id)
		if code != http.StatusOK {
			t.Fatalf("console page: %d %.300s", code, body)
		}
		if len(body) > MaxConsolePage {
			t.Errorf("the console page of a %d-iteration loop is %d bytes (> %d)", n, len(body), MaxConsolePage)
		}
		// Each iteration drawn one by one is a rect with its data-index
		// (grouped by status in one <g class="bar iteration">).
		its := strings.Count(string(body), `data-index="`)
		if its > 3000 {
			t.Errorf("the console page draws %d iterations one by one", its)
		}
		// Up to the console's MaxLaneIterations (3,000) iterations are
		// drawn one by one, packed in lanes; more (or too many lanes)
		// make a density strip.
		if !strings.Contains(string(body), `data-kind="density"`) && its != n {
			t.Errorf("the console page draws %d of the loop's %d iterations and no density strip", its, n)
		}
		t.Logf("console page of the %d-item loop (request %d): %.1f ms server time, %d bytes of HTML/SVG", n, i+1, ms, len(body))
	}
}

// MaxConsolePage bounds the console's page of any execution (README "Console":
// under 2 MB of HTML and SVG).
const MaxConsolePage = 2 << 20

// scanDocs calls fn with every document under ref (ref included),
// descending into the subcollections of loop plans and unit leases (the
// only documents of an execution that have any).
func scanDocs(ctx context.Context, ref *firestore.DocumentRef, fn func(*firestore.DocumentSnapshot)) error {
	if s, err := ref.Get(ctx); err == nil {
		fn(s)
	}
	cols := ref.Collections(ctx)
	for {
		c, err := cols.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return err
		}
		it := c.Documents(ctx)
		for {
			s, err := it.Next()
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				return err
			}
			fn(s)
			if c.ID == "loops" || c.ID == "units" {
				if err := scanSubcollections(ctx, s.Ref, fn); err != nil {
					return err
				}
			}
		}
	}
}

// scanSubcollections calls fn with every document of ref's
// subcollections (one level: iterations, lanes, attempts).
func scanSubcollections(ctx context.Context, ref *firestore.DocumentRef, fn func(*firestore.DocumentSnapshot)) error {
	cols := ref.Collections(ctx)
	for {
		c, err := cols.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return err
		}
		it := c.Documents(ctx)
		for {
			s, err := it.Next()
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				return err
			}
			fn(s)
		}
	}
}

// relPath is a document's path below the database.
func relPath(r *firestore.DocumentRef) string {
	p := r.Path
	if i := strings.Index(p, "/documents/"); i >= 0 {
		return p[i+len("/documents/"):]
	}
	return p
}

// docSize is a document's storage size as Firestore counts it: the
// document name (each collection and document id's length + 1, plus 16),
// its fields (name length + 1, plus the value's size) and 32 bytes.
func docSize(s *firestore.DocumentSnapshot) int {
	size := 16 + 32
	for _, part := range strings.Split(relPath(s.Ref), "/") {
		size += len(part) + 1
	}
	for k, v := range s.Data() {
		size += len(k) + 1 + valueSize(v)
	}
	return size
}

func valueSize(v any) int {
	switch x := v.(type) {
	case nil, bool:
		return 1
	case string:
		return len(x) + 1
	case []byte:
		return len(x) + 1
	case int64, float64, time.Time:
		return 8
	case *latlng.LatLng:
		return 16
	case *firestore.DocumentRef:
		return len(relPath(x)) + 1
	case []any:
		n := 0
		for _, e := range x {
			n += valueSize(e)
		}
		return n
	case map[string]any:
		n := 0
		for k, e := range x {
			n += len(k) + 1 + valueSize(e)
		}
		return n
	default:
		return len(fmt.Sprint(x)) + 1
	}
}
