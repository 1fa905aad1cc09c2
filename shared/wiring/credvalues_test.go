package wiring

import (
	"context"
	"testing"

	"cloud.google.com/go/firestore"
	secretmanager "cloud.google.com/go/secretmanager/apiv1"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/credentials/credfirestore"
	"github.com/noetl/gcpengine/shared/credentials/credsecretmanager"
	"github.com/noetl/gcpengine/shared/credentials/smfake"
	"github.com/noetl/gcpengine/shared/sign"
)

// TestCredentialValuesFromSettings: NOETL_CREDENTIAL_VALUES=secretmanager
// keeps a credential's value as a secret of GOOGLE_CLOUD_PROJECT in
// Secret Manager (here smfake: the value put is read back from the
// secret, whose name is the credential's); firestore (the stack's)
// seals it in Firestore and opens no Secret Manager client.
func TestCredentialValuesFromSettings(t *testing.T) {
	ctx := context.Background()
	signer, err := sign.Parse("cred-values-test-key-0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(v string) config.Config {
		env := map[string]string{"NOETL_SIGNING_KEY": "cred-values-test-key-0123456789abcdef0123", "GOOGLE_CLOUD_PROJECT": "p4", "NOETL_CREDENTIAL_VALUES": v}
		cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	srv := smfake.New()
	opened := 0
	openSM := func(ctx context.Context) (*secretmanager.Client, error) {
		opened++
		c, stop, err := smfake.Start(ctx, srv)
		if err == nil {
			t.Cleanup(stop)
		}
		return c, err
	}
	v, closeSM, err := credentialValues(ctx, parse("secretmanager"), nil, signer, openSM)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(*credsecretmanager.SecretManager); !ok || opened != 1 || closeSM == nil {
		t.Fatalf("secretmanager: values %T, %d clients opened", v, opened)
	}
	ver, err := v.ValuePut(ctx, "pg_main", []byte("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	c, stop, err := smfake.Start(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if got, err := credsecretmanager.NewSecretManager(c, "p4").ValueGet(ctx, "pg_main", ver); err != nil || string(got) != "s3cret" {
		t.Fatalf("the value in Secret Manager (project p4): %q %v", got, err)
	}

	// A client of an emulator address that is never dialled: the values
	// are only built.
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	fs, err := firestore.NewClient(ctx, "p4")
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	v, closeSM, err = credentialValues(ctx, parse("firestore"), fs, signer, openSM)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(*credfirestore.FirestoreValues); !ok || opened != 1 || closeSM != nil {
		t.Fatalf("firestore: values %T, %d Secret Manager clients opened", v, opened)
	}
}
