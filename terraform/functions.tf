# The six gen2 Cloud Functions, built by the Go buildpack from ONE source
# zip of the module: the buildpack imports the root package (gcpengine.go),
# which registers every function; the entry point (FUNCTION_TARGET) picks
# one. Local state, build outputs and the local stack stay out of the zip.

data "archive_file" "source" {
  type        = "zip"
  source_dir  = "${path.module}/.."
  output_path = "${path.module}/.build/source.zip"
  excludes = [
    ".git", ".stack", "bin", "local", "noetl",
    "terraform/.terraform", "terraform/.build",
    "**/*.tfstate", "**/*.tfstate.*", "**/*.tfvars", "**/*.tfplan", "**/*.test",
  ]
}

locals {
  source_bucket = var.source_bucket == "" ? google_storage_bucket.source[0].name : var.source_bucket
}

resource "google_storage_bucket_object" "source" {
  name   = "noetl-source-${data.archive_file.source.output_sha256}.zip"
  bucket = local.source_bucket
  source = data.archive_file.source.output_path
}

resource "google_cloudfunctions2_function" "fn" {
  for_each = local.functions
  name     = "noetl-${each.key}"
  location = var.region

  build_config {
    runtime         = var.go_runtime
    entry_point     = each.key
    service_account = google_service_account.build.id
    source {
      storage_source {
        bucket = local.source_bucket
        object = google_storage_bucket_object.source.name
      }
    }
  }

  service_config {
    available_memory                 = local.function_settings[each.key].memory
    available_cpu                    = tostring(local.function_settings[each.key].cpu)
    timeout_seconds                  = local.function_settings[each.key].timeout_s
    max_instance_request_concurrency = local.function_settings[each.key].concurrency
    min_instance_count               = local.function_settings[each.key].min_instances
    max_instance_count               = local.function_settings[each.key].max_instances
    service_account_email            = google_service_account.fn[each.key].email
    # api and emit take user calls; the others only Cloud Tasks / Pub/Sub
    # push, which count as internal traffic.
    ingress_settings               = each.value.invokers == "users" ? "ALLOW_ALL" : "ALLOW_INTERNAL_ONLY"
    all_traffic_on_latest_revision = true
    environment_variables          = local.env

    # Secrets as environment variables (local.secret_env): the signing
    # key on every function, the api's static token on api and emit.
    dynamic "secret_environment_variables" {
      for_each = local.secret_env[each.key]
      content {
        key        = secret_environment_variables.key
        project_id = var.project
        secret     = secret_environment_variables.value
        version    = "latest"
      }
    }
  }

  lifecycle {
    # Cloud Functions adds LOG_EXECUTION_ID=true to every gen2 function's
    # environment; without this every plan would redeploy the functions.
    ignore_changes = [service_config[0].environment_variables["LOG_EXECUTION_ID"]]

    precondition {
      condition     = local.function_settings[each.key].concurrency == 1 || local.function_settings[each.key].cpu >= 1
      error_message = "noetl-${each.key}: concurrency > 1 requires at least 1 vCPU."
    }
    precondition {
      condition     = local.function_settings[each.key].cpu >= 1 || local.memory_mb[each.key] <= 512
      error_message = "noetl-${each.key}: less than 1 vCPU allows at most 512Mi of memory."
    }
    precondition {
      condition     = local.memory_mb[each.key] <= 4096 || local.function_settings[each.key].cpu >= (local.memory_mb[each.key] <= 8192 ? 2 : 4)
      error_message = "noetl-${each.key}: more than 4Gi needs 2 vCPUs, more than 8Gi needs 4."
    }
    precondition {
      condition     = each.value.trigger != "push" || local.function_settings[each.key].timeout_s <= 600
      error_message = "noetl-${each.key}: a push function's timeout cannot exceed the 600 s Pub/Sub ack deadline."
    }
    precondition {
      condition     = each.key != "execute" || local.function_settings[each.key].timeout_s >= var.dispatch_deadline_s
      error_message = "noetl-execute: timeout_s must be at least dispatch_deadline_s (a unit runs until its dispatch deadline)."
    }
    precondition {
      condition     = var.heartbeat_interval_s < var.lease_ttl_s && var.lease_ttl_s < var.dispatch_deadline_s
      error_message = "heartbeat_interval_s < lease_ttl_s < dispatch_deadline_s must hold (a leased unit is never redelivered)."
    }
    precondition {
      condition     = local.function_settings[each.key].min_instances <= local.function_settings[each.key].max_instances
      error_message = "noetl-${each.key}: min_instances exceeds max_instances."
    }
  }

  # A revision starts only when its secret environment variables can be
  # read: the signing key's and (api, emit) the api token's grants first.
  depends_on = [
    google_project_service.services, google_project_iam_member.fn, google_project_iam_member.build,
    google_secret_manager_secret_version.signing_key, google_secret_manager_secret_iam_member.signing_key,
    google_secret_manager_secret_iam_member.api_token,
  ]
}
