package terraform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/deploy"
)

// deploySection returns docs/deploy.md, the "Deploy to GCP" page.
func deploySection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "# Deploy to GCP\n") {
		t.Fatal(`docs/deploy.md does not start with "# Deploy to GCP"`)
	}
	return s
}

// docs are the texts that give deployment commands: docs/deploy.md and the
// runbooks.
func docs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{"docs/deploy.md": deploySection(t)}
	rb, _ := filepath.Glob("../infra/runbooks/*.md")
	for _, f := range rb {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}

func (m *module) has(kind, name string) bool {
	for _, b := range m.blocks {
		if b.Type == kind && len(b.Labels) == 1 && b.Labels[0] == name {
			return true
		}
	}
	return false
}

// The deployment documentation names outputs, variables, knobs,
// environment variables of the CLI and resources that exist: every
// `terraform output -raw X`, every var.X, every NOETL_* variable, the
// function, subscription and queue names of its gcloud commands, and the
// dashboard it points to.
func TestDeployDocsNameWhatExists(t *testing.T) {
	m := load(t)
	cliEnv := map[string]bool{}
	cli, _ := filepath.Glob("../cmd/noetl/*.go")
	for _, f := range cli {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, _ := os.ReadFile(f)
		for _, mm := range regexp.MustCompile(`a\.env\("(NOETL_[A-Z0-9_]+)"\)`).FindAllStringSubmatch(string(b), -1) {
			cliEnv[mm[1]] = true
		}
	}
	if !cliEnv["NOETL_API_URL"] || !cliEnv["NOETL_IMPERSONATE_SERVICE_ACCOUNT"] {
		t.Fatalf("the CLI reads %v: expected NOETL_API_URL and NOETL_IMPERSONATE_SERVICE_ACCOUNT", cliEnv)
	}
	// Variables read outside the config registry: telemetry's (README
	// Observability) and the local stack's (scripts/up).
	for _, glob := range []string{"../shared/telemetry/*.go", "../emulators/stack/config.go"} {
		fs, _ := filepath.Glob(glob)
		for _, f := range fs {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, _ := os.ReadFile(f)
			for _, v := range regexp.MustCompile(`"(NOETL_[A-Z0-9_]+)"`).FindAllStringSubmatch(string(b), -1) {
				cliEnv[v[1]] = true
			}
		}
	}
	for where, s := range docs(t) {
		for _, mm := range regexp.MustCompile(`terraform(?: -chdir=\S+)? output -raw ([a-z_]+)`).FindAllStringSubmatch(s, -1) {
			if !m.has("output", mm[1]) {
				t.Errorf("%s: output %s is not declared in terraform/", where, mm[1])
			}
		}
		for _, mm := range regexp.MustCompile(`\bvar\.([a-z_]+)`).FindAllStringSubmatch(s, -1) {
			if !m.has("variable", mm[1]) {
				t.Errorf("%s: variable %s is not declared in terraform/", where, mm[1])
			}
		}
		for _, v := range regexp.MustCompile(`\bNOETL_[A-Z0-9_]+\b`).FindAllString(s, -1) {
			if _, ok := config.ByEnv(v); !ok && !cliEnv[v] {
				t.Errorf("%s: %s is neither a knob (shared/config) nor read by scripts/noetl", where, v)
			}
		}
		for _, mm := range regexp.MustCompile(`gcloud functions \w+ noetl-([a-z]+)`).FindAllStringSubmatch(s, -1) {
			if _, ok := deploy.FunctionByName(mm[1]); !ok {
				t.Errorf("%s: noetl-%s is not a function", where, mm[1])
			}
		}
		for _, mm := range regexp.MustCompile(`gcloud pubsub subscriptions pull ([a-z-]+)`).FindAllStringSubmatch(s, -1) {
			if !slices.ContainsFunc(deploy.Subscriptions, func(x deploy.Subscription) bool { return x.Name == mm[1] && x.Push == "" }) {
				t.Errorf("%s: %s is not a pull subscription of the deployment", where, mm[1])
			}
		}
		for _, mm := range regexp.MustCompile(`--queue=([a-z]+)`).FindAllStringSubmatch(s, -1) {
			if !slices.Contains(deploy.Queues, mm[1]) {
				t.Errorf("%s: queue %s does not exist", where, mm[1])
			}
		}
	}
	s := deploySection(t)
	var dash struct{ DisplayName string }
	b, err := os.ReadFile("../infra/monitoring/dashboards/noetl.json")
	if err != nil || json.Unmarshal(b, &dash) != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, `"`+dash.DisplayName+`"`) {
		t.Errorf("the Deploy section does not name the dashboard %q", dash.DisplayName)
	}
	// The outputs the section says apply prints exist.
	if mm := regexp.MustCompile("It prints ((?:`[a-z_]+`,? (?:and )?)+)").FindStringSubmatch(s); mm == nil {
		t.Error(`the Deploy section does not list the outputs ("It prints ...")`)
	} else {
		for _, o := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(mm[1], -1) {
			if !m.has("output", o[1]) {
				t.Errorf("the Deploy section lists output %s, which is not declared", o[1])
			}
		}
	}
}

// The bootstrap enables exactly the APIs Terraform cannot enable itself
// (deploy.Services marked Bootstrap) and creates the Pub/Sub service
// agent iam.tf grants roles to; the variables the section tells a
// newcomer to set, and those of terraform.tfvars.example, are declared.
func TestDeployBootstrapAndVariables(t *testing.T) {
	m := load(t)
	s := deploySection(t)
	mm := regexp.MustCompile(`gcloud services enable ([a-z. ]+?) --project`).FindStringSubmatch(s)
	if mm == nil {
		t.Fatal("the Deploy section has no `gcloud services enable ... --project` bootstrap")
	}
	got := strings.Fields(mm[1])
	var want []string
	for _, svc := range deploy.Services {
		if svc.Bootstrap {
			want = append(want, svc.Name)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the bootstrap enables %v, deploy.Services marks %v", got, want)
	}
	if !strings.Contains(s, "gcloud beta services identity create --service=pubsub.googleapis.com") {
		t.Error("the bootstrap must create the Pub/Sub service agent (gcloud beta services identity create --service=pubsub.googleapis.com)")
	}
	if !strings.Contains(s, "service-NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com") ||
		!strings.Contains(m.text(m.locals["pubsub_agent"].Expr.Range()), "service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com") {
		t.Error("the service agent the bootstrap creates is the one iam.tf grants roles to")
	}
	for _, v := range []string{"project", "region", "operators"} {
		if !strings.Contains(s, "`"+v+"`") || !m.has("variable", v) {
			t.Errorf("the Deploy section must tell to set %s, a declared variable", v)
		}
	}
	b, err := os.ReadFile("terraform.tfvars.example")
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclsyntax.ParseConfig(b, "terraform.tfvars.example", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for name := range f.Body.(*hclsyntax.Body).Attributes {
		if !m.has("variable", name) {
			t.Errorf("terraform.tfvars.example sets %s, which is not a variable", name)
		}
	}
	if _, ok := f.Body.(*hclsyntax.Body).Attributes["operators"]; !ok {
		t.Error("terraform.tfvars.example must show operators (people call the api through noetl-operator)")
	}
}

// The documented way to call the api works: the token's audience is the
// api_url output (the URL the api accepts, TestOutputsAreTheAcceptedAudiences),
// it carries the email the api requires, and people mint it as the
// operator account.
func TestDeployDocsMintTheAcceptedToken(t *testing.T) {
	s := strings.Join(strings.Fields(deploySection(t)), " ")
	for _, want := range []string{
		`export NOETL_API_URL="$(terraform output -raw api_url)"`,
		`export NOETL_IMPERSONATE_SERVICE_ACCOUNT="$(terraform output -raw operator_service_account)"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the Deploy section lacks %s", want)
		}
	}
	mints := regexp.MustCompile("gcloud auth print-identity-token[^)`]*").FindAllString(s, -1)
	if len(mints) == 0 {
		t.Fatal("the Deploy section mints no identity token")
	}
	for _, line := range mints {
		if strings.Contains(line, "<api url>") {
			continue // the CLI's own command, quoted
		}
		for _, flag := range []string{`--audiences="$NOETL_API_URL"`, "--include-email"} {
			if !strings.Contains(line, flag) {
				t.Errorf("%q: the api refuses a token without %s", line, flag)
			}
		}
	}
	for where, text := range docs(t) {
		text = strings.Join(strings.Fields(text), " ")
		for _, line := range regexp.MustCompile(`gcloud auth print-identity-token[^)`+"`"+`]*`).FindAllString(text, -1) {
			if strings.Contains(line, "<api url>") {
				continue
			}
			if !strings.Contains(line, "--audiences=") || !strings.Contains(line, "--include-email") {
				t.Errorf("%s: %q mints a token the api refuses (audience and email needed)", where, strings.TrimSpace(line))
			}
		}
	}
}
