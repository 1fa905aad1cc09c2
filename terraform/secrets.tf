# Keychain credentials: one Secret Manager secret per credential, named
# noetl-cred-<name>, whose latest version holds the credential's JSON
# {kind, data}. Terraform creates the secrets; values are added out of
# band (gcloud secrets versions add noetl-cred-NAME --data-file=cred.json).
# On the local stack the credential store is the Firestore collection
# credentials.
resource "google_secret_manager_secret" "credential" {
  for_each  = toset(var.credentials)
  secret_id = "noetl-cred-${each.value}"
  replication {
    auto {}
  }
  depends_on = [google_project_service.services]
}

# The api's static bearer token (optional; NOETL_API_TOKEN).
resource "google_secret_manager_secret_iam_member" "api_token" {
  count     = var.api_token_secret == "" ? 0 : 1
  secret_id = var.api_token_secret
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.fn["api"].member
}
