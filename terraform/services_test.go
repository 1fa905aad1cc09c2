package terraform

import (
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/noetl/gcpengine/shared/deploy"
)

// resourceAPIs are the APIs each resource or data source type of this
// configuration is created (or read) through. A type missing here fails
// TestServicesMatch: say which API it needs.
var resourceAPIs = map[string][]string{
	"google_project_service":            {"serviceusage.googleapis.com"},
	"google_project":                    {"cloudresourcemanager.googleapis.com"}, // data source: the project number
	"google_project_iam_member":         {"cloudresourcemanager.googleapis.com"},
	"google_service_account_iam_member": {"iam.googleapis.com"},
	// People mint noetl-operator's identity tokens through IAM Credentials.
	"google_service_account":                 {"iam.googleapis.com", "iamcredentials.googleapis.com"},
	"google_cloud_run_v2_service_iam_member": {"run.googleapis.com"},
	"google_cloudfunctions2_function":        {"cloudfunctions.googleapis.com", "run.googleapis.com", "cloudbuild.googleapis.com", "artifactregistry.googleapis.com"},
	"google_storage_bucket":                  {"storage.googleapis.com"},
	"google_artifact_registry_repository":    {"artifactregistry.googleapis.com"},
	// The runner's service pulls its image from Artifact Registry.
	"google_cloud_run_v2_service":             {"run.googleapis.com", "artifactregistry.googleapis.com"},
	"google_storage_bucket_object":            {"storage.googleapis.com"},
	"google_storage_bucket_iam_member":        {"storage.googleapis.com"},
	"google_pubsub_topic":                     {"pubsub.googleapis.com"},
	"google_pubsub_subscription":              {"pubsub.googleapis.com"},
	"google_pubsub_topic_iam_member":          {"pubsub.googleapis.com"},
	"google_pubsub_subscription_iam_member":   {"pubsub.googleapis.com"},
	"google_cloud_tasks_queue":                {"cloudtasks.googleapis.com"},
	"google_cloud_tasks_queue_iam_member":     {"cloudtasks.googleapis.com"},
	"google_firestore_database":               {"firestore.googleapis.com"},
	"google_firestore_field":                  {"firestore.googleapis.com"},
	"google_firestore_index":                  {"firestore.googleapis.com"},
	"google_secret_manager_secret":            {"secretmanager.googleapis.com"},
	"google_secret_manager_secret_version":    {"secretmanager.googleapis.com"},
	"google_secret_manager_secret_iam_member": {"secretmanager.googleapis.com"},
	"google_cloud_scheduler_job":              {"cloudscheduler.googleapis.com"},
	"google_monitoring_dashboard":             {"monitoring.googleapis.com"},
	"google_monitoring_alert_policy":          {"monitoring.googleapis.com", "logging.googleapis.com"}, // log-based conditions
	"random_bytes":                            nil,
	"archive_file":                            nil,
}

// TestServicesMatch checks services.tf against shared/deploy.Services
// (the APIs the functions call: shared/deploy TestServicesCoverTheClients)
// and against the APIs this configuration's resources are created
// through.
func TestServicesMatch(t *testing.T) {
	m := load(t)
	svc := m.resource("resource", "google_project_service", "services")
	fe, ok := svc.Body.Attributes["for_each"]
	if !ok {
		t.Fatal("google_project_service.services has no for_each")
	}
	// for_each = toset([...]): the list is the call's argument.
	call, ok := fe.Expr.(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "toset" || len(call.Args) != 1 {
		t.Fatal("google_project_service.services must be for_each = toset([...])")
	}
	enabled := strs(m.static(call.Args[0]))
	var want []string
	for _, s := range deploy.Services {
		want = append(want, s.Name)
	}
	slices.Sort(want)
	sameSet(t, "API", want, enabled)
	if m.attr(svc.Body, "disable_on_destroy") != "false" {
		t.Error("google_project_service.services must not disable APIs on destroy (other workloads may use them)")
	}
	for _, b := range m.blocks {
		if (b.Type != "resource" && b.Type != "data") || len(b.Labels) != 2 {
			continue
		}
		apis, ok := resourceAPIs[b.Labels[0]]
		if !ok {
			t.Errorf("%s %s.%s: say which APIs it is created through (resourceAPIs)", b.Type, b.Labels[0], b.Labels[1])
			continue
		}
		for _, api := range apis {
			if !slices.Contains(enabled, api) {
				t.Errorf("%s.%s needs %s, which services.tf does not enable", b.Labels[0], b.Labels[1], api)
			}
		}
	}
}
