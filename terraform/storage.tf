# Buckets: the results tier (NoETL result storage RFC) with lifecycle rules, and the
# bucket of the function source zip.

resource "google_storage_bucket" "results" {
  name                        = "${var.project}-noetl-results"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  # Results, loop items and offloaded loop.done results expire with their
  # executions.
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
