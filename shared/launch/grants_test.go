package launch

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
)

func load(t *testing.T, src string) *dsl.Playbook {
	t.Helper()
	pb, err := dsl.Load([]byte(src), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return pb
}

// An execution whose playbook names a credential it is not granted is
// refused before anything is created (README "Security"): in its keychain
// (also under a computed name, rendered with the workload), literally on a
// task, in a secrets task; an inline playbook matches no path grant
// whatever its metadata.path says; the granted catalog path starts.
func TestStartChecksGrants(t *testing.T) {
	ctx := context.Background()
	creds := credentials.NewMemory()
	if err := creds.CredentialPut(ctx, credentials.Credential{Name: "pg", Kind: "postgres", Grants: []string{"examples/*", "inline:ops@example.com"},
		Data: map[string]any{"host": "db", "password": "pw"}}); err != nil {
		t.Fatal(err)
	}
	head := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t, path: examples/claimed}\n"
	keychain := load(t, head+"workload: {c: pg}\nkeychain:\n  - {name: db, kind: postgres, credential: \"{{ workload.c }}\"}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n")
	task := load(t, head+"workflow:\n  - step: start\n    tool: {kind: postgres, auth: pg, command: SELECT 1}\n")
	secret := load(t, head+"workflow:\n  - step: start\n    tool: {kind: secrets, provider: credential, key: pg}\n")
	for name, c := range map[string]struct {
		pb      *dsl.Playbook
		creator string
		path    string
		want    string
	}{
		"keychain, inline":       {keychain, "token", "", `keychain: keychain db: credential "pg" is not granted to inline playbooks of "token" (its grants are examples/*, inline:ops@example.com;`},
		"task auth, inline":      {task, "token", "", `workflow[0].tool.auth: credential "pg" is not granted to inline playbooks of "token"`},
		"secrets task, inline":   {secret, "token", "", `workflow[0].tool.key: credential "pg" is not granted to inline playbooks of "token"`},
		"keychain, other path":   {keychain, "ops@example.com", "tests/x.yaml", `credential "pg" is not granted to playbook "tests/x.yaml"`},
		"task, leaving examples": {task, "ops@example.com", "examples/../secret/x.yaml", `credential "pg" is not granted to playbook "examples/../secret/x.yaml"`},
	} {
		st, p := memstore.NewMemory(), &pub{}
		_, err := Start(ctx, st, p, Params{Playbook: c.pb, Credentials: creds, Creator: c.creator, CatalogPath: c.path, ExecutionID: "x"})
		if !errors.Is(err, credentials.ErrNotGranted) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", name, err, c.want)
		}
		if _, gerr := st.ExecutionGet(ctx, "x"); !errors.Is(gerr, store.ErrNotFound) || len(p.batches) != 0 {
			t.Errorf("%s: a refused execution was created", name)
		}
	}
	for name, c := range map[string]struct {
		pb            *dsl.Playbook
		creator, path string
	}{
		"catalog path":           {task, "anyone", "examples/etl.yaml"},
		"inline, granted caller": {keychain, "ops@example.com", ""},
	} {
		id, err := Start(ctx, memstore.NewMemory(), &pub{}, Params{Playbook: c.pb, Credentials: creds, Creator: c.creator, CatalogPath: c.path})
		if err != nil || id == "" {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A credential that does not exist is left to the task (it fails
	// there, as before); a templated name is checked where it is read.
	missing := load(t, head+"workflow:\n  - step: start\n    tool: {kind: postgres, auth: nope, command: SELECT 1}\n")
	if _, err := Start(ctx, memstore.NewMemory(), &pub{}, Params{Playbook: missing, Credentials: creds, Creator: "token"}); err != nil {
		t.Errorf("missing credential: %v", err)
	}
}

func TestCredentialRefs(t *testing.T) {
	pb := load(t, `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: refs}
workflow:
  - step: a
    tool:
      - t1: {kind: postgres, auth: pg_main, command: SELECT 1}
      - t2: {kind: postgres, auth: "{{ workload.db }}", command: SELECT 1}
      - t3: {kind: http, url: "http://x", auth: api_key}
      - t4: {kind: secrets, provider: credential, key: vault}
      - t5: {kind: transfer, source: {type: postgres, auth: src_db, query: SELECT 1}, target: {type: postgres, auth: dst_db, table: t}}
      - t6: {kind: postgres, auth: "postgresql://u:p@h/db", command: SELECT 1}
`)
	var got []string
	for _, r := range CredentialRefs(pb) {
		got = append(got, r.Name+"@"+r.Where)
	}
	want := []string{"api_key@workflow[0].tool[2].t3.auth", "dst_db@workflow[0].tool[4].t5.target.auth", "pg_main@workflow[0].tool[0].t1.auth",
		"src_db@workflow[0].tool[4].t5.source.auth", "vault@workflow[0].tool[3].t4.key"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CredentialRefs = %v\nwant %v", got, want)
	}
}
