package terraform

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/deploy"
)

// refsTo lists, for every top-level block that references
// resourceType.name anywhere in its expressions, the block's kind and
// labels ("resource google_x.y", "locals", "output z").
func (m *module) refsTo(resourceType, name string) []string {
	var out []string
	for _, b := range m.blocks {
		found := false
		_ = hclsyntax.VisitAll(b.Body, func(n hclsyntax.Node) hcl.Diagnostics {
			e, ok := n.(hclsyntax.Expression)
			if !ok {
				return nil
			}
			for _, tr := range e.Variables() {
				if len(tr) >= 2 && tr.RootName() == resourceType {
					if a, ok := tr[1].(hcl.TraverseAttr); ok && a.Name == name {
						found = true
					}
				}
			}
			return nil
		})
		if found {
			out = append(out, b.Type+" "+strings.Join(b.Labels, "."))
		}
	}
	return out
}

// The runner's service account holds no role: nothing but the runner's
// own service refers to it, so no IAM member, binding or policy on the
// project, Firestore, Pub/Sub, Cloud Tasks, Secret Manager, the results
// bucket or anything else names it, and no local carries it into one.
func TestRunnerServiceAccountHasNoRoles(t *testing.T) {
	m := load(t)
	sa := m.resource("resource", "google_service_account", "runner")
	if got := m.static(sa.Body.Attributes["account_id"].Expr).AsString(); got != deploy.RunnerServiceAccount {
		t.Errorf("runner service account %q, manifest %q", got, deploy.RunnerServiceAccount)
	}
	refs := m.refsTo("google_service_account", "runner")
	if len(refs) != 1 || refs[0] != "resource google_cloud_run_v2_service.runner" {
		t.Fatalf("google_service_account.runner is referenced by %v, want only by the runner's service (its identity): the runner holds no role", refs)
	}
	svc := m.resource("resource", "google_cloud_run_v2_service", "runner")
	if m.attr(child(svc.Body, "template").Body, "service_account") != "google_service_account.runner.email" {
		t.Error("the runner's service must run as google_service_account.runner")
	}
	// Every IAM grant of the deployment names a function's, the tasks',
	// the push or the build account, never the runner's.
	for _, b := range m.blocks {
		if b.Type != "resource" || !strings.Contains(b.Labels[0], "_iam_") {
			continue
		}
		src := m.text(b.Body.Range())
		for _, scope := range []string{"firestore", "datastore", "pubsub", "cloudtasks", "cloud_tasks", "secret_manager", "secretmanager", "storage", "project"} {
			if strings.Contains(b.Labels[0], scope) && strings.Contains(src, "runner") {
				t.Errorf("%s.%s (an IAM grant on %s) mentions the runner", b.Labels[0], b.Labels[1], scope)
			}
		}
	}
}

// Only execute's service account may invoke the runner: one run.invoker
// grant on the service, to that account, and no other grant on it.
func TestOnlyExecuteInvokesRunner(t *testing.T) {
	m := load(t)
	refs := m.refsTo("google_cloud_run_v2_service", "runner")
	var grants []string
	for _, r := range refs {
		if strings.Contains(r, "_iam_") {
			grants = append(grants, r)
		}
	}
	if len(grants) != 1 || grants[0] != "resource google_cloud_run_v2_service_iam_member.runner_invoker" {
		t.Fatalf("IAM grants on the runner's service: %v, want only runner_invoker", grants)
	}
	g := m.resource("resource", "google_cloud_run_v2_service_iam_member", "runner_invoker").Body
	if m.attr(g, "role") != `"roles/run.invoker"` || m.attr(g, "member") != `google_service_account.fn["`+deploy.RunnerInvoker+`"].member` {
		t.Errorf("runner invoker: role %s member %s, want roles/run.invoker for execute's account", m.attr(g, "role"), m.attr(g, "member"))
	}
	if _, ok := g.Attributes["for_each"]; ok {
		t.Error("the runner's invoker grant must be one member, not a set")
	}
	svc := m.resource("resource", "google_cloud_run_v2_service", "runner")
	if got := m.static(svc.Body.Attributes["name"].Expr).AsString(); got != deploy.RunnerService {
		t.Errorf("runner service %q, manifest %q", got, deploy.RunnerService)
	}
}

// The runner's service: second-generation environment (namespaces and
// control groups for the per-task sandbox), one request per instance by
// default, the image of runner/Dockerfile, an environment of knobs only
// and no secret; execute points at it.
func TestRunnerService(t *testing.T) {
	m := load(t)
	tpl := child(m.resource("resource", "google_cloud_run_v2_service", "runner").Body, "template").Body
	if m.attr(tpl, "execution_environment") != `"EXECUTION_ENVIRONMENT_GEN2"` {
		t.Error("the runner needs the second-generation execution environment (namespaces, cgroups)")
	}
	if m.attr(tpl, "max_instance_request_concurrency") != "var.runner.concurrency" ||
		!strings.Contains(m.text(m.variable("runner").Body.Range()), "concurrency      = optional(number, 1)") {
		t.Error("the runner's concurrency must be var.runner.concurrency, default 1")
	}
	c := child(tpl, "containers").Body
	if m.attr(c, "image") != "local.runner_image" {
		t.Error("the runner runs local.runner_image")
	}
	env := child(c, "dynamic")
	if env == nil || env.Labels[0] != "env" || m.attr(env.Body, "for_each") != "local.runner_env" {
		t.Fatal("the runner's environment must be local.runner_env")
	}
	if strings.Contains(m.text(c.Range()), "value_source") {
		t.Error("the runner's container reads a secret: it holds none")
	}
	call, ok := m.locals["runner_env"].Expr.(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "merge" {
		t.Fatal("local.runner_env must be merge({...}, var.runner.extra_env)")
	}
	vals := map[string]string{}
	for _, it := range call.Args[0].(*hclsyntax.ObjectConsExpr).Items {
		k := m.static(it.KeyExpr).AsString()
		vals[k] = m.text(it.ValueExpr.Range())
		kb, known := config.ByEnv(k)
		if !known {
			t.Errorf("the runner gets %s, which the code does not read", k)
		} else if kb.Secret {
			t.Errorf("the runner gets the secret knob %s", k)
		}
	}
	for k, want := range map[string]string{
		"NOETL_RUNNER_AUDIENCE": "local.runner_url",
		"NOETL_RUNNER_INVOKER":  `google_service_account.fn["execute"].email`,
		"NOETL_EGRESS_PROFILE":  `"cloud"`,
	} {
		if vals[k] != want {
			t.Errorf("runner %s = %s, want %s", k, vals[k], want)
		}
	}
	if !strings.Contains(vals["NOETL_EGRESS_DENY"], "local.run_url") {
		t.Error("the runner's egress policy must deny the functions' own URLs")
	}
	// execute calls it.
	obj := m.locals["env"].Expr.(*hclsyntax.FunctionCallExpr).Args[0].(*hclsyntax.ObjectConsExpr)
	fnEnv := map[string]string{}
	for _, it := range obj.Items {
		fnEnv[m.static(it.KeyExpr).AsString()] = m.text(it.ValueExpr.Range())
	}
	if fnEnv["NOETL_RUNNER_URL"] != "local.runner_url" || fnEnv["NOETL_RUNNER_AUDIENCE"] != "local.runner_url" || fnEnv["NOETL_RUNNER_INVOKER"] != `google_service_account.fn["execute"].email` {
		t.Errorf("execute's runner settings: url %s audience %s invoker %s", fnEnv["NOETL_RUNNER_URL"], fnEnv["NOETL_RUNNER_AUDIENCE"], fnEnv["NOETL_RUNNER_INVOKER"])
	}
	if m.text(m.locals["runner_url"].Expr.Range()) != `"https://noetl-runner-${data.google_project.this.number}.${var.region}.run.app"` {
		t.Error("local.runner_url must be the runner service's deterministic URL")
	}
}
