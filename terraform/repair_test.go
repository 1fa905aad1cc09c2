package terraform

import (
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/deploy"
)

// The results bucket's lifecycle rule is only a backstop of the results
// GC (README "Repair"): its age (results_retention_days, counted from an
// object's creation) must exceed the retention of an ended execution
// (retention_days, NOETL_RETENTION_DAYS, which the GC and the Firestore
// TTL read), or the rule deletes results whose execution still keeps
// them. The defaults must satisfy it, and a plan with values that do not
// must fail (the bucket's precondition).
func TestResultsLifecycleIsABackstop(t *testing.T) {
	m := load(t)
	ret, _ := m.varDefault("retention_days").AsBigFloat().Int64()
	life, _ := m.varDefault("results_retention_days").AsBigFloat().Int64()
	if life <= ret {
		t.Errorf("results_retention_days default %d must exceed retention_days default %d", life, ret)
	}
	k, ok := config.ByEnv("NOETL_RETENTION_DAYS")
	if !ok || k.Default != m.varDefault("retention_days").AsBigFloat().Text('f', 0) {
		t.Errorf("retention_days default %s differs from NOETL_RETENTION_DAYS's %q", m.varDefault("retention_days").AsBigFloat().Text('f', 0), k.Default)
	}
	b := m.resource("resource", "google_storage_bucket", "results")
	rule := ""
	for _, blk := range b.Body.Blocks {
		if blk.Type == "lifecycle_rule" && strings.Contains(m.text(blk.Range()), `"Delete"`) {
			rule = m.text(blk.Range())
		}
	}
	if !strings.Contains(rule, "age = var.results_retention_days") {
		t.Errorf("the results bucket's Delete rule must be aged by var.results_retention_days: %s", rule)
	}
	if !strings.Contains(m.text(b.Range()), "condition     = var.results_retention_days > var.retention_days") {
		t.Error("the results bucket must have the precondition var.results_retention_days > var.retention_days")
	}
}

// The replay subscription keeps acknowledged messages for Pub/Sub's
// largest retention, nothing pushes from it, its name is the one the
// code's IAM table and configuration name, and the functions get it.
func TestReplaySubscription(t *testing.T) {
	m := load(t)
	b := m.resource("resource", "google_pubsub_subscription", "replay")
	for attr, want := range map[string]string{
		"name":                       `"` + deploy.ReplaySubscription + `"`,
		"topic":                      `google_pubsub_topic.topic["events"].id`,
		"retain_acked_messages":      "true",
		"message_retention_duration": `"604800s"`,
	} {
		if got := m.attr(b.Body, attr); got != want {
			t.Errorf("replay subscription: %s = %s, want %s", attr, got, want)
		}
	}
	for _, blk := range b.Body.Blocks {
		if blk.Type == "push_config" {
			t.Error("the replay subscription must be a pull subscription")
		}
	}
	if k, _ := config.ByEnv("NOETL_REPLAY_SUBSCRIPTION"); k.Default != deploy.ReplaySubscription {
		t.Errorf("NOETL_REPLAY_SUBSCRIPTION default %q, want %q", k.Default, deploy.ReplaySubscription)
	}
	if env := m.text(m.locals["env"].Expr.Range()); !strings.Contains(env, "NOETL_REPLAY_SUBSCRIPTION        = google_pubsub_subscription.replay.name") ||
		!strings.Contains(env, "NOETL_RETENTION_DAYS             = tostring(var.retention_days)") {
		t.Error("local.env must set NOETL_REPLAY_SUBSCRIPTION from the replay subscription and NOETL_RETENTION_DAYS from var.retention_days")
	}
}

// The results GC runs on a schedule: a Cloud Scheduler job POSTs
// <api>/gc?apply=true (a dry run without it) with an identity token of noetl-operator (admin in the api's
// roles, an invoker of the api) for the audience the api accepts.
func TestResultsGCSchedule(t *testing.T) {
	m := load(t)
	job := m.resource("resource", "google_cloud_scheduler_job", "results_gc")
	ht := child(job.Body, "http_target")
	if ht == nil || m.attr(ht.Body, "uri") != `"${local.run_url["api"]}/gc?apply=true"` || m.attr(ht.Body, "http_method") != `"POST"` || child(ht.Body, "oidc_token") == nil ||
		m.attr(child(ht.Body, "oidc_token").Body, "service_account_email") != "google_service_account.operator.email" ||
		m.attr(child(ht.Body, "oidc_token").Body, "audience") != `local.run_url["api"]` {
		t.Error("the results GC job must POST <api>/gc?apply=true (GC is a dry run by default) with an OIDC token of google_service_account.operator for local.run_url[\"api\"]")
	}
	if env := m.text(m.locals["env"].Expr.Range()); !strings.Contains(env, `local.run_url["api"]`) || !strings.Contains(env, "google_service_account.operator.email") {
		t.Error("the api must accept local.run_url[\"api\"] as an audience and make noetl-operator an admin")
	}
	if m.varDefault("results_gc_schedule").AsString() == "" {
		t.Error("the results GC must be scheduled by default")
	}
}

// The results scrub runs daily beside GC: a Cloud Scheduler job POSTs
// <api>/results/verify with noetl-operator's identity token, as GC's does.
func TestResultsVerifySchedule(t *testing.T) {
	m := load(t)
	job := m.resource("resource", "google_cloud_scheduler_job", "results_verify")
	gcJob := m.resource("resource", "google_cloud_scheduler_job", "results_gc")
	ht := child(job.Body, "http_target")
	if ht == nil || m.attr(ht.Body, "uri") != `"${local.run_url["api"]}/results/verify"` || m.attr(ht.Body, "http_method") != `"POST"` || child(ht.Body, "oidc_token") == nil ||
		m.attr(child(ht.Body, "oidc_token").Body, "service_account_email") != "google_service_account.operator.email" ||
		m.attr(child(ht.Body, "oidc_token").Body, "audience") != `local.run_url["api"]` {
		t.Error("the results scrub job must POST <api>/results/verify with an OIDC token of google_service_account.operator for local.run_url[\"api\"]")
	}
	if m.attr(job.Body, "attempt_deadline") != m.attr(gcJob.Body, "attempt_deadline") || m.attr(job.Body, "region") != m.attr(gcJob.Body, "region") {
		t.Error("the results scrub job must have GC's deadline and region")
	}
	if m.varDefault("results_verify_schedule").AsString() == "" {
		t.Error("the results scrub must be scheduled by default")
	}
}
