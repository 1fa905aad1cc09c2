package terraform

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Credential values live in Secret Manager (README "Security"): only the
// functions that resolve keychains (execute, route, api, subscribe) may
// read a credential secret's value; the api alone adds and destroys
// versions; emit, materialize and dispatch hold no role on them. Every
// role is granted per credential secret (google_secret_manager_secret_iam_member
// over local.secret_bindings), never on the project, and the functions
// run in the cloud profile (NOETL_PROFILE=cloud: values from Secret
// Manager, the api refusing to serve without roles) with the roles of
// var.api_roles.
func TestCredentialSecretsIAM(t *testing.T) {
	m := load(t)
	roles := map[string][]string{}
	for fn, v := range m.local("secret_roles").AsValueMap() {
		roles[fn] = strs(v)
	}
	accessor, manager := "roles/secretmanager.secretAccessor", "roles/secretmanager.secretVersionManager"
	for _, fn := range []string{"execute", "route", "api", "subscribe"} {
		if !slices.Contains(roles[fn], accessor) {
			t.Errorf("%s resolves keychains but cannot read credential values", fn)
		}
	}
	for _, fn := range []string{"emit", "materialize", "dispatch"} {
		if len(roles[fn]) > 0 {
			t.Errorf("%s reads no credential value but holds %v", fn, roles[fn])
		}
	}
	for fn, rs := range roles {
		for _, r := range rs {
			if r != accessor && !(fn == "api" && r == manager) {
				t.Errorf("%s holds %s on credential secrets (only the api may manage versions)", fn, r)
			}
		}
	}
	b := m.resource("resource", "google_secret_manager_secret_iam_member", "credential")
	if m.attr(b.Body, "for_each") != "local.secret_bindings" || !strings.Contains(m.attr(b.Body, "secret_id"), "google_secret_manager_secret.credential[") {
		t.Error("credential roles must be bound per secret over local.secret_bindings")
	}
	for _, r := range strs(m.local("project_roles")) {
		if strings.HasPrefix(r, "roles/secretmanager.") {
			t.Errorf("project role %s would open every secret", r)
		}
	}
	env := m.text(m.locals["env"].Expr.Range())
	if !regexp.MustCompile(`NOETL_PROFILE\s*=\s*"cloud"`).MatchString(env) ||
		!regexp.MustCompile(`NOETL_API_ROLES\s*=\s*yamlencode\(merge\(var\.api_roles,.*google_service_account\.operator\.email`).MatchString(env) {
		t.Error(`local.env must set NOETL_PROFILE = "cloud" and NOETL_API_ROLES from var.api_roles with noetl-operator as admin`)
	}
}
