# Keychain credentials: one Secret Manager secret per credential, named
# noetl-cred-<name>, whose versions hold the credential's data (JSON);
# its kind, grants and current version are in Firestore credentials/{name}.
# Terraform creates the secrets; values are set through the api
# (scripts/noetl credentials set NAME --kind K --data - --grant PATTERN),
# which adds a version and records it. On the local stack the values are
# sealed in the Firestore collection credential_values.
resource "google_secret_manager_secret" "credential" {
  for_each  = toset(var.credentials)
  secret_id = "noetl-cred-${each.value}"
  replication {
    auto {}
  }
  depends_on = [google_project_service.services]
}

# The static bearer token api and emit accept (optional; NOETL_API_TOKEN).
resource "google_secret_manager_secret_iam_member" "api_token" {
  for_each  = var.api_token_secret == "" ? toset([]) : toset(["api", "emit"])
  secret_id = var.api_token_secret
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.fn[each.value].member
}

# The deployment's signing key (NOETL_SIGNING_KEY, shared/sign): every
# event batch, command and Cloud Task body the functions produce carries
# its HMAC-SHA256, and route, materialize, dispatch and execute refuse
# anything else; it also seals secret-named workload values in Firestore.
# Terraform generates 32 random bytes (kept in its state: protect the
# state) as the secret's first version. To rotate, add a version
# "NEW,OLD" (the first key signs, every key verifies), redeploy, then
# "NEW" once the queues and subscriptions hold nothing signed with OLD.
resource "random_bytes" "signing_key" {
  length = 32
}

resource "google_secret_manager_secret" "signing_key" {
  secret_id = "noetl-signing-key"
  replication {
    auto {}
  }
  depends_on = [google_project_service.services]
}

resource "google_secret_manager_secret_version" "signing_key" {
  secret      = google_secret_manager_secret.signing_key.id
  secret_data = random_bytes.signing_key.hex
}

resource "google_secret_manager_secret_iam_member" "signing_key" {
  for_each  = local.functions
  secret_id = google_secret_manager_secret.signing_key.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.fn[each.key].member
}
