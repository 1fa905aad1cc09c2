package terraform

import (
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/deploy"
)

// TestSubscriptionsWiring checks the pieces run-time subscriptions need
// (README "Subscriptions"): the subscribe function is invoked by the push
// account, Cloud Scheduler ticks its /tick as that account, the
// subscriptions of var.subscriptions leave their push config to the api,
// the api may rewire them and set push tokens of noetl-push, and the
// subscribe function may pull them, write its spool buckets and publish
// execution starts.
func TestSubscriptionsWiring(t *testing.T) {
	m := load(t)
	f, ok := deploy.FunctionByName("subscribe")
	if !ok || f.Invokers != "push" {
		t.Fatalf("deploy manifest lacks the subscribe function invoked by the push account")
	}
	job := m.resource("resource", "google_cloud_scheduler_job", "subscribe_tick")
	ht := child(job.Body, "http_target")
	if ht == nil || !strings.Contains(m.attr(ht.Body, "uri"), `google_cloudfunctions2_function.fn["subscribe"]`) || !strings.HasSuffix(m.attr(ht.Body, "uri"), `/tick"`) ||
		m.attr(ht.Body, "http_method") != `"POST"` || child(ht.Body, "oidc_token") == nil ||
		m.attr(child(ht.Body, "oidc_token").Body, "service_account_email") != "google_service_account.push.email" {
		t.Error("the scheduler job must POST <subscribe>/tick with an OIDC token of google_service_account.push")
	}
	sub := m.resource("resource", "google_pubsub_subscription", "registered")
	lc := child(sub.Body, "lifecycle")
	if m.attr(sub.Body, "for_each") != "var.subscriptions" || lc == nil || m.attr(lc.Body, "ignore_changes") != "[push_config]" || child(sub.Body, "push_config") != nil {
		t.Error("google_pubsub_subscription.registered must be pull subscriptions over var.subscriptions whose push_config Terraform ignores")
	}
	bind := m.text(m.locals["registered_bindings"].Expr.Range())
	for _, want := range []string{`fn = "api", role = "roles/pubsub.editor"`, `fn = "subscribe", role = "roles/pubsub.subscriber"`} {
		if !strings.Contains(bind, want) {
			t.Errorf("local.registered_bindings lacks %s", want)
		}
	}
	if u := m.resource("resource", "google_service_account_iam_member", "api_push_user"); m.attr(u.Body, "member") != `google_service_account.fn["api"].member` ||
		m.attr(u.Body, "service_account_id") != "google_service_account.push.name" {
		t.Error("the api must act as noetl-push to set push tokens")
	}
	if s := m.resource("resource", "google_storage_bucket_iam_member", "spool"); m.attr(s.Body, "member") != `google_service_account.fn["subscribe"].member` {
		t.Error("the subscribe function must write the spool buckets")
	}
	pub := m.text(m.locals["publishes"].Expr.Range())
	if !strings.Contains(pub, `subscribe   = ["events"]`) {
		t.Error("the subscribe function must publish on events (execution starts)")
	}
}
