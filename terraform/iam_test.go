package terraform

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/deploy"
)

// binding describes how one IAM resource of iam.tf (or another file)
// grants roles to the functions' service accounts: the resource, the
// shape its for_each, role and member must have, and the grants it makes
// (principal → grants). To grant a new principal (a runner's account),
// add its rows here and its operations to deploy.Access.
type binding struct {
	typ, name string
	// want are attribute texts the resource must have (for_each, role,
	// member): the collector below relies on them.
	want   map[string]string
	grants func(m *module) map[string][]deploy.Grant
}

// perFunction turns local name (fn → string or list of strings) into
// grants on res, the values being roles (role "" = the value is the
// resource suffix and role is fixed).
func perFunction(m *module, local string, res func(v string) deploy.Resource, role func(v string) string) map[string][]deploy.Grant {
	out := map[string][]deploy.Grant{}
	for fn, v := range m.local(local).AsValueMap() {
		var vals []string
		if v.Type().IsPrimitiveType() {
			vals = []string{v.AsString()}
		} else {
			vals = strs(v)
		}
		for _, x := range vals {
			out[fn] = append(out[fn], deploy.Grant{Resource: res(x), Role: role(x)})
		}
	}
	return out
}

func fixed(r deploy.Resource) func(string) deploy.Resource {
	return func(string) deploy.Resource { return r }
}
func ident(s string) string             { return s }
func role(r string) func(string) string { return func(string) string { return r } }

// allFunctions gives every function the same grant.
func allFunctions(g deploy.Grant) map[string][]deploy.Grant {
	out := map[string][]deploy.Grant{}
	for _, f := range deploy.Functions {
		out[f.Name] = []deploy.Grant{g}
	}
	return out
}

var bindings = []binding{
	{typ: "google_project_iam_member", name: "fn",
		want: map[string]string{"for_each": "local.project_bindings", "role": "each.value.role", "member": "google_service_account.fn[each.value.fn].member"},
		grants: func(m *module) map[string][]deploy.Grant {
			if !strings.Contains(m.text(m.locals["project_bindings"].Expr.Range()), "setproduct(keys(local.functions), local.project_roles)") {
				m.t.Error("local.project_bindings must give every function every role of local.project_roles")
			}
			out := map[string][]deploy.Grant{}
			for _, f := range deploy.Functions {
				for _, r := range strs(m.local("project_roles")) {
					out[f.Name] = append(out[f.Name], deploy.Grant{Resource: deploy.ResProject, Role: r})
				}
			}
			return out
		}},
	{typ: "google_pubsub_topic_iam_member", name: "publisher",
		want: map[string]string{"for_each": "local.topic_bindings", "role": `"roles/pubsub.publisher"`, "member": "google_service_account.fn[each.value.fn].member", "topic": "google_pubsub_topic.topic[each.value.topic].id"},
		grants: func(m *module) map[string][]deploy.Grant {
			return perFunction(m, "publishes", func(t string) deploy.Resource { return deploy.Resource("topic:" + t) }, role("roles/pubsub.publisher"))
		}},
	{typ: "google_cloud_tasks_queue_iam_member", name: "fn",
		want: map[string]string{"for_each": "local.queue_bindings", "role": "each.value.role", "member": "google_service_account.fn[each.value.fn].member"},
		grants: func(m *module) map[string][]deploy.Grant {
			if !strings.Contains(m.text(m.locals["queue_bindings"].Expr.Range()), "setproduct(local.queues, roles)") {
				m.t.Error("local.queue_bindings must grant each role on every queue")
			}
			return perFunction(m, "queue_roles", fixed(deploy.ResQueues), ident)
		}},
	{typ: "google_service_account_iam_member", name: "tasks_user",
		want: map[string]string{"for_each": "local.queue_roles", "role": `"roles/iam.serviceAccountUser"`, "member": "google_service_account.fn[each.key].member", "service_account_id": "google_service_account.tasks.name"},
		grants: func(m *module) map[string][]deploy.Grant {
			out := map[string][]deploy.Grant{}
			for fn := range m.local("queue_roles").AsValueMap() {
				out[fn] = []deploy.Grant{{Resource: deploy.ResTasksAccount, Role: "roles/iam.serviceAccountUser"}}
			}
			return out
		}},
	{typ: "google_service_account_iam_member", name: "execute_signs_grants",
		want: map[string]string{"role": `"roles/iam.serviceAccountTokenCreator"`, "member": `google_service_account.fn["execute"].member`, "service_account_id": `google_service_account.fn["execute"].name`},
		grants: func(m *module) map[string][]deploy.Grant {
			return map[string][]deploy.Grant{"execute": {{Resource: deploy.ResExecuteAccount, Role: "roles/iam.serviceAccountTokenCreator"}}}
		}},
	{typ: "google_storage_bucket_iam_member", name: "results",
		want: map[string]string{"for_each": "local.bucket_roles", "role": "each.value", "member": "google_service_account.fn[each.key].member", "bucket": "google_storage_bucket.results.name"},
		grants: func(m *module) map[string][]deploy.Grant {
			return perFunction(m, "bucket_roles", fixed(deploy.ResResultsBucket), ident)
		}},
	{typ: "google_secret_manager_secret_iam_member", name: "credential",
		want: map[string]string{"for_each": "local.secret_bindings", "role": "each.value.role", "member": "google_service_account.fn[each.value.fn].member"},
		grants: func(m *module) map[string][]deploy.Grant {
			return perFunction(m, "secret_roles", fixed(deploy.ResCredentials), ident)
		}},
	{typ: "google_secret_manager_secret_iam_member", name: "signing_key",
		want: map[string]string{"for_each": "local.functions", "role": `"roles/secretmanager.secretAccessor"`, "member": "google_service_account.fn[each.key].member", "secret_id": "google_secret_manager_secret.signing_key.secret_id"},
		grants: func(*module) map[string][]deploy.Grant {
			return allFunctions(deploy.Grant{Resource: deploy.ResSigningKey, Role: "roles/secretmanager.secretAccessor"})
		}},
	{typ: "google_secret_manager_secret_iam_member", name: "api_token",
		want: map[string]string{"role": `"roles/secretmanager.secretAccessor"`, "member": "google_service_account.fn[each.value].member", "secret_id": "var.api_token_secret"},
		grants: func(m *module) map[string][]deploy.Grant {
			fe := m.attr(m.resource("resource", "google_secret_manager_secret_iam_member", "api_token").Body, "for_each")
			mm := regexp.MustCompile(`toset\(\[([^\]]*)\]\)\s*$`).FindStringSubmatch(fe)
			if mm == nil {
				m.t.Fatalf("api_token: for_each %s: want ... : toset([functions])", fe)
			}
			out := map[string][]deploy.Grant{}
			for _, q := range regexp.MustCompile(`"(\w+)"`).FindAllStringSubmatch(mm[1], -1) {
				out[q[1]] = []deploy.Grant{{Resource: deploy.ResAPIToken, Role: "roles/secretmanager.secretAccessor"}}
			}
			return out
		}},
	{typ: "google_pubsub_subscription_iam_member", name: "registered",
		want: map[string]string{"for_each": "local.registered_bindings", "role": "each.value.role", "member": "google_service_account.fn[each.value.fn].member"},
		grants: func(m *module) map[string][]deploy.Grant {
			out := map[string][]deploy.Grant{}
			for _, q := range regexp.MustCompile(`fn = "(\w+)", role = "([^"]+)"`).FindAllStringSubmatch(m.text(m.locals["registered_bindings"].Expr.Range()), -1) {
				out[q[1]] = append(out[q[1]], deploy.Grant{Resource: deploy.ResRegisteredSubscriptions, Role: q[2]})
			}
			return out
		}},
	{typ: "google_service_account_iam_member", name: "api_push_user",
		want: map[string]string{"role": `"roles/iam.serviceAccountUser"`, "member": `google_service_account.fn["api"].member`, "service_account_id": "google_service_account.push.name"},
		grants: func(*module) map[string][]deploy.Grant {
			return map[string][]deploy.Grant{"api": {{Resource: deploy.ResPushAccount, Role: "roles/iam.serviceAccountUser"}}}
		}},
	{typ: "google_cloud_run_v2_service_iam_member", name: "runner_invoker",
		want: map[string]string{"role": `"roles/run.invoker"`, "member": `google_service_account.fn["execute"].member`, "name": "google_cloud_run_v2_service.runner.name"},
		grants: func(*module) map[string][]deploy.Grant {
			return map[string][]deploy.Grant{"execute": {{Resource: deploy.ResRunner, Role: "roles/run.invoker"}}}
		}},
	{typ: "google_pubsub_subscription_iam_member", name: "replay",
		want: map[string]string{"role": `"roles/pubsub.subscriber"`, "member": `google_service_account.fn["api"].member`, "subscription": "google_pubsub_subscription.replay.id"},
		grants: func(*module) map[string][]deploy.Grant {
			return map[string][]deploy.Grant{"api": {{Resource: deploy.ResReplaySubscription, Role: "roles/pubsub.subscriber"}}}
		}},
	{typ: "google_storage_bucket_iam_member", name: "spool",
		want: map[string]string{"role": `"roles/storage.objectAdmin"`, "member": `google_service_account.fn["subscribe"].member`},
		grants: func(*module) map[string][]deploy.Grant {
			return map[string][]deploy.Grant{"subscribe": {{Resource: deploy.ResSpoolBuckets, Role: "roles/storage.objectAdmin"}}}
		}},
}

// TestIAMMatchesAccessTable collects every grant terraform/ makes to a
// function's service account and compares it with the IAM table of
// shared/deploy (deploy.Grants: the roles of the operations the code
// performs, checked against the code by shared/wiring
// TestAccessCoversTheCode): nothing missing (a 403 at run time), nothing
// more (least privilege). An IAM resource granting to a function's
// account that is not described in bindings fails too.
func TestIAMMatchesAccessTable(t *testing.T) {
	m := load(t)
	got := map[string][]deploy.Grant{}
	known := map[string]bool{}
	for _, b := range bindings {
		known[b.typ+"."+b.name] = true
		r := m.resource("resource", b.typ, b.name)
		for attr, want := range b.want {
			if got := m.attr(r.Body, attr); got != want {
				t.Errorf("%s.%s: %s = %s, want %s", b.typ, b.name, attr, got, want)
			}
		}
		for p, gs := range b.grants(m) {
			got[p] = append(got[p], gs...)
		}
	}
	// Every IAM resource that grants to a function's account is known.
	for _, blk := range m.blocks {
		if blk.Type != "resource" || len(blk.Labels) != 2 || !regexp.MustCompile(`_iam_(member|binding|policy)$`).MatchString(blk.Labels[0]) {
			continue
		}
		if known[blk.Labels[0]+"."+blk.Labels[1]] {
			continue
		}
		if strings.Contains(m.text(blk.Range()), "google_service_account.fn") {
			t.Errorf("%s.%s grants to a function's account but terraform/iam_test.go does not know it: describe it in bindings", blk.Labels[0], blk.Labels[1])
		}
	}
	for p := range deploy.Access {
		want := deploy.Grants(p)
		have := slices.Clone(got[p])
		slices.SortFunc(have, func(a, b deploy.Grant) int {
			return strings.Compare(string(a.Resource)+a.Role, string(b.Resource)+b.Role)
		})
		have = slices.Compact(have)
		for _, g := range want {
			if !slices.Contains(have, g) {
				t.Errorf("%s: Terraform does not grant %s on %s (deploy.Access: the code needs it)", p, g.Role, g.Resource)
			}
		}
		for _, g := range have {
			if !slices.Contains(want, g) {
				t.Errorf("%s: Terraform grants %s on %s, which deploy.Access does not call for", p, g.Role, g.Resource)
			}
		}
	}
	for p := range got {
		if _, ok := deploy.Access[p]; !ok {
			t.Errorf("Terraform grants roles to %s, which is not in deploy.Access", p)
		}
	}
}

// The Pub/Sub service agent forwards exhausted push messages to the
// dead-letter topics and mints push OIDC tokens: its roles are granted
// after the Pub/Sub API is enabled, to the address `gcloud beta services
// identity create --service=pubsub.googleapis.com` prints (README
// bootstrap).
func TestPubSubServiceAgent(t *testing.T) {
	m := load(t)
	if got := m.text(m.locals["pubsub_agent"].Expr.Range()); got != `"serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"` {
		t.Errorf("local.pubsub_agent = %s, want the Pub/Sub service agent of the project number", got)
	}
	for _, r := range [][2]string{{"google_service_account_iam_member", "push_token_creator"}, {"google_pubsub_topic_iam_member", "dead_letter_publisher"}, {"google_pubsub_subscription_iam_member", "dead_letter_subscriber"}} {
		b := m.resource("resource", r[0], r[1])
		if m.attr(b.Body, "member") != "local.pubsub_agent" {
			t.Errorf("%s.%s must grant to local.pubsub_agent", r[0], r[1])
		}
	}
	if s, ok := deploy.ServiceByName("pubsub.googleapis.com"); !ok || !s.Bootstrap {
		t.Error("pubsub.googleapis.com must be a bootstrap service (the agent exists before Terraform grants it roles)")
	}
}
