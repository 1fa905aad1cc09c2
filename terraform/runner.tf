# The runner: the engine's data plane (README "Architecture"), its own
# Cloud Run service built from runner/Dockerfile. It runs the task kinds
# that run author code or reach author-chosen endpoints (python, shell,
# duckdb, postgres, transfer, gcs, nats, subscription) for execute, one
# authenticated request per task attempt.
#
#   - its service account (noetl-runner) holds no role anywhere: no
#     Firestore, Pub/Sub, Cloud Tasks, Secret Manager or results bucket
#     access; what a task may use (its granted credentials) comes in its
#     request;
#   - only execute's service account may invoke it (run.invoker on the
#     service, nothing else), and the runner checks execute's ID token too;
#   - no secret reaches its environment (no signing key, no api token);
#   - second-generation execution environment (namespaces and control
#     groups for the per-task sandbox), one request per instance by
#     default (user code does not share an instance).
#
# The image: build and push it before `terraform apply` (README "Deploy to
# GCP"):
#   gcloud builds submit --config runner/cloudbuild.yaml \
#     --substitutions _IMAGE="$(terraform -chdir=terraform output -raw runner_image)" .

resource "google_artifact_registry_repository" "images" {
  location      = var.region
  repository_id = "noetl"
  format        = "DOCKER"
  description   = "NoETL images (the runner)"
  depends_on    = [google_project_service.services]
}

resource "google_service_account" "runner" {
  account_id   = "noetl-runner"
  display_name = "NoETL runner (user code): no project roles"
  depends_on   = [google_project_service.services]
}

locals {
  runner_image = var.runner_image != "" ? var.runner_image : "${var.region}-docker.pkg.dev/${var.project}/${google_artifact_registry_repository.images.repository_id}/runner:latest"

  # Deterministic URL of the runner's Cloud Run service: execute's
  # NOETL_RUNNER_URL and the audience of its ID tokens.
  runner_url = "https://noetl-runner-${data.google_project.this.number}.${var.region}.run.app"

  # The runner's whole configuration: its URL and invoker, the egress
  # policy of user code (cloud profile: private ranges refused unless
  # allowed; the functions' own URLs denied), the playbook files of the
  # image as the script root, the sandbox's limits.
  runner_env = merge({
    GOOGLE_CLOUD_PROJECT    = var.project
    NOETL_RUNNER_URL        = local.runner_url
    NOETL_RUNNER_AUDIENCE   = local.runner_url
    NOETL_RUNNER_INVOKER    = google_service_account.fn["execute"].email
    NOETL_EGRESS_PROFILE    = "cloud"
    NOETL_EGRESS_ALLOW      = join(",", var.runner.egress_allow)
    NOETL_EGRESS_DENY       = join(",", [for name, url in local.run_url : trimprefix(url, "https://")])
    NOETL_REPO_ROOT         = "/srv/noetl"
    NOETL_SANDBOX_MEMORY_MB = tostring(var.runner.task_memory_mb)
    NOETL_SANDBOX_CPU_S     = tostring(var.runner.task_cpu_s)
    NOETL_SANDBOX_DISK_MB   = tostring(var.runner.task_disk_mb)
    NOETL_DUCKDB_MEMORY_MB  = tostring(var.runner.duckdb_memory_mb)
    NOETL_TRACING_EXPORTER  = "none"
    NOETL_METRICS_EXPORTER  = "none"
  }, var.runner.extra_env)
}

resource "google_cloud_run_v2_service" "runner" {
  name                = "noetl-runner"
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_ALL" # IAM decides: only execute's account may invoke
  deletion_protection = false

  template {
    service_account                  = google_service_account.runner.email
    execution_environment            = "EXECUTION_ENVIRONMENT_GEN2"
    max_instance_request_concurrency = var.runner.concurrency
    timeout                          = "${var.dispatch_deadline_s}s"
    scaling {
      min_instance_count = var.runner.min_instances
      max_instance_count = var.runner.max_instances
    }
    containers {
      image = local.runner_image
      ports {
        container_port = 8080
      }
      resources {
        limits = {
          cpu    = tostring(var.runner.cpu)
          memory = var.runner.memory
        }
      }
      dynamic "env" {
        for_each = local.runner_env
        content {
          name  = env.key
          value = env.value
        }
      }
      startup_probe {
        http_get {
          path = "/healthz"
        }
      }
    }
  }

  depends_on = [google_project_service.services]
}

# The one principal that may invoke the runner: execute's service account.
resource "google_cloud_run_v2_service_iam_member" "runner_invoker" {
  project  = var.project
  location = google_cloud_run_v2_service.runner.location
  name     = google_cloud_run_v2_service.runner.name
  role     = "roles/run.invoker"
  member   = google_service_account.fn["execute"].member
}
