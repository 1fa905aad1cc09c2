package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/types"
)

const missingCredential = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: kc, path: tests/kc}
keychain:
  - {name: db, kind: postgres, credential: never_registered}
workflow:
  - step: start
    tool: {kind: noop}
`

// TestMissingCredentialIsPermanent: a unit whose keychain names a
// credential that does not exist fails with code NotFound, which the one
// policy table does not retry: execute dead-letters it at once (it used to
// be Unknown and retried until the DLQ).
func TestMissingCredentialIsPermanent(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	w := newWorker(env, nil, nil)
	creds := credentials.NewMemory()
	w.Credentials = creds
	if err := creds.CredentialPut(ctx, credentials.Credential{Name: "never_registered", Kind: "postgres", Grants: []string{"tests/*"},
		Data: map[string]any{"host": "h", "user": "u", "password": "p", "database": "d"}}); err != nil {
		t.Fatal(err)
	}
	pb, err := dsl.Load([]byte(missingCredential), "kc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := launch.Start(ctx, env.Memory, env.Bus, launch.Params{Playbook: pb, Source: []byte(missingCredential),
		ExecutionID: "ex1", Now: env.Clock.Now(), Credentials: creds, CatalogPath: "tests/kc"}); err != nil {
		t.Fatal(err)
	}
	req := env.Bus.EventsOf("ex1", types.EvExecutionRequested)[0]
	if _, err := env.Control.Apply(ctx, control.ApplyParams{ExecutionID: "ex1", Event: req, OutboxID: req.EventID}); err != nil {
		t.Fatal(err)
	}
	// The credential is deleted after the start.
	if err := creds.CredentialDelete(ctx, "never_registered"); err != nil {
		t.Fatal(err)
	}
	unit := take(t, env)
	err = w.Run(ctx, unit, Delivery{TaskName: unit.TaskName()})
	if !errors.Is(err, credentials.ErrNotFound) || !errs.Is(err, errs.NotFound) || !errs.Permanent(err) || errs.ReplyOf(err) != errs.ReplyDeadLetter {
		t.Fatalf("Run = %v (code %s), want a permanent NotFound", err, errs.CodeOf(err))
	}
}
