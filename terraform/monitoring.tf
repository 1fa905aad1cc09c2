# Cloud Monitoring dashboards and alert policies, loaded from infra/
# (Cloud Monitoring API JSON; infra/infra_test.go checks them against the
# metric list of shared/deploy). "__API_URL__" in an alert's documentation
# becomes the api's URL, so an alert links to the execution.

locals {
  api_url        = local.run_url["api"]
  dashboards_dir = "${path.module}/../infra/monitoring/dashboards"
  alerts_dir     = "${path.module}/../infra/monitoring/alerts"
  alert_policies = { for f in fileset(local.alerts_dir, "*.json") : trimsuffix(f, ".json") => jsondecode(file("${local.alerts_dir}/${f}")) }
}

resource "google_monitoring_dashboard" "dashboard" {
  for_each       = fileset(local.dashboards_dir, "*.json")
  dashboard_json = file("${local.dashboards_dir}/${each.value}")
  depends_on     = [google_project_service.services]
}

resource "google_monitoring_alert_policy" "policy" {
  for_each              = local.alert_policies
  display_name          = each.value.displayName
  combiner              = try(each.value.combiner, "OR")
  enabled               = try(each.value.enabled, true)
  severity              = try(each.value.severity, null)
  user_labels           = try(each.value.userLabels, null)
  notification_channels = var.notification_channels

  dynamic "conditions" {
    for_each = each.value.conditions
    content {
      display_name = conditions.value.displayName

      dynamic "condition_threshold" {
        for_each = can(conditions.value.conditionThreshold) ? [conditions.value.conditionThreshold] : []
        content {
          filter             = condition_threshold.value.filter
          comparison         = condition_threshold.value.comparison
          threshold_value    = condition_threshold.value.thresholdValue
          duration           = condition_threshold.value.duration
          denominator_filter = try(condition_threshold.value.denominatorFilter, null)
          dynamic "aggregations" {
            for_each = try(condition_threshold.value.aggregations, [])
            content {
              alignment_period     = try(aggregations.value.alignmentPeriod, null)
              per_series_aligner   = try(aggregations.value.perSeriesAligner, null)
              cross_series_reducer = try(aggregations.value.crossSeriesReducer, null)
              group_by_fields      = try(aggregations.value.groupByFields, null)
            }
          }
          dynamic "denominator_aggregations" {
            for_each = try(condition_threshold.value.denominatorAggregations, [])
            content {
              alignment_period     = try(denominator_aggregations.value.alignmentPeriod, null)
              per_series_aligner   = try(denominator_aggregations.value.perSeriesAligner, null)
              cross_series_reducer = try(denominator_aggregations.value.crossSeriesReducer, null)
              group_by_fields      = try(denominator_aggregations.value.groupByFields, null)
            }
          }
          dynamic "trigger" {
            for_each = can(condition_threshold.value.trigger) ? [condition_threshold.value.trigger] : []
            content {
              count = try(trigger.value.count, null)
            }
          }
        }
      }

      dynamic "condition_matched_log" {
        for_each = can(conditions.value.conditionMatchedLog) ? [conditions.value.conditionMatchedLog] : []
        content {
          filter           = condition_matched_log.value.filter
          label_extractors = try(condition_matched_log.value.labelExtractors, null)
        }
      }
    }
  }

  dynamic "alert_strategy" {
    for_each = can(each.value.alertStrategy) ? [each.value.alertStrategy] : []
    content {
      auto_close = try(alert_strategy.value.autoClose, null)
      dynamic "notification_rate_limit" {
        for_each = can(alert_strategy.value.notificationRateLimit) ? [alert_strategy.value.notificationRateLimit] : []
        content {
          period = notification_rate_limit.value.period
        }
      }
    }
  }

  documentation {
    content   = replace(each.value.documentation.content, "__API_URL__", local.api_url)
    mime_type = "text/markdown"
    subject   = try(each.value.documentation.subject, null)
    dynamic "links" {
      for_each = try(each.value.documentation.links, [])
      content {
        display_name = links.value.displayName
        url          = replace(links.value.url, "__API_URL__", local.api_url)
      }
    }
  }

  depends_on = [google_project_service.services]
}
