# Buckets: the results tier (NoETL result storage RFC) with lifecycle rules, and the
# bucket of the function source zip.

resource "google_storage_bucket" "results" {
  name                        = "${var.project}-noetl-results"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  # Results, loop items and offloaded loop.done results are deleted with
  # their executions by the results GC (`noetl gc`, retention_days after
  # the execution ends). This rule is only a backstop for objects the GC
  # never saw: it counts from an object's creation, so it is set longer
  # than the retention (checked below and by TestResultsLifecycleIsABackstop).
  lifecycle_rule {
    condition {
      age = var.results_retention_days
    }
    action {
      type = "Delete"
    }
  }

  lifecycle_rule {
    condition {
      age = 1
    }
    action {
      type = "AbortIncompleteMultipartUpload"
    }
  }

  lifecycle {
    precondition {
      condition     = var.results_retention_days > var.retention_days
      error_message = "results_retention_days (the bucket's lifecycle backstop) must be longer than retention_days: the lifecycle rule would delete results the GC still keeps."
    }
  }

  depends_on = [google_project_service.services]
}

resource "google_storage_bucket" "source" {
  count                       = var.source_bucket == "" ? 1 : 0
  name                        = "${var.project}-noetl-source"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  depends_on                  = [google_project_service.services]
}

variable "results_gc_schedule" {
  description = "Cron schedule (UTC) of the Cloud Scheduler job that runs the results GC (POST <api>/gc?apply=true, as noetl-operator: `noetl gc --apply`), deleting the results of executions that ended more than retention_days ago; \"\" for none"
  type        = string
  default     = "17 3 * * *"
}

# The results GC, daily by default: an execution's results are deleted
# soon after its record expires (docs/resilience.md "Repair"). GC is a dry run
# unless asked to apply: the job asks. The job calls the api
# with an identity token of noetl-operator, which the api's roles make an
# admin and which may invoke the api.
resource "google_cloud_scheduler_job" "results_gc" {
  count     = var.results_gc_schedule == "" ? 0 : 1
  name      = "noetl-results-gc"
  region    = var.region
  schedule  = var.results_gc_schedule
  time_zone = "Etc/UTC"

  attempt_deadline = "${min(1800, max(15, local.function_settings["api"].timeout_s))}s"

  http_target {
    http_method = "POST"
    uri         = "${local.run_url["api"]}/gc?apply=true"
    oidc_token {
      service_account_email = google_service_account.operator.email
      audience              = local.run_url["api"]
    }
  }

  depends_on = [google_project_service.services]
}

variable "results_verify_schedule" {
  description = "Cron schedule (UTC) of the Cloud Scheduler job that runs the results scrub (POST <api>/results/verify, as noetl-operator: `noetl results verify`): every stored result the execution logs reference is read against its generation and digest, and each one lost is recorded as a result.lost event in its execution's log; \"\" for none"
  type        = string
  default     = "47 3 * * *"
}

# The results scrub, daily beside GC (docs/resilience.md "Repair"): it finds
# a lost or corrupt result before a reader does. Its deadline is GC's: the
# api's timeout.
resource "google_cloud_scheduler_job" "results_verify" {
  count     = var.results_verify_schedule == "" ? 0 : 1
  name      = "noetl-results-verify"
  region    = var.region
  schedule  = var.results_verify_schedule
  time_zone = "Etc/UTC"

  attempt_deadline = "${min(1800, max(15, local.function_settings["api"].timeout_s))}s"

  http_target {
    http_method = "POST"
    uri         = "${local.run_url["api"]}/results/verify"
    oidc_token {
      service_account_email = google_service_account.operator.email
      audience              = local.run_url["api"]
    }
  }

  depends_on = [google_project_service.services]
}
