package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Keychain: credentials registered through the API are resolved before
// the run, used by `auth:` on a postgres task and visible as keychain.<name>
// in templates, and their secret values never appear in events, API
// responses or the functions' logs.
func TestKeychainCredentials(t *testing.T) {
	RequireStack(t)
	base := os.Getenv("NOETL_FUNCTIONS_URL") + "/api"
	name := "pg_e2e_" + randSuffix()
	secret := "Sup3r-Secret-" + randSuffix()
	cred := map[string]any{"name": name, "kind": "postgres", "description": "e2e", "grants": []string{"inline:token"}, "data": map[string]any{
		"host": "127.0.0.1", "port": asInt(mustAtoi(os.Getenv("NOETL_PG_PORT"))), "user": "noetl", "password": secret, "database": "noetl"}}
	if code, body := post(t, base+"/credentials", []byte(MustJSON(cred))); code != http.StatusCreated {
		t.Fatalf("POST /credentials: %d %s", code, body)
	}
	got := getJSON(t, base+"/credentials/"+name)
	if strings.Contains(MustJSON(got), secret) {
		t.Fatalf("GET /credentials/%s leaks the secret: %v", name, got)
	}
	pb := filepath.Join(t.TempDir(), "kc.yaml")
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: keychain_e2e}
workload: {cred: "` + name + `"}
keychain:
  - name: pg
    kind: postgres
    credential: "{{ workload.cred }}"
workflow:
  - step: start
    tool:
      - query:
          kind: postgres
          auth: pg
          command: "SELECT current_user AS who, 1 + 1 AS two"
      - leak:
          kind: python
          args:
            password: "{{ keychain.pg.password }}"
            who: "{{ _prev.rows[0].who }}"
          code: |
            print("the password is", password)
            result = {"who": who, "password": password, "length": len(password)}
    next:
      arcs:
        - step: second
          when: "{{ keychain.pg.user == 'noetl' and keychain.pg.password | length > 0 }}"
          args: {pw: "{{ keychain.pg.password }}"}
  - step: second
    tool: {kind: noop, result: {pw_length: "{{ keychain.pg.password | length }}", arg: "{{ args.pw }}"}}
`
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, "")
	ok(t, r)
	start := step(t, r, "start")
	// Every value of a resolved credential is masked in outputs, also
	// the user name (README "Security": not only secret-named fields).
	if start["who"] != "***" || asInt(start["length"]) != int64(len(secret)) {
		t.Fatalf("start = %v", start)
	}
	// The arc fired (its when read the keychain in the control plane);
	// the secret it rendered into the arc's args travelled masked (units
	// never carry secret values: README "Security"), and the task reads it
	// from keychain.<name> itself.
	if asInt(step(t, r, "second")["pw_length"]) != int64(len(secret)) || step(t, r, "second")["arg"] != "***" {
		t.Fatalf("second = %v: want the keychain read in the task and the arc arg masked", r.Steps["second"])
	}
	if strings.Contains(r.Stdout, secret) {
		t.Fatalf("scripts/run output leaks the secret: %s", r.Stdout)
	}
	b := []byte(MustJSON(Events(t, r.ExecutionID)))
	if strings.Contains(string(b), secret) {
		t.Fatal("events leak the secret")
	}
	if !strings.Contains(string(b), "the password is ***") {
		t.Fatalf("task logs not in events or not masked")
	}
	if logs, err := os.ReadFile(filepath.Join(os.Getenv("NOETL_STACK_DIR"), "logs", "functions.log")); err == nil && strings.Contains(string(logs), secret) {
		t.Fatal("functions log leaks the secret")
	}
	// A missing credential rejects the execution before anything runs.
	missing := strings.Replace(src, `cred: "`+name+`"`, `cred: "no_such_credential_`+randSuffix()+`"`, 1)
	if err := os.WriteFile(pb, []byte(missing), 0o644); err != nil {
		t.Fatal(err)
	}
	r = Run(t, pb, "")
	if r.Code != 2 || !strings.Contains(r.Stderr, "no_such_credential") {
		t.Fatalf("missing credential: exit %d, stderr %s", r.Code, r.Stderr)
	}
	req, _ := http.NewRequest(http.MethodDelete, base+"/credentials/"+name, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
}

func mustAtoi(s string) int64 {
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	return n
}
