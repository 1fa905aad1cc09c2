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
