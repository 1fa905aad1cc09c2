# Firestore: the database, TTL policies on expire_at for every collection
# that carries it, index exemptions for large never-queried fields, and
# the composite indexes of the listings.

resource "google_firestore_database" "default" {
  name                    = "(default)"
  location_id             = var.firestore_location
  type                    = "FIRESTORE_NATIVE"
  delete_protection_state = var.firestore_delete_protection ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"
  depends_on              = [google_project_service.services]
}

# TTL policy on expire_at; the field itself is exempt from indexing
# (a monotonically increasing timestamp index hot-spots writes).
resource "google_firestore_field" "ttl" {
  for_each   = toset(local.ttl_collections)
  database   = google_firestore_database.default.name
  collection = each.value
  field      = "expire_at"
  ttl_config {}
  index_config {}
}

resource "google_firestore_field" "exempt" {
  for_each   = merge([for c, fields in local.exempt_fields : { for f in fields : "${c}.${f}" => { collection = c, field = f } }]...)
  database   = google_firestore_database.default.name
  collection = each.value.collection
  field      = each.value.field
  index_config {}
}

resource "google_firestore_index" "index" {
  for_each    = local.indexes
  database    = google_firestore_database.default.name
  collection  = each.value.collection
  query_scope = "COLLECTION"
  dynamic "fields" {
    for_each = each.value.fields
    content {
      field_path = fields.value[0]
      order      = fields.value[1]
    }
  }
}
