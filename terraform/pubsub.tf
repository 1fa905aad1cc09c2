# Pub/Sub: the event log (events), bulk fan-out (commands), their
# dead-letter topics, and explicit push subscriptions to route,
# materialize and dispatch (README "Architecture"). No subscription orders messages.

resource "google_pubsub_topic" "topic" {
  for_each = toset(local.topics)
  name     = each.value
  # The events topic is the write-ahead log: keep it for seek/replay.
  message_retention_duration = each.value == "events" ? var.events_retention : null
  depends_on                 = [google_project_service.services]
}

resource "google_pubsub_subscription" "push" {
  for_each = local.push_subscriptions
  name     = each.key
  topic    = google_pubsub_topic.topic[each.value.topic].id
  filter   = each.value.filter

  # Pub/Sub waits this long for the function's answer before redelivering
  # (at most 600 s; the function's timeout is validated against it).
  ack_deadline_seconds    = min(600, local.function_settings[each.value.function].timeout_s)
  enable_message_ordering = false

  push_config {
    # The path names the topic, as functions-framework-go expects when it
    # converts a push body to a CloudEvent.
    push_endpoint = "${google_cloudfunctions2_function.fn[each.value.function].service_config[0].uri}/projects/${var.project}/topics/${each.value.topic}"
    oidc_token {
      service_account_email = google_service_account.push.email
      audience              = google_cloudfunctions2_function.fn[each.value.function].service_config[0].uri
    }
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.topic[each.value.dead_letter_topic].id
    max_delivery_attempts = var.push.max_delivery_attempts
  }

  retry_policy {
    minimum_backoff = "${var.push.min_backoff_s}s"
    maximum_backoff = "${var.push.max_backoff_s}s"
  }

  expiration_policy {
    ttl = "" # never expires
  }
}

# Pull subscriptions to inspect dead letters:
#   gcloud pubsub subscriptions pull events-dead-inspect --limit 10
resource "google_pubsub_subscription" "inspect" {
  for_each                   = local.inspect_subscriptions
  name                       = each.key
  topic                      = google_pubsub_topic.topic[each.value].id
  ack_deadline_seconds       = 60
  message_retention_duration = "604800s"
  retain_acked_messages      = true
  expiration_policy {
    ttl = ""
  }
}

# The replay subscription (README "Repair"): a pull subscription of the
# events topic that nothing consumes and that keeps acknowledged messages,
# so that `noetl rebuild` (the api's POST /executions/{id}/rebuild) can
# seek it back to an execution's start and rebuild its event read model.
# Seeking to a time reaches back as far as the subscription's retention (7
# days, Pub/Sub's largest) or the topic's (var.events_retention), whichever
# is longer. Only the api pulls and seeks it.
resource "google_pubsub_subscription" "replay" {
  name                       = "events-replay"
  topic                      = google_pubsub_topic.topic["events"].id
  ack_deadline_seconds       = 60
  retain_acked_messages      = true
  message_retention_duration = "604800s"
  enable_message_ordering    = false
  expiration_policy {
    ttl = "" # never expires
  }
}

# The api pulls, acknowledges and seeks the replay subscription
# (deploy.OpReplayEvents).
resource "google_pubsub_subscription_iam_member" "replay" {
  subscription = google_pubsub_subscription.replay.id
  role         = "roles/pubsub.subscriber"
  member       = google_service_account.fn["api"].member
}
