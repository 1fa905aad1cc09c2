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
	"github.com/noetl/gcpengine/shared/credentials/credfirestore"
	"github.com/noetl/gcpengine/shared/credentials/credsecretmanager"
	"github.com/noetl/gcpengine/shared/credentials/smfake"
	"github.com/noetl/gcpengine/shared/sign"
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

func TestMemoryValuesConformance(t *testing.T) {
	v := credentials.NewMemoryValues()
	credentialstest.RunValues(t, func(t *testing.T) credentials.Values { return v })
}

// fakeSecretManager starts the in-process fake Secret Manager and returns
// the official client's driver on it, for project "noetl-test".
func fakeSecretManager(t *testing.T) (*credsecretmanager.SecretManager, *smfake.Server) {
	t.Helper()
	srv := smfake.New()
	c, stop, err := smfake.Start(context.Background(), srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return credsecretmanager.NewSecretManager(c, "noetl-test"), srv
}

// The Secret Manager driver, through the official client, against the
// fake Secret Manager gRPC server.
func TestSecretManagerValuesConformance(t *testing.T) {
	sm, _ := fakeSecretManager(t)
	credentialstest.RunValues(t, func(t *testing.T) credentials.Values { return sm })
}

// The Store of GCP: metadata in Firestore (the emulator), values in
// Secret Manager (the fake).
func TestSecretManagerStoreConformance(t *testing.T) {
	fc := emulatorClient(t)
	sm, _ := fakeSecretManager(t)
	credentialstest.Run(t, func(t *testing.T) credentials.Store { return credfirestore.NewFirestore(fc, sm) })
}

// What the driver writes to Secret Manager: secret noetl-cred-<name>, one
// version per put named by its full resource name, the credential's data
// JSON as the payload; a delete destroys every version.
func TestSecretManagerLayout(t *testing.T) {
	sm, _ := fakeSecretManager(t)
	ctx := t.Context()
	ver, err := sm.ValuePut(ctx, "pg_main", []byte(`{"password":"pw"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ver != "projects/noetl-test/secrets/noetl-cred-pg_main/versions/1" {
		t.Fatalf("version = %q", ver)
	}
	ver2, err := sm.ValuePut(ctx, "pg_main", []byte(`{"password":"pw2"}`))
	if err != nil || ver2 != "projects/noetl-test/secrets/noetl-cred-pg_main/versions/2" {
		t.Fatalf("second version = %q, %v", ver2, err)
	}
	// A version name of another secret, or of another project, never
	// reads through a credential's name.
	for _, v := range []string{"projects/noetl-test/secrets/noetl-cred-other/versions/1", "projects/x/secrets/noetl-cred-pg_main/versions/1",
		"projects/noetl-test/secrets/noetl-cred-pg_main/versions/latest", "projects/noetl-test/secrets/noetl-cred-pg_main/versions/1/x"} {
		if _, err := sm.ValueGet(ctx, "pg_main", v); err == nil {
			t.Errorf("ValueGet(pg_main, %s) read a value", v)
		}
	}
	if err := sm.ValueDelete(ctx, "pg_main", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := sm.ValueGet(ctx, "pg_main", ver2); err == nil {
		t.Fatal("a destroyed version still reads")
	}
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

func testSealer(t *testing.T) credentials.Sealer {
	t.Helper()
	s, err := sign.New([]byte("credentials-test-key-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return credfirestore.SealWith(s)
}

// The Store of the emulator stack: metadata and sealed values in
// Firestore.
func TestFirestoreConformance(t *testing.T) {
	fc := emulatorClient(t)
	v := credfirestore.NewFirestoreValues(fc, testSealer(t))
	credentialstest.Run(t, func(t *testing.T) credentials.Store { return credfirestore.NewFirestore(fc, v) })
}

func TestFirestoreValuesConformance(t *testing.T) {
	fc := emulatorClient(t)
	v := credfirestore.NewFirestoreValues(fc, testSealer(t))
	credentialstest.RunValues(t, func(t *testing.T) credentials.Values { return v })
}

// TestFirestoreDocument checks what the suite cannot see through the
// interface: the document credentials/{name} holds the metadata only (the
// data keys, grants and the value's version, never a value), and the
// value document credential_values/{name}.{version} holds it sealed.
func TestFirestoreDocument(t *testing.T) {
	fc := emulatorClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s := credfirestore.NewFirestore(fc, credfirestore.NewFirestoreValues(fc, testSealer(t)))
	name := "doc-" + strings.ReplaceAll(time.Now().UTC().Format("150405.000000000"), ".", "-")
	if err := s.CredentialPut(ctx, credentials.Credential{Name: name, Kind: "bearer", Grants: []string{"examples/*"}, Data: map[string]any{"token": "tok-123456", "n": 7}}); err != nil {
		t.Fatalf("CredentialPut: %v", err)
	}
	t.Cleanup(func() { _ = s.CredentialDelete(context.Background(), name) })
	snap, err := fc.Collection(credfirestore.Collection).Doc(name).Get(ctx)
	if err != nil {
		t.Fatalf("get %s/%s: %v", credfirestore.Collection, name, err)
	}
	d := snap.Data()
	if d["kind"] != "http_bearer" || d["name"] != name {
		t.Errorf("kind/name = %v/%v", d["kind"], d["name"])
	}
	if _, ok := d["data"]; ok {
		t.Errorf("the metadata document holds data: %v", d["data"])
	}
	if keys, _ := d["keys"].([]any); len(keys) != 2 || keys[0] != "n" || keys[1] != "token" {
		t.Errorf("keys = %#v, want [n token]", d["keys"])
	}
	if g, _ := d["grants"].([]any); len(g) != 1 || g[0] != "examples/*" {
		t.Errorf("grants = %#v", d["grants"])
	}
	ver, _ := d["version"].(string)
	vs, err := fc.Collection(credfirestore.ValuesCollection).Doc(name + "." + ver).Get(ctx)
	if err != nil {
		t.Fatalf("value document %s.%s: %v", name, ver, err)
	}
	sealed, _ := vs.Data()["sealed"].(string)
	if !strings.HasPrefix(sealed, "s1.") || strings.Contains(sealed, "tok-123456") {
		t.Errorf("value document = %v, want a sealed text", vs.Data())
	}
	// A second put replaces the version and deletes the old one.
	if err := s.CredentialPut(ctx, credentials.Credential{Name: name, Kind: "bearer", Data: map[string]any{"token": "tok-654321"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := fc.Collection(credfirestore.ValuesCollection).Doc(name + "." + ver).Get(ctx); err == nil {
		t.Errorf("the replaced value version %s is still stored", ver)
	}
}
