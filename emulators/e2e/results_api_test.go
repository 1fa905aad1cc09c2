package e2e

import (
	"net/url"
	"strings"
	"testing"
)

// TestResultsByURN: a stored result resolves from its logical URI alone
// through the api (GET /results/{urn}, NoETL result storage RFC §4), for
// the execution's creator and an operator; another runner and a viewer
// get 404 as for a missing one (README "Security"); GET /cells shows the
// deployment's cell map.
func TestResultsByURN(t *testing.T) {
	RequireStack(t)
	alice, bob := identity(t, "runner", "alice", false), identity(t, "runner", "bob", false)
	val, oscar := identity(t, "viewer", "val", false), identity(t, "operator", "oscar", false)
	src := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: urn_read}\nworkflow:\n  - step: start\n    tool:\n      kind: python\n      code: |\n        result = [{\"id\": i, \"name\": \"row %d\" % i} for i in range(4000)]\n"
	id := alice.startAs(t, src, nil, nil)
	st := waitDone(t, id)
	res, _ := st["results"].(map[string]any)
	ref, _ := res["start"].(map[string]any)
	meta, _ := ref["$ref"].(map[string]any)
	urn, _ := meta["uri"].(string)
	if st["status"] != "ok" || urn == "" {
		t.Fatalf("start's result is not stored: %v", MustJSON(st))
	}
	path := "/api/results/" + strings.TrimPrefix(urn, "noetl://")
	for _, c := range []caller{alice, oscar} {
		got := c.expect(t, "GET", path, nil, 200, "")
		rows, _ := got["value"].([]any)
		if len(rows) != 4000 {
			t.Fatalf("GET %s as %s: %d rows, want 4000", urn, c.name, len(rows))
		}
		if last, _ := rows[3999].(map[string]any); asInt(last["id"]) != 3999 || last["name"] != "row 3999" {
			t.Fatalf("last row %v", rows[3999])
		}
	}
	only := alice.expect(t, "GET", "/api/results?ref=1&urn="+url.QueryEscape(urn), nil, 200, "")
	if only["value"] != nil || only["ref"] == nil {
		t.Fatalf("?ref=1 answered %v", only)
	}
	for _, c := range []caller{bob, val} {
		c.expect(t, "GET", path, nil, 404, "not found")
	}
	alice.expect(t, "GET", "/api/results/default/default/results/"+id+"/nope/0/0/1", nil, 404, "not found")
	alice.expect(t, "GET", "/api/results?urn="+url.QueryEscape("noetl://x/results"), nil, 400, "not a logical result URI")
	cells := val.expect(t, "GET", "/api/cells", nil, 200, "")
	list, _ := cells["cells"].([]any)
	if len(list) != 1 {
		t.Fatalf("cells %v", cells)
	}
	if c, _ := list[0].(map[string]any); c["bucket"] == "" || c["bucket"] == nil {
		t.Fatalf("cell without a bucket: %v", cells)
	}
}
