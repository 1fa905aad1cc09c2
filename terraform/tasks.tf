# Cloud Tasks: work (units of work, as soon as possible) and timers
# (delayed retries, lease reclaim checks, step/loop/execution timeouts).
# Every task is an HTTP call of execute with an OIDC token of noetl-tasks;
# the queue-level http_target enforces both, whatever the task says.

resource "google_cloud_tasks_queue" "queue" {
  for_each = toset(local.queues)
  name     = each.value
  location = var.region

  rate_limits {
    max_dispatches_per_second = var.queues[each.value].max_dispatches_per_second
    max_concurrent_dispatches = var.queues[each.value].max_concurrent_dispatches
  }

  retry_config {
    max_attempts  = var.tasks_max_attempts
    min_backoff   = "${var.queues[each.value].min_backoff_s}s"
    max_backoff   = "${var.queues[each.value].max_backoff_s}s"
    max_doublings = var.queues[each.value].max_doublings
  }

  http_target {
    uri_override {
      scheme                    = "HTTPS"
      host                      = trimprefix(local.run_url["execute"], "https://")
      uri_override_enforce_mode = "ALWAYS"
    }
    oidc_token {
      service_account_email = google_service_account.tasks.email
      audience              = local.run_url["execute"]
    }
  }

  stackdriver_logging_config {
    sampling_ratio = 0.1
  }

  depends_on = [google_project_service.services]
}
