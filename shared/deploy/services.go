package deploy

import "strings"

// Service is a Google Cloud API the deployment uses.
type Service struct {
	// Name is the service name ("pubsub.googleapis.com").
	Name string
	// Bootstrap marks the APIs that must be enabled before Terraform
	// runs: enabling the others goes through Service Usage, and reading
	// the project (its number) and granting project roles through Cloud
	// Resource Manager. README "Deploy to GCP" enables exactly these with
	// gcloud; Terraform lists them too (keeping them enabled).
	Bootstrap bool
	// Why says who calls it.
	Why string
}

// Services are the APIs of the deployment: those the functions call
// (ClientAPIs of the packages they link, the Telemetry API they export
// to) and those Terraform's resources are created through
// (terraform/services_test.go). terraform/services.tf enables exactly
// these.
var Services = []Service{
	{Name: "serviceusage.googleapis.com", Bootstrap: true, Why: "Terraform: google_project_service (enabling every other API)"},
	{Name: "cloudresourcemanager.googleapis.com", Bootstrap: true, Why: "Terraform: data google_project (the project number), google_project_iam_member"},
	{Name: "iam.googleapis.com", Why: "Terraform: service accounts and their IAM"},
	{Name: "iamcredentials.googleapis.com", Why: "people's identity tokens as noetl-operator (gcloud auth print-identity-token --impersonate-service-account: generateIdToken)"},
	{Name: "cloudfunctions.googleapis.com", Why: "Terraform: the gen2 functions"},
	{Name: "run.googleapis.com", Why: "Terraform: the functions' Cloud Run services and their invokers"},
	{Name: "cloudbuild.googleapis.com", Why: "Terraform: the functions' builds"},
	{Name: "artifactregistry.googleapis.com", Why: "Terraform: the functions' images"},
	{Name: "storage.googleapis.com", Why: "functions: results tier, spool buckets; Terraform: buckets, source zip"},
	// Bootstrap: the Pub/Sub service agent (dead-letter forwarding, push
	// OIDC tokens) is created after the API is enabled, before Terraform
	// grants it roles.
	{Name: "pubsub.googleapis.com", Bootstrap: true, Why: "functions: topics, registered subscriptions; Terraform: topics, subscriptions, the service agent's roles"},
	{Name: "cloudtasks.googleapis.com", Why: "functions: units and timers; Terraform: queues"},
	{Name: "firestore.googleapis.com", Why: "functions: state, DLQ, catalog; Terraform: database, TTL, indexes"},
	{Name: "secretmanager.googleapis.com", Why: "functions: signing key, api token, credentials; Terraform: secrets"},
	{Name: "cloudscheduler.googleapis.com", Why: "Terraform: the subscribe function's tick"},
	{Name: "logging.googleapis.com", Why: "functions: structured logs (Cloud Run); Terraform: log-based alert policies"},
	{Name: "monitoring.googleapis.com", Why: "Terraform: dashboards and alert policies; Cloud Monitoring stores the metrics"},
	{Name: "telemetry.googleapis.com", Why: "functions: metrics and traces over OTLP (shared/telemetry GCPTelemetryEndpoint)"},
	{Name: "cloudtrace.googleapis.com", Why: "Cloud Trace, where the Telemetry API stores spans and the console shows them"},
}

// ServiceByName returns the service named name.
func ServiceByName(name string) (Service, bool) {
	for _, s := range Services {
		if s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}

// ClientAPIs maps the Google Cloud client packages the functions may
// link (import path prefixes) to the API they call; "" for packages that
// call none (auth, metadata, shared plumbing). TestServicesCoverTheClients
// fails on a linked cloud.google.com/go or google.golang.org/api package
// that is not classified here.
var ClientAPIs = map[string]string{
	"cloud.google.com/go/firestore":        "firestore.googleapis.com",
	"cloud.google.com/go/pubsub":           "pubsub.googleapis.com",
	"cloud.google.com/go/cloudtasks":       "cloudtasks.googleapis.com",
	"cloud.google.com/go/storage":          "storage.googleapis.com",
	"cloud.google.com/go/secretmanager":    "secretmanager.googleapis.com",
	"cloud.google.com/go/logging":          "logging.googleapis.com",
	"cloud.google.com/go/monitoring":       "monitoring.googleapis.com",
	"cloud.google.com/go/trace":            "cloudtrace.googleapis.com",
	"cloud.google.com/go/iam":              "", // IAM policy messages of pubsub and storage
	"cloud.google.com/go/longrunning":      "", // operation messages
	"cloud.google.com/go/auth":             "", // credentials
	"cloud.google.com/go/compute/metadata": "", // the metadata server
	"cloud.google.com/go/internal":         "",
	"cloud.google.com/go/functions":        "", // functions-framework's event metadata
	"cloud.google.com/go":                  "", // the root package: shared helpers
	"google.golang.org/api/idtoken":        "", // verifies identity tokens with Google's published keys
	"google.golang.org/api/option":         "",
	"google.golang.org/api/transport":      "",
	"google.golang.org/api/internal":       "",
	"google.golang.org/api/googleapi":      "",
	"google.golang.org/api/iterator":       "",
	"google.golang.org/api/support":        "",
	"google.golang.org/api/storage/v1":     "storage.googleapis.com",
	// Linked by the transport for service account impersonation, which
	// the functions never configure (they run as their own account).
	"google.golang.org/api/impersonate":       "",
	"google.golang.org/api/iamcredentials/v1": "",
}

// ClientAPI returns the API the package at importPath calls ("" for
// none) and whether it is classified (the longest matching prefix of
// ClientAPIs).
func ClientAPI(importPath string) (api string, ok bool) {
	best := -1
	for prefix, a := range ClientAPIs {
		if (importPath == prefix || strings.HasPrefix(importPath, prefix+"/")) && len(prefix) > best {
			best, api, ok = len(prefix), a, true
		}
	}
	return api, ok
}
