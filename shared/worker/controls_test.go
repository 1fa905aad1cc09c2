package worker

// The worker's part of the control plane's own controls (README "Security"
//–7): credentials by grant at run time, results by ownership in the
// template scope, and the barrier MAC key handed with each barriered task.

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/secrets"
	"github.com/noetl/gcpengine/shared/types"
)

// launchAs starts execution id of src for creator (an inline playbook),
// as the api does, and applies its start.
func launchAs(t *testing.T, env *controltest.Env, id, creator, src string, creds credentials.Store) {
	t.Helper()
	ctx := context.Background()
	pb, err := dsl.Load([]byte(src), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := launch.Start(ctx, env.Memory, env.Bus, launch.Params{Playbook: pb, Source: []byte(src), ExecutionID: id,
		Creator: creator, Credentials: creds, Now: env.Clock.Now()}); err != nil {
		t.Fatalf("launch: %v", err)
	}
	for _, b := range env.Bus.Batches() {
		for _, e := range b.Events {
			if b.ExecutionID == id && e.EventType == types.EvExecutionRequested {
				if _, err := env.Control.Apply(ctx, control.ApplyParams{ExecutionID: id, Event: e, OutboxID: e.EventID}); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
	}
	t.Fatal("no request event")
}

// failure returns the error map of step's step.failed event.
func failure(t *testing.T, env *controltest.Env, id, step string) map[string]any {
	t.Helper()
	for _, e := range eventsOf(env, id, types.EvStepFailed) {
		if e.Step == step {
			em, _ := e.Payload["error"].(map[string]any)
			return em
		}
	}
	t.Fatalf("no step.failed for %s", step)
	return nil
}

// A credential name computed at run time (here from a step's result) is
// checked where its value is read: not granted to the execution's
// playbook, the task fails with kind forbidden naming the credential and
// the grants; granted, it reads.
func TestRunTimeCredentialNameIsChecked(t *testing.T) {
	env := controltest.NewEnv()
	m := credentials.NewMemory()
	for name, grants := range map[string][]string{"pg_prod": {"etl/**"}, "pg_mine": {"inline:alice@example.com"}} {
		if err := m.CredentialPut(context.Background(), credentials.Credential{Name: name, Kind: "secret", Grants: grants, Data: map[string]any{"password": "pw-" + name}}); err != nil {
			t.Fatal(err)
		}
	}
	py := &fakeTool{run: func(_ context.Context, req tools.Request, _ int) types.Outcome {
		return types.Outcome{Status: types.StatusOK, Result: map[string]any{"cred": req.Args["want"]}}
	}}
	w := newWorker(env, py, nil)
	w.Tools["secrets"] = tools.Adapt(secrets.New(secrets.Options{Credentials: credentials.Guard(m)}))
	src := func(want string) string {
		return `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: computed}
workflow:
  - step: start
    tool: {kind: python, code: x, args: {want: ` + want + `}}
    next: [{step: read}]
  - step: read
    tool: {kind: secrets, provider: credential, key: "{{ start.cred }}"}
`
	}
	launchAs(t, env, "steal", "alice@example.com", src("pg_prod"), m)
	launchAs(t, env, "mine", "alice@example.com", src("pg_mine"), m)
	drain(t, env, w)
	if st := status(t, env, "steal"); st.Status != engine.ExecFailed {
		t.Fatalf("steal: %s", st.Status)
	}
	em := failure(t, env, "steal", "read")
	want := `secrets task: credential "pg_prod" is not granted to inline playbooks of "alice@example.com" (its grants are etl/**;`
	if em["kind"] != string(types.ErrKindForbidden) || !strings.Contains(em["message"].(string), want) {
		t.Fatalf("refusal = %v\nwant kind forbidden and %q", em, want)
	}
	if st := status(t, env, "mine"); st.Status != engine.ExecOK {
		t.Fatalf("granted credential: %s %v", st.Status, st.Failures)
	}
}

// A step result that is a hand-made reference to another execution's
// stored object (a task returned {"$ref": {...}}) is refused when the
// next step's templates would load it: the step fails with kind
// forbidden, its task never runs, nothing of the victim's is read. The
// execution's own stored results load.
func TestHandMadeRefIsRefused(t *testing.T) {
	env := controltest.NewEnv()
	rs := &results.Store{Backend: results.NewMemory(), InlineMax: 1500}
	victim, err := rs.Offload(context.Background(), types.ResultCoords{ExecutionID: "victim", Step: "secret"}, map[string]any{"card": strings.Repeat("4111", 400)})
	if err != nil {
		t.Fatal(err)
	}
	py := &fakeTool{run: func(_ context.Context, req tools.Request, _ int) types.Outcome {
		if req.Step == "forge" {
			// A hand-made reference: the victim's "$ref" alone.
			return types.Outcome{Status: types.StatusOK, Result: map[string]any{results.RefKey: maps.Clone(victim.(map[string]any)[results.RefKey].(map[string]any))}}
		}
		return types.Outcome{Status: types.StatusOK, Result: map[string]any{"big": strings.Repeat("x", 2000)}}
	}}
	w := newWorker(env, py, nil)
	w.Results = rs
	launchAs(t, env, "thief", "alice@example.com", `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: thief}
workflow:
  - step: start
    tool: {kind: python, code: x}
    next: [{step: forge}]
  - step: forge
    tool: {kind: python, code: x}
    next: [{step: peek}]
  - step: peek
    tool: {kind: noop, result: "{{ forge.card }}"}
`, nil)
	drain(t, env, w)
	st := status(t, env, "thief")
	if st.Status != engine.ExecFailed || !results.IsRef(st.Results["start"]) {
		t.Fatalf("thief: %s, start stored: %v", st.Status, results.IsRef(st.Results["start"]))
	}
	em := failure(t, env, "thief", "peek")
	want := "execution thief may read its own results, its parent's and its children's, not those of execution victim (noetl://default/default/results/victim/secret/0/0/0)"
	if em["kind"] != string(types.ErrKindForbidden) || !strings.Contains(em["message"].(string), want) {
		t.Fatalf("refusal = %v\nwant kind forbidden and %q", em, want)
	}
	if strings.Contains(fmt.Sprint(st.Failures, st.Results["peek"]), "4111") {
		t.Fatal("the victim's value was read")
	}
}

// The side-effect barrier's MAC key travels with each barriered task
// (tools.Request.BarrierMAC): derived from the engine's key for that
// barrier only, never the signing key; a task without a barrier gets
// none.
func TestBarrierMACTravelsWithTheRequest(t *testing.T) {
	env := controltest.NewEnv()
	py := &fakeTool{}
	w := newWorker(env, py, nil)
	signer, _ := sign.New([]byte("worker-test-signing-key-0123456789abcdef"))
	w.BarrierKey = signer.BarrierKey
	start(t, env, "mac", `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: mac}
workflow:
  - step: start
    tool: {kind: python, code: x}
`, nil)
	drain(t, env, w)
	reqs := py.requests()
	if len(reqs) != 1 || reqs[0].Barrier == "" {
		t.Fatalf("requests %+v, want one barriered python task", reqs)
	}
	if want := signer.BarrierKey(reqs[0].Barrier); len(want) != 32 || !bytes.Equal(reqs[0].BarrierMAC, want) {
		t.Fatalf("BarrierMAC = %x, want %x", reqs[0].BarrierMAC, want)
	}
	if bytes.Contains(reqs[0].BarrierMAC, []byte("worker-test-signing-key")) {
		t.Fatal("the signing key travels with the task")
	}
}

// A Worker without BarrierKey draws its own key (no process-wide key):
// its MACs are stable, another Worker's differ, and BarrierKey, when
// set, is used.
func TestOwnBarrierKeyIsPerWorker(t *testing.T) {
	a, b := &Worker{}, &Worker{}
	ma, mb := a.barrierMAC("exec/unit/0.1.0"), b.barrierMAC("exec/unit/0.1.0")
	if len(ma) != 32 || !bytes.Equal(ma, a.barrierMAC("exec/unit/0.1.0")) {
		t.Fatalf("MAC %x is not a stable 32-byte key", ma)
	}
	if bytes.Equal(ma, mb) {
		t.Fatal("two Workers without BarrierKey share a key")
	}
	if a.barrierMAC("") != nil {
		t.Error("no barrier, yet a MAC")
	}
	signer, err := sign.Parse("own-barrier-key-test-0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	c := &Worker{BarrierKey: signer.BarrierKey}
	if !bytes.Equal(c.barrierMAC("x"), signer.BarrierKey("x")) {
		t.Error("BarrierKey is not used")
	}
}
