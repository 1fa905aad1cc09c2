# APIs the deployment uses: exactly shared/deploy.Services (the APIs the
# functions call and those Terraform creates resources through;
# terraform/services_test.go checks both). serviceusage,
# cloudresourcemanager and pubsub are enabled once before the first apply
# (README "Deploy to GCP", bootstrap): Terraform enables the others through
# Service Usage, reads the project through Cloud Resource Manager, and the
# Pub/Sub service agent is created from pubsub's enablement. Listing them
# here keeps them enabled.
resource "google_project_service" "services" {
  for_each = toset([
    "serviceusage.googleapis.com", "cloudresourcemanager.googleapis.com", "pubsub.googleapis.com",
    "iam.googleapis.com", "iamcredentials.googleapis.com", "cloudfunctions.googleapis.com", "run.googleapis.com", "cloudbuild.googleapis.com",
    "artifactregistry.googleapis.com", "storage.googleapis.com", "cloudtasks.googleapis.com",
    "firestore.googleapis.com", "secretmanager.googleapis.com", "cloudscheduler.googleapis.com",
    "logging.googleapis.com", "monitoring.googleapis.com", "telemetry.googleapis.com", "cloudtrace.googleapis.com",
  ])
  service            = each.value
  disable_on_destroy = false
}
