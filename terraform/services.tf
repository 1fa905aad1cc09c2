# APIs the deployment uses.
resource "google_project_service" "services" {
  for_each = toset([
    "artifactregistry.googleapis.com", "cloudbuild.googleapis.com", "cloudfunctions.googleapis.com", "cloudscheduler.googleapis.com",
    "cloudtasks.googleapis.com", "cloudtrace.googleapis.com", "firestore.googleapis.com",
    "iam.googleapis.com", "logging.googleapis.com", "monitoring.googleapis.com", "pubsub.googleapis.com",
    "run.googleapis.com", "secretmanager.googleapis.com", "storage.googleapis.com",
  ])
  service            = each.value
  disable_on_destroy = false
}
