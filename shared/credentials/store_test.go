package credentials_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/credentials/credentialstest"
)

func TestMemoryConformance(t *testing.T) {
	credentialstest.Run(t, func(t *testing.T) credentials.Store { return credentials.NewMemory() })
}

// TestMemorySharedConformance runs the suite with every subtest on one
// store, the way the Firestore backend shares one emulator.
func TestMemorySharedConformance(t *testing.T) {
	m := credentials.NewMemory()
	credentialstest.Run(t, func(t *testing.T) credentials.Store { return m })
}

// emulatorClient returns a Firestore client on the emulator named by
// FIRESTORE_EMULATOR_HOST, closed when t ends. Without the emulator the
// test is skipped, or fails when NOETL_STACK=1 says the stack must be
// there.
func emulatorClient(t *testing.T) *firestore.Client {
	t.Helper()
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	if host == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatal("NOETL_STACK=1 but FIRESTORE_EMULATOR_HOST is unset: source .stack/env")
		}
		t.Skip("Firestore emulator not configured (set FIRESTORE_EMULATOR_HOST, or run scripts/up and source .stack/env)")
	}
	c, err := net.DialTimeout("tcp", host, 3*time.Second)
	if err != nil {
		t.Fatalf("Firestore emulator at %s unreachable: %v", host, err)
	}
	c.Close()
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	if project == "" {
		project = "noetl-test"
	}
	fc, err := firestore.NewClient(context.Background(), project)
	if err != nil {
		t.Fatalf("firestore.NewClient(%s) on %s: %v", project, host, err)
	}
	t.Cleanup(func() { fc.Close() })
	return fc
}

func TestFirestoreConformance(t *testing.T) {
	fc := emulatorClient(t)
	credentialstest.Run(t, func(t *testing.T) credentials.Store { return credentials.NewFirestore(fc) })
}

// TestFirestoreDocument checks what the suite cannot see through the
// interface: the document credentials/{name} keeps the data as JSON text
// and lists the data keys beside it, so listing reads no secret.
func TestFirestoreDocument(t *testing.T) {
	fc := emulatorClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s := credentials.NewFirestore(fc)
	name := "doc-" + strings.ReplaceAll(time.Now().UTC().Format("150405.000000000"), ".", "-")
	if err := s.CredentialPut(ctx, credentials.Credential{Name: name, Kind: "bearer", Data: map[string]any{"token": "tok-123456", "n": 7}}); err != nil {
		t.Fatalf("CredentialPut: %v", err)
	}
	t.Cleanup(func() { _ = s.CredentialDelete(context.Background(), name) })
	snap, err := fc.Collection(credentials.Collection).Doc(name).Get(ctx)
	if err != nil {
		t.Fatalf("get %s/%s: %v", credentials.Collection, name, err)
	}
	d := snap.Data()
	if d["kind"] != "http_bearer" || d["name"] != name {
		t.Errorf("kind/name = %v/%v", d["kind"], d["name"])
	}
	if js, _ := d["data"].(string); js != `{"n":7,"token":"tok-123456"}` {
		t.Errorf("data = %#v, want the JSON text", d["data"])
	}
	if keys, _ := d["keys"].([]any); len(keys) != 2 || keys[0] != "n" || keys[1] != "token" {
		t.Errorf("keys = %#v, want [n token]", d["keys"])
	}
}
