package credentials_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/credentials"
)

func TestGranted(t *testing.T) {
	catalog := func(p string) credentials.Grantee { return credentials.Grantee{Path: p, Creator: "alice@example.com"} }
	inline := func(who string) credentials.Grantee { return credentials.Grantee{Creator: who} }
	cases := []struct {
		grants []string
		g      credentials.Grantee
		want   bool
	}{
		{[]string{"examples/*"}, catalog("examples/keychain.yaml"), true},
		{[]string{"examples/*"}, catalog("examples/keychain"), true},
		{[]string{"examples/keychain"}, catalog("examples/keychain.yaml"), true}, // without the extension
		{[]string{"examples/keychain"}, catalog("examples/keychain.yml"), true},
		{[]string{"examples/*"}, catalog("examples/sub/x.yaml"), false}, // * stays in one segment
		{[]string{"examples/**"}, catalog("examples/sub/x.yaml"), true},
		{[]string{"tests/fixtures/**"}, catalog("tests/fixtures/playbooks/a/b"), true},
		{[]string{"tests/fixtures/**"}, catalog("tests/fixturesX/a"), false},
		{[]string{"examples/*"}, catalog("examples/../secret/x.yaml"), false}, // cleaned: secret/x.yaml
		{[]string{"secret/*"}, catalog("examples/../secret/x.yaml"), true},
		{[]string{"**"}, catalog("/etc/passwd"), false}, // a path leaving the root matches nothing
		{[]string{"**"}, catalog("../x"), false},
		{[]string{"**"}, catalog("any/catalog/path"), true},
		// Inline playbooks match inline grants only, by their principal;
		// never a path grant, whatever metadata.path they claim.
		{[]string{"**"}, inline("alice@example.com"), false},
		{[]string{"examples/*"}, inline("alice@example.com"), false},
		{[]string{"inline:alice@example.com"}, inline("ALICE@example.com"), true},
		{[]string{"inline:*@example.com"}, inline("bob@example.com"), true},
		{[]string{"inline:*@example.com"}, inline("bob@example.com.evil.org"), false},
		{[]string{"inline:*"}, inline("anyone"), true},
		{[]string{"inline:*"}, inline(""), false}, // no recorded principal
		{[]string{"inline:token"}, catalog("examples/x"), false},
		{nil, catalog("examples/x"), false},
		{[]string{}, inline("token"), false},
	}
	for _, c := range cases {
		if got := credentials.Granted(c.grants, c.g); got != c.want {
			t.Errorf("Granted(%q, %+v) = %v, want %v", c.grants, c.g, got, c.want)
		}
	}
}

func TestValidateGrant(t *testing.T) {
	for _, ok := range []string{"examples/*", "tests/fixtures/**", "**", "a/b.yaml", "inline:token", "inline:*@example.com", "inline:*", "x/{a,b}/*"} {
		if err := credentials.ValidateGrant(ok); err != nil {
			t.Errorf("ValidateGrant(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", " x", "/abs", "a/../b", "./a", "a//b", "a/", "a\\b", "inline:", "inline:a/b", "x/[a", "inline:[a"} {
		if err := credentials.ValidateGrant(bad); !errors.Is(err, credentials.ErrInvalid) {
			t.Errorf("ValidateGrant(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// Guard gives a credential's values only to the grantee in the context,
// refusing with a *NotGrantedError naming the credential, the grantee and
// the grants; without a grantee it refuses everything.
func TestGuard(t *testing.T) {
	m := credentials.NewMemory()
	ctx := context.Background()
	if err := m.CredentialPut(ctx, credentials.Credential{Name: "pg", Kind: "postgres", Grants: []string{"examples/*", "inline:ops@example.com"},
		Data: map[string]any{"host": "db", "password": "pw"}}); err != nil {
		t.Fatal(err)
	}
	g := credentials.Guard(m)
	ok := credentials.WithGrantee(ctx, credentials.Grantee{Path: "examples/etl.yaml"})
	if c, err := g.CredentialGet(ok, "pg"); err != nil || c.Data["password"] != "pw" {
		t.Fatalf("granted read = %v, %v", c, err)
	}
	if c, err := g.CredentialGet(credentials.WithGrantee(ctx, credentials.Grantee{Creator: "ops@example.com"}), "pg"); err != nil || c == nil {
		t.Fatalf("granted inline read = %v, %v", c, err)
	}
	_, err := g.CredentialGet(credentials.WithGrantee(ctx, credentials.Grantee{Creator: "mallory@example.com"}), "pg")
	var ng *credentials.NotGrantedError
	if !errors.As(err, &ng) || !errors.Is(err, credentials.ErrNotGranted) {
		t.Fatalf("ungranted read = %v, want a NotGrantedError", err)
	}
	want := `credential "pg" is not granted to inline playbooks of "mallory@example.com" (its grants are examples/*, inline:ops@example.com;`
	if !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %q\nwant prefix %q", err, want)
	}
	if _, err := g.CredentialGet(ctx, "pg"); !errors.Is(err, credentials.ErrNotGranted) {
		t.Fatalf("read without a grantee = %v, want ErrNotGranted", err)
	}
	if _, err := g.CredentialGet(ok, "missing"); !errors.Is(err, credentials.ErrNotFound) {
		t.Fatalf("missing credential = %v, want ErrNotFound", err)
	}
	// Resolve (the keychain) through the guard refuses the same way.
	_, err = credentials.Resolve(credentials.WithGrantee(ctx, credentials.Grantee{Path: "other/x"}), g, []any{map[string]any{"name": "db", "credential": "pg"}}, nil)
	if !errors.Is(err, credentials.ErrNotGranted) || !strings.Contains(err.Error(), `keychain db: credential "pg" is not granted to playbook "other/x"`) {
		t.Fatalf("Resolve = %v", err)
	}
}
