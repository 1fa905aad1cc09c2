package terraform

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The api accepts identity tokens whose audience is its deterministic
// Cloud Run URL (NOETL_API_AUDIENCES = local.run_url of api and emit), and
// api_url/emit_url are exactly those URLs: a token minted with
// --audiences="$(terraform output -raw api_url)" is accepted.
// service_config[0].uri may be the hash form of the URL, which the api
// would refuse as an audience.
func TestOutputsAreTheAcceptedAudiences(t *testing.T) {
	m := load(t)
	want := `"https://noetl-${name}-${data.google_project.this.number}.${var.region}.run.app"`
	runURL := m.text(m.locals["run_url"].Expr.Range())
	if !strings.Contains(runURL, "=> "+want) || !strings.Contains(runURL, "for name in keys(local.functions)") {
		t.Errorf("local.run_url = %s, want each function's deterministic Cloud Run URL %s", runURL, want)
	}
	for _, fn := range []string{"api", "emit"} {
		out := m.resource2("output", fn+"_url")
		if got := m.attr(out.Body, "value"); got != `local.run_url["`+fn+`"]` {
			t.Errorf("output %s_url = %s, want local.run_url[%q] (the audience %s accepts)", fn, got, fn, fn)
		}
	}
	env := envItems(m)
	if got := env["NOETL_API_AUDIENCES"]; got != `join(",", [local.run_url["api"], local.run_url["emit"]])` {
		t.Errorf("NOETL_API_AUDIENCES = %s, want the api's and emit's run_url", got)
	}
	// No output or URL hands out the hash form for callers.
	for f, src := range m.src {
		if strings.Contains(string(src), `fn["api"].service_config[0].uri`) || strings.Contains(string(src), `fn["emit"].service_config[0].uri`) {
			t.Errorf("%s uses the api's or emit's service_config uri (possibly the hash URL, not an accepted audience)", f)
		}
	}
	// People call through the operator account, which may invoke both.
	inv := m.text(m.locals["invoker_members"].Expr.Range())
	if !strings.Contains(inv, `for fn in ["api", "emit"] : "${fn}/operator" => { fn = fn, member = google_service_account.operator.member }`) {
		t.Error("local.invoker_members must let noetl-operator invoke api and emit")
	}
	tc := m.resource("resource", "google_service_account_iam_member", "operator_token_creator")
	if m.attr(tc.Body, "for_each") != "toset(var.operators)" || m.attr(tc.Body, "role") != `"roles/iam.serviceAccountTokenCreator"` ||
		m.attr(tc.Body, "service_account_id") != "google_service_account.operator.name" {
		t.Error("var.operators must be able to mint tokens of noetl-operator (roles/iam.serviceAccountTokenCreator on it)")
	}
	if got := m.attr(m.resource2("output", "operator_service_account").Body, "value"); got != "google_service_account.operator.email" {
		t.Errorf("output operator_service_account = %s", got)
	}
}

// resource2 returns the block kind.name of a one-label block (output,
// variable).
func (m *module) resource2(kind, name string) *hclsyntax.Block {
	m.t.Helper()
	for _, b := range m.blocks {
		if b.Type == kind && len(b.Labels) == 1 && b.Labels[0] == name {
			return b
		}
	}
	m.t.Fatalf("%s %s is not declared", kind, name)
	return nil
}

// envItems returns local.env's first argument's items: name → source.
func envItems(m *module) map[string]string {
	m.t.Helper()
	call, ok := m.locals["env"].Expr.(*hclsyntax.FunctionCallExpr)
	if !ok || len(call.Args) != 2 {
		m.t.Fatal("local.env must be merge({...}, var.extra_env)")
	}
	obj, ok := call.Args[0].(*hclsyntax.ObjectConsExpr)
	if !ok {
		m.t.Fatal("local.env's first argument must be an object")
	}
	env := map[string]string{}
	for _, it := range obj.Items {
		env[m.static(it.KeyExpr).AsString()] = m.text(it.ValueExpr.Range())
	}
	return env
}

// The functions: Cloud Functions adds LOG_EXECUTION_ID to every gen2
// function's environment (a plan would otherwise redeploy them all), and
// a revision that reads the api token waits for its grant.
func TestFunctionLifecycle(t *testing.T) {
	m := load(t)
	fn := m.resource("resource", "google_cloudfunctions2_function", "fn")
	lc := child(fn.Body, "lifecycle")
	if lc == nil || m.attr(lc.Body, "ignore_changes") != `[service_config[0].environment_variables["LOG_EXECUTION_ID"]]` {
		t.Error(`google_cloudfunctions2_function.fn must ignore_changes = [service_config[0].environment_variables["LOG_EXECUTION_ID"]]`)
	}
	deps := m.attr(fn.Body, "depends_on")
	for _, d := range []string{"google_secret_manager_secret_iam_member.signing_key", "google_secret_manager_secret_iam_member.api_token", "google_project_iam_member.fn"} {
		if !strings.Contains(deps, d) {
			t.Errorf("the functions must depend on %s (their revisions read secrets / need their roles at start)", d)
		}
	}
	if _, ok := envItems(m)["LOG_EXECUTION_ID"]; ok {
		t.Error("LOG_EXECUTION_ID belongs to the platform, not local.env")
	}
}

// minVersions are the provider versions that introduced what this
// configuration uses (provider changelogs).
var minVersions = map[string]struct {
	version string
	why     string
}{
	"random":  {"3.6.0", "resource random_bytes (random 3.6.0, December 2023)"},
	"archive": {"2.4.0", "archive_file excludes with doublestar globs (archive 2.4.0)"},
	"google":  {"8.0.0", "validated against 8.0 by scripts/check-terraform"},
}

// The provider constraints admit no version older than what the
// configuration needs, and admit the versions scripts/check-terraform
// builds and validates with.
func TestProviderVersions(t *testing.T) {
	m := load(t)
	var tf *hclsyntax.Block
	for _, b := range m.blocks {
		if b.Type == "terraform" {
			tf = b
		}
	}
	if tf == nil || child(tf.Body, "required_providers") == nil {
		t.Fatal("no terraform { required_providers } block")
	}
	rp := child(tf.Body, "required_providers").Body
	script, err := os.ReadFile("../scripts/check-terraform")
	if err != nil {
		t.Fatal(err)
	}
	pins := regexp.MustCompile(`(?m)^\s*"(\w+) (\d+\.\d+\.\d+) (\S+)@(\S+)"`).FindAllStringSubmatch(string(script), -1)
	built := map[string]string{}
	for _, p := range pins {
		built[p[1]] = p[2]
	}
	for name, min := range minVersions {
		a, ok := rp.Attributes[name]
		if !ok {
			t.Errorf("required_providers lacks %s", name)
			continue
		}
		obj := m.static(a.Expr).AsValueMap()
		c := obj["version"].AsString()
		if !admits(c, min.version) || lowerBound(c) == "" || less(lowerBound(c), min.version) {
			t.Errorf("%s constraint %q admits versions older than %s, which %s needs", name, c, min.version, min.why)
		}
		if v, ok := built[name]; !ok {
			t.Errorf("scripts/check-terraform does not build %s", name)
		} else if !admits(c, v) {
			t.Errorf("%s constraint %q does not admit %s, the version scripts/check-terraform validates with", name, c, v)
		}
	}
	if len(built) != len(minVersions) {
		t.Errorf("scripts/check-terraform builds %v, the configuration uses %d providers", built, len(minVersions))
	}
}

// lowerBound returns the version of a constraint's ">=" term.
func lowerBound(c string) string {
	for _, term := range strings.Split(c, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(term), ">="); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// admits evaluates a constraint made of ">=", "<" and "~>" terms.
func admits(c, v string) bool {
	for _, term := range strings.Split(c, ",") {
		term = strings.TrimSpace(term)
		switch {
		case strings.HasPrefix(term, ">="):
			if less(v, strings.TrimSpace(term[2:])) {
				return false
			}
		case strings.HasPrefix(term, "<"):
			if !less(v, strings.TrimSpace(term[1:])) {
				return false
			}
		default:
			return false // not used here
		}
	}
	return true
}

// less compares dotted versions numerically (missing parts are 0).
func less(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}
