# Subscriptions (README "Running NoETL v2 playbooks"; README "Subscriptions"): kind:
# Subscription resources are registered at run time (POST /subscriptions,
# `noetl subscription register`). Registration points the named Pub/Sub
# subscription's push config at the subscribe function
# (<subscribe URL>/push/<name>, OIDC token of noetl-push) and DELETE makes
# it a pull subscription again. Terraform creates the subscriptions listed
# in var.subscriptions (pull, no push config: registration sets it, so
# Terraform ignores later push_config changes), lets the api rewire them
# and the subscribe function pull them (batch dispatch), gives the
# subscribe function its spool buckets, and ticks the subscribe function
# once a minute (probes, spool drains, batch pulls).

variable "subscriptions" {
  description = <<-EOT
    Pub/Sub subscriptions that registered kind: Subscription resources consume,
    by subscription id: topic (an existing topic's name or id), spool_bucket (an
    existing GCS bucket of the resource's spool.bucket, "" for none), ack_deadline_s
    (default the subscribe function's timeout, at most 600).
  EOT
  type = map(object({
    topic          = string
    spool_bucket   = optional(string, "")
    ack_deadline_s = optional(number)
  }))
  default = {}
  validation {
    condition     = alltrue([for k in keys(var.subscriptions) : can(regex("^[A-Za-z][A-Za-z0-9._~+%-]{2,254}$", k)) && !startswith(k, "goog")])
    error_message = "subscription ids must be 3-255 letters, digits or -._~+%, starting with a letter (not goog)."
  }
  validation {
    condition     = alltrue([for v in values(var.subscriptions) : v.ack_deadline_s == null || try(v.ack_deadline_s >= 10 && v.ack_deadline_s <= 600, false)])
    error_message = "ack_deadline_s must be between 10 and 600."
  }
}

variable "subscribe_tick_schedule" {
  description = "Cron schedule of the Cloud Scheduler job that calls the subscribe function's /tick (probes, spool drains, batch pulls)"
  type        = string
  default     = "* * * * *"
}

resource "google_pubsub_subscription" "registered" {
  for_each             = var.subscriptions
  name                 = each.key
  topic                = each.value.topic
  ack_deadline_seconds = coalesce(each.value.ack_deadline_s, min(600, local.function_settings["subscribe"].timeout_s))

  retry_policy {
    minimum_backoff = "${var.push.min_backoff_s}s"
    maximum_backoff = "${var.push.max_backoff_s}s"
  }

  expiration_policy {
    ttl = ""
  }

  lifecycle {
    # POST /subscriptions sets the push config, DELETE clears it.
    ignore_changes = [push_config]
  }

  depends_on = [google_project_service.services]
}

locals {
  # Per registered subscription: the api rewires its push config
  # (pubsub.editor), the subscribe function pulls and reads it.
  registered_bindings = merge([for id in keys(var.subscriptions) : {
    "${id}/api/roles/pubsub.editor"           = { id = id, fn = "api", role = "roles/pubsub.editor" }
    "${id}/subscribe/roles/pubsub.subscriber" = { id = id, fn = "subscribe", role = "roles/pubsub.subscriber" }
    "${id}/subscribe/roles/pubsub.viewer"     = { id = id, fn = "subscribe", role = "roles/pubsub.viewer" }
  }]...)
  spool_buckets = toset([for v in values(var.subscriptions) : v.spool_bucket if v.spool_bucket != ""])
}

resource "google_pubsub_subscription_iam_member" "registered" {
  for_each     = local.registered_bindings
  subscription = google_pubsub_subscription.registered[each.value.id].id
  role         = each.value.role
  member       = google_service_account.fn[each.value.fn].member
}

# The subscribe function writes, lists, reads and deletes spool objects.
resource "google_storage_bucket_iam_member" "spool" {
  for_each = local.spool_buckets
  bucket   = each.value
  role     = "roles/storage.objectAdmin"
  member   = google_service_account.fn["subscribe"].member
}

# The api sets push configs whose OIDC token is noetl-push's.
resource "google_service_account_iam_member" "api_push_user" {
  service_account_id = google_service_account.push.name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.fn["api"].member
}

# The tick: Cloud Scheduler calls POST <subscribe>/tick as noetl-push (an
# invoker of subscribe).
resource "google_cloud_scheduler_job" "subscribe_tick" {
  name      = "noetl-subscribe-tick"
  region    = var.region
  schedule  = var.subscribe_tick_schedule
  time_zone = "Etc/UTC"

  attempt_deadline = "${min(1800, max(15, local.function_settings["subscribe"].timeout_s))}s"

  http_target {
    http_method = "POST"
    uri         = "${google_cloudfunctions2_function.fn["subscribe"].service_config[0].uri}/tick"
    oidc_token {
      service_account_email = google_service_account.push.email
      audience              = google_cloudfunctions2_function.fn["subscribe"].service_config[0].uri
    }
  }

  depends_on = [google_project_service.services]
}
