package wiring

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/config"
)

// Roles default closed (README "Security"): the cloud profile without a
// roles file or inline roles is ErrNoRoles (the api and emit serve no
// one); the local profile without them gives everyone admin; a file or
// inline roles apply in either.
func TestRolesDefaultClosed(t *testing.T) {
	parse := func(env map[string]string) config.Config {
		t.Helper()
		c, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, os.ReadFile)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := Roles(parse(map[string]string{"K_SERVICE": "noetl-api"})); !errors.Is(err, ErrNoRoles) {
		t.Fatalf("Cloud Run without roles: %v, want ErrNoRoles", err)
	}
	if _, err := Roles(parse(map[string]string{"NOETL_PROFILE": "cloud"})); !errors.Is(err, ErrNoRoles) {
		t.Fatalf("cloud profile without roles: %v, want ErrNoRoles", err)
	}
	if r, err := Roles(parse(map[string]string{})); err != nil || r.Of("anyone") != auth.Admin {
		t.Fatalf("local profile without roles: %v %v, want everyone admin", r, err)
	}
	r, err := Roles(parse(map[string]string{"K_SERVICE": "noetl-api", "NOETL_API_ROLES": "runner: [ci@example.com]"}))
	if err != nil || r.Of("ci@example.com") != auth.Runner || r.Of("other@example.com") != auth.None {
		t.Fatalf("inline roles: %v %v", r, err)
	}
	f := filepath.Join(t.TempDir(), "roles.yaml")
	if err := os.WriteFile(f, []byte("operator: [ops@example.com]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := Roles(parse(map[string]string{"NOETL_PROFILE": "cloud", "NOETL_API_ROLES_FILE": f})); err != nil || r.Of("ops@example.com") != auth.Operator {
		t.Fatalf("roles file: %v %v", r, err)
	}
	if _, err := config.Parse(func(k string) (string, bool) {
		v, ok := map[string]string{"NOETL_API_ROLES_FILE": f, "NOETL_API_ROLES": "admin: [x]"}[k]
		return v, ok
	}, os.ReadFile); err == nil {
		t.Fatal("both NOETL_API_ROLES and NOETL_API_ROLES_FILE must be refused")
	}
	if c := parse(map[string]string{"K_SERVICE": "x"}); c.Profile != config.ProfileCloud || c.CredentialValues != "secretmanager" {
		t.Fatalf("Cloud Run defaults: profile %s, values %s", c.Profile, c.CredentialValues)
	}
	if c := parse(map[string]string{}); c.Profile != config.ProfileLocal || c.CredentialValues != "firestore" {
		t.Fatalf("local defaults: profile %s, values %s", c.Profile, c.CredentialValues)
	}
}
