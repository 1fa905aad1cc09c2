# Deploys the engine to Google Cloud: Pub/Sub topics and subscriptions
# (Eventarc push to the functions), Firestore, Cloud Tasks queues, the
# results bucket and the six gen2 Cloud Functions built from this module.
#
#   terraform init && terraform apply -var project=MY_PROJECT -var source_bucket=MY_BUCKET
#
# The function source is uploaded as one zip of the repository (the Go
# module); each function selects its entry point by name (functions-
# framework-go registrations in functions/*).

terraform {
  required_version = ">= 1.5"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 5.0"
    }
    archive = {
      source  = "hashicorp/archive"
      version = ">= 2.4"
    }
  }
}

provider "google" {
  project = var.project
  region  = var.region
}

locals {
  functions = {
    api         = { trigger = "http" }
    emit        = { trigger = "http" }
    execute     = { trigger = "http" }
    route       = { trigger = "events" }
    materialize = { trigger = "events" }
    dispatch    = { trigger = "commands" }
  }
  env = {
    GOOGLE_CLOUD_PROJECT    = var.project
    NOETL_LOCATION          = var.region
    NOETL_RESULTS_BUCKET    = google_storage_bucket.results.name
    NOETL_RESULT_INLINE_MAX = tostring(var.result_inline_max)
    NOETL_LEASE_TTL_S       = "900"
  }
}

resource "google_project_service" "services" {
  for_each = toset([
    "cloudfunctions.googleapis.com", "run.googleapis.com", "eventarc.googleapis.com",
    "pubsub.googleapis.com", "firestore.googleapis.com", "cloudtasks.googleapis.com",
    "cloudbuild.googleapis.com", "artifactregistry.googleapis.com", "secretmanager.googleapis.com",
  ])
  service            = each.value
  disable_on_destroy = false
}

resource "google_firestore_database" "default" {
  name        = "(default)"
  location_id = var.firestore_location
  type        = "FIRESTORE_NATIVE"
  depends_on  = [google_project_service.services]
}

resource "google_pubsub_topic" "events" {
  name = "events"
}

resource "google_pubsub_topic" "commands" {
  name = "commands"
}

resource "google_pubsub_topic" "dead" {
  for_each = toset(["events-dead", "commands-dead"])
  name     = each.value
}

resource "google_storage_bucket" "results" {
  name                        = "${var.project}-noetl-results"
  location                    = var.region
  uniform_bucket_level_access = true
  lifecycle_rule {
    condition { age = var.results_retention_days }
    action { type = "Delete" }
  }
}

resource "google_cloud_tasks_queue" "work" {
  name     = "work"
  location = var.region
  rate_limits {
    max_concurrent_dispatches = var.work_concurrency
    max_dispatches_per_second = 500
  }
  retry_config {
    max_attempts  = 100
    min_backoff   = "0.2s"
    max_backoff   = "10s"
    max_doublings = 8
  }
}

resource "google_cloud_tasks_queue" "timers" {
  name     = "timers"
  location = var.region
  rate_limits {
    max_concurrent_dispatches = var.work_concurrency
    max_dispatches_per_second = 500
  }
  retry_config {
    max_attempts  = 100
    min_backoff   = "0.2s"
    max_backoff   = "10s"
    max_doublings = 8
  }
}

resource "google_service_account" "functions" {
  account_id   = "noetl-functions"
  display_name = "NoETL engine functions"
}

resource "google_project_iam_member" "functions" {
  for_each = toset([
    "roles/datastore.user", "roles/pubsub.publisher", "roles/cloudtasks.enqueuer",
    "roles/storage.objectAdmin", "roles/secretmanager.secretAccessor", "roles/run.invoker",
    "roles/iam.serviceAccountUser", "roles/eventarc.eventReceiver",
  ])
  project = var.project
  role    = each.value
  member  = "serviceAccount:${google_service_account.functions.email}"
}

data "archive_file" "source" {
  type        = "zip"
  source_dir  = "${path.module}/.."
  output_path = "${path.module}/.build/source.zip"
  excludes    = [".git", ".stack", "terraform/.build", "terraform/.terraform"]
}

resource "google_storage_bucket_object" "source" {
  name   = "noetl-source-${data.archive_file.source.output_md5}.zip"
  bucket = var.source_bucket
  source = data.archive_file.source.output_path
}

resource "google_cloudfunctions2_function" "fn" {
  for_each = local.functions
  name     = "noetl-${each.key}"
  location = var.region

  build_config {
    runtime     = "go122"
    entry_point = each.key
    source {
      storage_source {
        bucket = var.source_bucket
        object = google_storage_bucket_object.source.name
      }
    }
  }

  service_config {
    available_memory                 = each.key == "execute" ? "1Gi" : "256Mi"
    timeout_seconds                  = each.key == "execute" ? 900 : 60
    max_instance_request_concurrency = each.key == "execute" ? 8 : 40
    service_account_email            = google_service_account.functions.email
    # The execute URL is derivable for gen2 functions:
    # https://REGION-PROJECT.cloudfunctions.net/noetl-execute
    environment_variables = merge(local.env, {
      NOETL_EXECUTE_URL = "https://${var.region}-${var.project}.cloudfunctions.net/noetl-execute"
    })
  }

  dynamic "event_trigger" {
    for_each = each.value.trigger == "http" ? [] : [each.value.trigger]
    content {
      trigger_region        = var.region
      event_type            = "google.cloud.pubsub.topic.v1.messagePublished"
      pubsub_topic          = event_trigger.value == "events" ? google_pubsub_topic.events.id : google_pubsub_topic.commands.id
      retry_policy          = "RETRY_POLICY_RETRY"
      service_account_email = google_service_account.functions.email
    }
  }
}

# Credentials for playbook keychains. On the local stack the engine's
# credential store is the Firestore collection `credentials` (POST
# /credentials); in the cloud the planned backend is Secret Manager: one
# secret per credential, named noetl-cred-<name>, whose latest version holds
# the credential's JSON {kind, data}. Terraform creates the secrets (the
# values are added out of band: gcloud secrets versions add); the engine's
# Secret Manager backend for shared/credentials is the next step and is not
# implemented yet.
resource "google_secret_manager_secret" "credential" {
  for_each  = toset(var.credentials)
  secret_id = "noetl-cred-${each.value}"
  replication {
    auto {}
  }
  depends_on = [google_project_service.services]
}
