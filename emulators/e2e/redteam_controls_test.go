package e2e

// The red-team suite of the control plane's own controls (README "Security"
//–8), on the local stack: each attack is a playbook or an API call, and
// each asserts the exact refusal it gets.
//
//	attack                                                     test
//	credential use without a grant (keychain, task, inline,    TestRedTeamCredentialGrants
//	  catalog, child, metadata.path claim, computed at run time)
//	cross-execution result reads (artifact, result_fetch by    TestRedTeamResultOwnership
//	  key, a hand-made $ref) and overwrites (gcs task into the
//	  results bucket); a tampered object (sha256 mismatch)
//	barrier forgery (another execution writes the victim's     TestRedTeamBarrierForgery
//	  barrier row)
//	role escalation through the API (route × role ×            TestRedTeamRoles
//	  owner/non-owner: reads, cancels, emit, parent_id, DLQ,
//	  credentials, catalog)
//
// Callers other than the stack's token (admin) are identity tokens minted
// with the stack's OIDC key for e-mails whose domain gives their role
// (emulators/stack IdentityDomains; .stack/roles.yaml).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/emulators/stack"
	"github.com/noetl/gcpengine/shared/jsonx"
)

// caller is an api caller of the red-team tests.
type caller struct {
	name  string // principal (e-mail), or "token"
	token string
}

// identity returns a caller with role on the stack: an identity token for
// <who>-<suffix>@<the role's domain>, audience the api (emit=false) or
// emit.
func identity(t *testing.T, role, who string, emit bool) caller {
	t.Helper()
	email := fmt.Sprintf("%s-%s@%s", who, randSuffix(), stack.IdentityDomains[role])
	if role == "none" {
		email = fmt.Sprintf("%s-%s@nobody.noetl.test", who, randSuffix())
	}
	return withAudience(t, email, emit)
}

// withAudience mints email's identity token for the api or emit.
func withAudience(t *testing.T, email string, emit bool) caller {
	t.Helper()
	aud := os.Getenv("NOETL_FUNCTIONS_URL") + "/api"
	if emit {
		aud = os.Getenv("NOETL_FUNCTIONS_URL") + "/emit"
	}
	return caller{name: email, token: ExecuteToken(t, OIDCKey(t), email, aud, time.Now())}
}

// stackToken is the stack's static token (admin).
func stackToken() caller { return caller{name: "token", token: os.Getenv("NOETL_API_TOKEN")} }

// call sends method path (under $NOETL_FUNCTIONS_URL) as c with a JSON
// body (nil: none) and returns the status and the decoded body.
func (c caller) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, os.Getenv("NOETL_FUNCTIONS_URL")+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := Anonymous.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := jsonx.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s as %s: %d %q is not JSON", method, path, c.name, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, out
}

// expect asserts status code and, when want is not "", that the body's
// error contains want.
func (c caller) expect(t *testing.T, method, path string, body any, code int, want string) map[string]any {
	t.Helper()
	got, out := c.call(t, method, path, body)
	msg, _ := out["error"].(string)
	if got != code || !strings.Contains(msg, want) {
		t.Errorf("%s %s as %s = %d %v\nwant %d with error containing %q", method, path, c.name, got, out, code, want)
	}
	return out
}

// startAs starts an inline playbook as c and returns its id (202).
func (c caller) startAs(t *testing.T, src string, workload map[string]any, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"playbook": src, "workload": workload}
	for k, v := range extra {
		body[k] = v
	}
	code, out := c.call(t, "POST", "/api/executions", body)
	id, _ := out["execution_id"].(string)
	if code != http.StatusAccepted || id == "" {
		t.Fatalf("start as %s: %d %v", c.name, code, out)
	}
	return id
}

// waitEnd polls the execution as the stack's token until it is ok,
// failed or canceled, and returns its status view.
func waitEnd(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		_, m := stackToken().call(t, "GET", "/api/executions/"+id, nil)
		switch m["status"] {
		case "ok", "failed", "canceled":
			return m
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Fatalf("execution %s did not end", id)
	return nil
}

// stepError returns the error of step in a status view.
func stepError(t *testing.T, view map[string]any, step string) (kind, message string) {
	t.Helper()
	steps, _ := view["steps"].(map[string]any)
	s, _ := steps[step].(map[string]any)
	e, _ := s["error"].(map[string]any)
	if e == nil {
		t.Fatalf("step %s has no error: %v", step, view)
	}
	kind, _ = e["kind"].(string)
	message, _ = e["message"].(string)
	return kind, message
}

// ids lists the execution ids of a GET /executions answer.
func ids(out map[string]any) map[string]bool {
	m := map[string]bool{}
	list, _ := out["executions"].([]any)
	for _, e := range list {
		if em, ok := e.(map[string]any); ok {
			id, _ := em["execution_id"].(string)
			m[id] = true
		}
	}
	return m
}

const sleeper = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: redteam_sleeper}
workflow:
  - step: start
    tool: {kind: python, code: "import time\ntime.sleep(30)\nresult = {'slept': True}"}
`

const quick = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: redteam_quick}
workflow:
  - step: start
    tool: {kind: noop, result: {done: true}}
`

// Role escalation through the API (README "Security"): every execution
// route as an owner, another runner, a viewer, an operator and the admin
// token; the DLQ, credentials and catalog as each role. A caller below the
// operator role reads, cancels and emits into its own executions only
// (another's answers 404, exactly like a missing one), lists only its own
// whatever ?creator= says, and cannot name another's execution as its
// parent; the DLQ needs operator; credentials and catalog writes admin.
func TestRedTeamRoles(t *testing.T) {
	RequireStack(t)
	alice, bob := identity(t, "runner", "alice", false), identity(t, "runner", "bob", false)
	val, oscar, admin := identity(t, "viewer", "val", false), identity(t, "operator", "oscar", false), stackToken()
	nobody := identity(t, "none", "eve", false)

	a := alice.startAs(t, sleeper, nil, nil) // alice's, running
	b := bob.startAs(t, quick, nil, nil)     // bob's, finished
	waitEnd(t, b)
	if _, v := admin.call(t, "GET", "/api/executions/"+a, nil); v["creator"] != alice.name {
		t.Fatalf("execution %s records creator %v, want %s", a, v["creator"], alice.name)
	}
	notFound := func(id string) string { return "execution " + id + " not found" }
	for _, path := range []string{"/api/executions/" + a, "/api/executions/" + a + "/events", "/api/executions/" + a + "/cost"} {
		alice.expect(t, "GET", path, nil, 200, "")
		oscar.expect(t, "GET", path, nil, 200, "")
		admin.expect(t, "GET", path, nil, 200, "")
		bob.expect(t, "GET", path, nil, 404, notFound(a))
		val.expect(t, "GET", path, nil, 404, notFound(a))
		nobody.expect(t, "GET", path, nil, 403, "has role none")
	}
	// Another's execution and a missing one answer alike.
	bob.expect(t, "GET", "/api/executions/1", nil, 404, notFound("1"))

	// Cancel: only the owner (or an operator); a viewer may not cancel.
	bob.expect(t, "POST", "/api/executions/"+a+"/cancel", nil, 404, notFound(a))
	val.expect(t, "POST", "/api/executions/"+a+"/cancel", nil, 403, "has role viewer")
	alice.expect(t, "POST", "/api/executions/"+b+"/cancel", nil, 404, notFound(b))
	bob.expect(t, "POST", "/api/executions/"+b+"/cancel", nil, 409, "already ended")
	oscar.expect(t, "POST", "/api/executions/"+b+"/cancel", nil, 409, "already ended")

	// Lists: own only below operator, whatever ?creator= asks.
	for _, c := range []struct {
		who       caller
		query     string
		seeA, seB bool
	}{
		{alice, "", true, false}, {alice, "?creator=" + url.QueryEscape(bob.name), true, false},
		{bob, "", false, true}, {val, "", false, false},
		{oscar, "", true, true}, {oscar, "?creator=" + url.QueryEscape(alice.name), true, false}, {admin, "", true, true},
	} {
		_, out := c.who.call(t, "GET", "/api/executions"+c.query+func() string {
			if c.query == "" {
				return "?limit=1000"
			}
			return "&limit=1000"
		}(), nil)
		got := ids(out)
		if got[a] != c.seeA || got[b] != c.seB {
			t.Errorf("GET /api/executions%s as %s lists %s: %v, %s: %v; want %v, %v", c.query, c.who.name, a, got[a], b, got[b], c.seeA, c.seB)
		}
	}

	// A parent shares its results with its children: bob cannot make his
	// execution a child of alice's; alice can.
	bob.expect(t, "POST", "/api/executions", map[string]any{"playbook": quick, "parent_id": a}, 404, notFound(a))
	child := alice.startAs(t, quick, nil, map[string]any{"parent_id": a})
	if v := waitEnd(t, child); v["parent_id"] != a {
		t.Errorf("child %s parent %v", child, v["parent_id"])
	}

	// emit: into own executions only.
	ev := map[string]any{"execution_id": a, "event_type": "external.redteam.poke", "payload": map[string]any{"n": 1}}
	withAudience(t, bob.name, true).expect(t, "POST", "/emit", ev, 404, notFound(a))
	withAudience(t, alice.name, true).expect(t, "POST", "/emit", ev, 202, "")

	// The DLQ needs operator.
	for _, c := range []caller{alice, val} {
		c.expect(t, "GET", "/api/dlq", nil, 403, "needs operator")
		c.expect(t, "POST", "/api/dlq/redteam-none/replay", map[string]any{}, 403, "needs operator")
		c.expect(t, "POST", "/api/dlq/redteam-none/discard", map[string]any{"reason": "x"}, 403, "needs operator")
	}
	oscar.expect(t, "GET", "/api/dlq", nil, 200, "")
	oscar.expect(t, "POST", "/api/dlq/redteam-none/replay", map[string]any{}, 404, "")

	// Credentials and catalog writes need admin.
	cred := map[string]any{"name": "redteam_" + randSuffix(), "kind": "secret", "grants": []string{"**"}, "data": map[string]any{"k": "v"}}
	for _, c := range []caller{alice, oscar} {
		c.expect(t, "POST", "/api/credentials", cred, 403, "needs admin")
		c.expect(t, "GET", "/api/credentials", nil, 403, "needs admin")
		c.expect(t, "POST", "/api/playbooks", map[string]any{"playbook": quick, "path": "redteam/escalated"}, 403, "needs admin")
	}
	admin.expect(t, "POST", "/api/credentials", cred, 201, "")
	admin.call(t, "DELETE", "/api/credentials/"+cred["name"].(string), nil)

	// A token for another audience, or none, is not a caller.
	foreign := caller{name: alice.name, token: ExecuteToken(t, OIDCKey(t), alice.name, "https://elsewhere.example/api", time.Now())}
	foreign.expect(t, "GET", "/api/executions/"+a, nil, 401, "audience")
	caller{name: "anonymous"}.expect(t, "GET", "/api/executions/"+a, nil, 401, "no Authorization header")

	// The owner cancels her own.
	alice.expect(t, "POST", "/api/executions/"+a+"/cancel", nil, 202, "")
	if v := waitEnd(t, a); v["status"] != "canceled" {
		t.Errorf("execution %s after its owner's cancel: %v", a, v["status"])
	}
}

// Credentials by grant (README "Security"): a credential granted to one
// catalog path is refused to every other playbook before it runs (403
// naming the credential, the playbook and the grants) — in a keychain,
// literally on a task, by an inline playbook claiming the granted path as
// its metadata.path, by a catalog child started by a granted parent — and
// a name computed at run time fails its task with kind forbidden. The
// granted catalog playbook runs.
func TestRedTeamCredentialGrants(t *testing.T) {
	RequireStack(t)
	admin := stackToken()
	sfx := randSuffix()
	cred, granted, other := "rt_"+sfx, "redteam/"+sfx+"/granted", "redteam/"+sfx+"/other"
	secret := "RedTeamValue-" + sfx
	admin.expect(t, "POST", "/api/credentials", map[string]any{"name": cred, "kind": "secret", "grants": []string{granted},
		"data": map[string]any{"password": secret}}, 201, "")
	defer admin.call(t, "DELETE", "/api/credentials/"+cred, nil)
	refusal := fmt.Sprintf(`credential %q is not granted to inline playbooks of "token" (its grants are %s;`, cred, granted)

	reads := func(name, path, field string) string {
		return fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: %s, path: %s}
workflow:
  - step: start
    tool: {kind: secrets, provider: credential, %s}
`, name, path, field)
	}
	keychain := fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: rt_keychain, path: %s}
keychain:
  - {name: db, kind: secret, credential: %s}
workflow:
  - step: start
    tool: {kind: noop, result: {ok: true}}
`, granted, cred)
	for what, src := range map[string]string{
		"keychain (claiming the granted metadata.path)": keychain,
		"task (claiming the granted metadata.path)":     reads("rt_task", granted, "key: "+cred),
		"task credential field":                         reads("rt_field", "redteam/x", "credential: "+cred),
	} {
		out := admin.expect(t, "POST", "/api/executions", map[string]any{"playbook": src}, 403, refusal)
		if strings.Contains(fmt.Sprint(out), secret) {
			t.Errorf("%s: the refusal shows the value", what)
		}
	}

	// Computed at run time: the template's name is checked where the
	// value is read.
	id := admin.startAs(t, reads("rt_computed", "redteam/x", `key: "{{ workload.which }}"`), map[string]any{"which": cred}, nil)
	v := waitEnd(t, id)
	kind, msg := stepError(t, v, "start")
	if v["status"] != "failed" || kind != "forbidden" || !strings.Contains(msg, refusal) || strings.Contains(fmt.Sprint(v), secret) {
		t.Errorf("computed name: %s %s %q", v["status"], kind, msg)
	}

	// The granted catalog playbook runs; a child it starts from another
	// catalog path is refused (a child's grants are its own).
	admin.expect(t, "POST", "/api/playbooks", map[string]any{"path": granted, "playbook": reads("rt_granted", granted, "key: "+cred)}, 201, "")
	admin.expect(t, "POST", "/api/playbooks", map[string]any{"path": other, "playbook": reads("rt_other", other, "key: "+cred)}, 201, "")
	code, out := admin.call(t, "POST", "/api/executions", map[string]any{"path": granted})
	if code != 202 {
		t.Fatalf("granted catalog playbook: %d %v", code, out)
	}
	if v := waitEnd(t, out["execution_id"].(string)); v["status"] != "ok" || v["catalog_path"] != granted {
		t.Errorf("granted catalog playbook: %v (catalog_path %v) %v", v["status"], v["catalog_path"], v["failures"])
	}
	admin.expect(t, "POST", "/api/executions", map[string]any{"path": other}, 403,
		fmt.Sprintf(`credential %q is not granted to playbook %q (its grants are %s;`, cred, other, granted))
	// Granted the parent only: the child is refused, the parent's task
	// fails with kind forbidden.
	admin.expect(t, "POST", "/api/credentials", map[string]any{"name": cred, "kind": "secret", "grants": []string{granted, "inline:token"},
		"data": map[string]any{"password": secret}}, 201, "")
	parent := admin.startAs(t, fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: rt_parent}
workflow:
  - step: start
    tool: {kind: playbook, path: %s}
`, other), nil, nil)
	v = waitEnd(t, parent)
	kind, msg = stepError(t, v, "start")
	if v["status"] != "failed" || kind != "forbidden" || !strings.Contains(msg, fmt.Sprintf(`credential %q is not granted to playbook %q`, cred, other)) {
		t.Errorf("child of a granted parent: %s %s %q", v["status"], kind, msg)
	}
	// With inline:token, the inline playbook is granted.
	ok := admin.startAs(t, reads("rt_inline_ok", "redteam/x", "key: "+cred), nil, nil)
	if v := waitEnd(t, ok); v["status"] != "ok" {
		t.Errorf("inline playbook granted inline:token: %v %v", v["status"], v["failures"])
	}
}

// bigResult is a playbook whose step big returns a result over the
// inline budget (stored in the results bucket), carrying marker.
func bigResult(marker string) string {
	return `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: redteam_victim}
workflow:
  - step: big
    tool: {kind: python, code: "result = {'secret': '` + marker + `', 'blob': 'x' * 70000}"}
`
}

// Results by ownership (README "Security"): another execution's stored
// result is refused to artifact and result_fetch tasks (by reference and
// by key) and to a hand-made $ref in the template scope, with kind
// forbidden naming both executions; a gcs task cannot write the results
// bucket; a child reads its parent's result, and an object changed behind
// its reference (sha256 mismatch) fails the read with kind result_lost
// naming the reference.
func TestRedTeamResultOwnership(t *testing.T) {
	RequireStack(t)
	admin := stackToken()
	marker := "VictimSecret-" + randSuffix()
	victim := admin.startAs(t, bigResult(marker), nil, nil)
	if v := waitEnd(t, victim); v["status"] != "ok" {
		t.Fatalf("victim: %v", v)
	}
	_, view := admin.call(t, "GET", "/api/executions/"+victim, nil)
	ref, _ := view["results"].(map[string]any)["big"].(map[string]any)
	inner, _ := ref["$ref"].(map[string]any)
	key, _ := inner["key"].(string)
	if key == "" || inner["sha256"] == nil || inner["crc32c"] == nil {
		t.Fatalf("victim's result is not a reference with a sha256 and a crc32c: %v", ref)
	}
	refusal := "may read its own results, its parent's and its children's, not those of execution " + victim
	attack := func(name, src string, wl map[string]any) (string, string, string) {
		id := admin.startAs(t, src, wl, nil)
		v := waitEnd(t, id)
		kind, msg := stepError(t, v, name)
		if v["status"] != "failed" || strings.Contains(fmt.Sprint(v), marker) {
			t.Errorf("%s: %v (or the victim's value leaked)", name, v["status"])
		}
		return id, kind, msg
	}
	for _, c := range []struct{ step, tool string }{
		{"artifact", `{kind: artifact, action: get, input: {result_ref: "{{ workload.ref }}"}}`},
		{"fetch_inner", `{kind: result_fetch, ref: "{{ workload.inner }}"}`},
		{"fetch_key", `{kind: result_fetch, ref: "{{ workload.key }}"}`},
	} {
		id, kind, msg := attack(c.step, "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: redteam_reader}\nworkflow:\n  - step: "+c.step+"\n    tool: "+c.tool+"\n",
			map[string]any{"ref": ref, "inner": inner, "key": key})
		if kind != "forbidden" || !strings.Contains(msg, "execution "+id+" "+refusal) {
			t.Errorf("%s: kind %s, message %q", c.step, kind, msg)
		}
	}
	// A hand-made $ref in a step result, which the next step's templates
	// would load: execute refuses it in the control plane — the URN in
	// the args is not the execution's to read, so no grant is issued and
	// the runner is not called (an answer naming an object the attempt
	// was not granted is refused too: shared/runnerclient
	// TestForgedReferenceRefused).
	id, kind, msg := attack("forge", `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: redteam_forger}
workflow:
  - step: forge
    tool: {kind: python, code: "result = {'$ref': inner}", args: {inner: "{{ workload.inner }}"}}
    next: [{step: peek}]
  - step: peek
    tool: {kind: noop, result: "{{ forge.secret }}"}
`, map[string]any{"inner": inner})
	if kind != "forbidden" || !strings.Contains(msg, "execution "+id+" "+refusal) {
		t.Errorf("hand-made $ref: kind %s, message %q", kind, msg)
	}
	// A runner kind naming the victim's result, by reference or by URN:
	// execute grants no URL for it and fails the step before the runner
	// is called.
	uri, _ := inner["uri"].(string)
	vref := ref
	for step, ref := range map[string]string{"transfer_ref": "{{ workload.ref }}", "transfer_urn": uri} {
		id, kind, msg = attack(step, "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: redteam_transfer}\nworkflow:\n  - step: "+step+
			"\n    tool: {kind: transfer, source: {type: result, ref: "+strconv.Quote(ref)+"}, target: {type: postgres, connection: "+strconv.Quote(os.Getenv("NOETL_PG_DSN"))+", table: stolen, mode: replace}}\n",
			map[string]any{"ref": vref})
		if kind != "forbidden" || !strings.Contains(msg, "execution "+id+" "+refusal) {
			t.Errorf("%s: kind %s, message %q", step, kind, msg)
		}
	}
	// User code reaching the results gateway itself, without a signature
	// (400: no V4 parameters) or with a forged one (403): refused.
	gw := os.Getenv("NOETL_RESULTS_SIGNED_ENDPOINT")
	if gw == "" {
		t.Fatal("NOETL_RESULTS_SIGNED_ENDPOINT is not set by the stack")
	}
	probe := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: redteam_gateway}
workflow:
  - step: steal
    tool:
      kind: python
      args: {url: "{{ workload.url }}"}
      code: |
        import urllib.request, urllib.error
        try:
            body = urllib.request.urlopen(url, timeout=10).read()
            result = {"status": 200, "leaked": body[:100].decode("utf-8", "replace")}
        except urllib.error.HTTPError as e:
            result = {"status": e.code, "leaked": ""}
`
	bucket := os.Getenv("NOETL_RESULTS_BUCKET")
	for name, u := range map[string]string{
		"unsigned": gw + "/" + bucket + "/" + key,
		"forged":   gw + "/" + bucket + "/" + key + "?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=noetl-execute%40x.iam.gserviceaccount.com%2F20260101%2Fauto%2Fstorage%2Fgoog4_request&X-Goog-Date=20260101T000000Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature=00",
	} {
		id := admin.startAs(t, probe, map[string]any{"url": u}, nil)
		v := waitEnd(t, id)
		res, _ := v["results"].(map[string]any)["steal"].(map[string]any)
		if st := fmt.Sprint(res["status"]); v["status"] != "ok" || (st != "400" && st != "403") || strings.Contains(fmt.Sprint(v), marker) {
			t.Errorf("gateway %s: %v %v", name, v["status"], res)
		}
	}
	// Overwrite or read the victim's object through gcs tasks.
	for step, tool := range map[string]string{
		"overwrite": `{kind: gcs, action: upload, source: /tmp/forged.json, destination: "{{ workload.uri }}"}`,
		"download":  `{kind: gcs, action: download, source: "{{ workload.uri }}", destination: /tmp/stolen.json}`,
	} {
		_, kind, msg = attack(step, "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: redteam_gcs}\nworkflow:\n  - step: "+step+"\n    tool: "+tool+"\n",
			map[string]any{"uri": "gs://" + bucket + "/" + key})
		if kind != "forbidden" || !strings.Contains(msg, fmt.Sprintf("bucket %q is the engine's results bucket", bucket)) {
			t.Errorf("gcs %s: kind %s, message %q", step, kind, msg)
		}
	}

	// A child reads its parent's result; after an object is changed
	// behind its reference (an attacker with bucket access), a read of it
	// fails naming the reference. The changed object is a second victim's,
	// never read before: an instance that already verified an object's
	// bytes serves them from its cache (keyed by key and sha256, so what it
	// serves is exactly what the reference names), and the forged bytes
	// reach no one either way.
	reader := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: redteam_child}\nworkflow:\n  - step: read\n    tool: {kind: artifact, action: get, input: {result_ref: \"{{ workload.ref }}\"}}\n"
	c0 := admin.startAs(t, reader, map[string]any{"ref": ref}, map[string]any{"parent_id": victim})
	if v := waitEnd(t, c0); v["status"] != "ok" {
		t.Fatalf("child reading its parent's result: %v %v", v["status"], v["failures"])
	}
	victim = admin.startAs(t, bigResult("VictimSecret2-"+randSuffix()), nil, nil)
	if v := waitEnd(t, victim); v["status"] != "ok" {
		t.Fatalf("second victim: %v", v)
	}
	_, view = admin.call(t, "GET", "/api/executions/"+victim, nil)
	ref, _ = view["results"].(map[string]any)["big"].(map[string]any)
	inner, _ = ref["$ref"].(map[string]any)
	key, _ = inner["key"].(string)
	ctx := context.Background()
	gcs, err := storage.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer gcs.Close()
	w := gcs.Bucket(bucket).Object(key).NewWriter(ctx)
	w.ContentType = "application/json"
	forged := []byte(`{"secret": "FORGED", "blob": "y"}`)
	if _, err := w.Write(forged); err != nil || w.Close() != nil {
		t.Fatalf("tamper: %v", err)
	}
	sum := sha256.Sum256(forged)
	uri, _ = inner["uri"].(string)
	// The reference records the generation written: the forged object is
	// another, refused before it is read.
	c1 := admin.startAs(t, reader, map[string]any{"ref": ref}, map[string]any{"parent_id": victim})
	v := waitEnd(t, c1)
	kind, msg = stepError(t, v, "read")
	if v["status"] != "failed" || kind != "result_lost" || !strings.Contains(msg, "not the generation the reference records") ||
		!strings.Contains(msg, uri) || strings.Contains(fmt.Sprint(v), "FORGED") {
		t.Errorf("tampered object: %v kind %s, message %q", v["status"], kind, msg)
	}
	// The child's author hand-makes the reference without its generation,
	// then without its crc32c too, to dodge the checks: the digest it
	// still records is checked instead (the crc32c by default, else the
	// sha256).
	without := func(drop ...string) map[string]any {
		m := map[string]any{}
		for k, v := range inner {
			if !slices.Contains(drop, k) {
				m[k] = v
			}
		}
		return map[string]any{"$ref": m}
	}
	for _, c := range []struct {
		drop []string
		want string
	}{
		{[]string{"generation"}, "it records crc32c"},
		{[]string{"generation", "crc32c"}, "it records sha256 " + inner["sha256"].(string) + ", the object's is " + hex.EncodeToString(sum[:])},
	} {
		child := admin.startAs(t, reader, map[string]any{"ref": without(c.drop...)}, map[string]any{"parent_id": victim})
		v = waitEnd(t, child)
		kind, msg = stepError(t, v, "read")
		if v["status"] != "failed" || kind != "result_lost" || !strings.Contains(msg, "does not match its reference's digest") ||
			!strings.Contains(msg, c.want) || strings.Contains(fmt.Sprint(v), "FORGED") {
			t.Errorf("tampered object, reference without %v: %v kind %s, message %q", c.drop, v["status"], kind, msg)
		}
	}
}

// The attack of README "Security" on the side-effect barrier: a playbook
// forges a barrier record for another execution's next postgres task
// before it runs, under the key engines before the schema noetl_barrier
// used (execution/step.run/task.attempt.jumps): writing the table itself
// is refused (it belongs to the role noetl_barrier), and what the
// barrier's function lets it record is under a name no victim's record
// has (the real one is an HMAC under the victim's own barrier key). The
// victim runs its SQL once and does not adopt "FORGED BY ANOTHER
// PLAYBOOK".
func TestRedTeamBarrierForgery(t *testing.T) {
	RequireStack(t)
	admin := stackToken()
	table := "rt_forgery_" + randSuffix()
	pg := os.Getenv("NOETL_PG_DSN")
	pgQuery(t, "CREATE TABLE "+table+" (v text)")
	defer pgQuery(t, "DROP TABLE IF EXISTS "+table)
	victim := admin.startAs(t, `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: redteam_barrier_victim}
workflow:
  - step: start
    tool: {kind: python, code: "import time\ntime.sleep(6)\nresult = {'waited': True}"}
    next: [{step: store}]
  - step: store
    tool: {kind: postgres, connection: "{{ workload.pg }}", command: "INSERT INTO `+table+` VALUES ('real') RETURNING v"}
`, map[string]any{"pg": pg}, nil)
	forger := func(name, command string) map[string]any {
		id := admin.startAs(t, `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: redteam_barrier_forger_`+name+`}
workflow:
  - step: forge
    tool:
      kind: postgres
      connection: "{{ workload.pg }}"
      command: "`+command+`"
`, map[string]any{"pg": pg, "victim": victim}, nil)
		return waitEnd(t, id)
	}
	v := forger("table", "INSERT INTO noetl_barrier.attempts (key, digest, mac) VALUES ('{{ workload.victim }}/store.1/0.1.0', 'x', 'v2=AAAA')")
	if kind, msg := stepError(t, v, "forge"); v["status"] != "failed" || kind != "postgres" || !strings.Contains(msg, "permission denied") {
		t.Fatalf("writing the barrier's table: %v %s %q, want refused (permission denied)", v["status"], kind, msg)
	}
	if v := forger("function", "SELECT noetl_barrier.record('{{ workload.victim }}/store.1/0.1.0', 'x', 'v2=AAAA', false)"); v["status"] != "ok" {
		t.Fatalf("the forger's record through the function: %v %v", v["status"], v["failures"])
	}
	if v := waitEnd(t, victim); v["status"] != "ok" {
		t.Fatalf("victim: %v %v", v["status"], v["failures"])
	}
	_, view := admin.call(t, "GET", "/api/executions/"+victim, nil)
	res := fmt.Sprint(view["results"].(map[string]any)["store"])
	if strings.Contains(res, "FORGED") || !strings.Contains(res, "real") {
		t.Fatalf("the victim adopted a forged record: %s", res)
	}
	if rows := pgQuery(t, "SELECT v FROM "+table); len(rows) != 1 || rows[0][0] != "real" {
		t.Fatalf("the victim's SQL did not run once: %v", rows)
	}
}
