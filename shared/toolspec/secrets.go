package toolspec

// Secrets is the configuration of kind secrets: values read from the
// environment or the credential store (NoETL core/secrets).
type Secrets struct {
	Provider  string            `json:"provider,omitempty" enum:"env,environment,credential,credentials,store,keychain,noetl,google,gcp" default:"credential" doc:"Where the value is read: env (an allow-listed environment variable) or credential (the credential store; google/gcp secrets are read through it)."`
	Key       string            `json:"key,omitempty" alias:"secret_name,secret,credential" doc:"The variable or credential name (credential: name or name.field); in a list of tasks name: is the task's label, so write key:."`
	Map       map[string]string `json:"map,omitempty" doc:"Several values at once: result field → variable name (env) or credential name / credential.field (NoETL's keychain map: shape)."`
	Default   Optional          `json:"default,omitempty" doc:"The value when the variable is unset or the credential (field) does not exist, instead of a not_found error (null is a value)."`
	ProjectID string            `json:"project_id,omitempty" ignored:"cloud secret managers are read through the credential store, which knows its project" doc:"NoETL: the secret manager's project."`
	Version   any               `json:"version,omitempty" ignored:"the credential store keeps one version of a credential" doc:"NoETL: the secret's version."`
	Auth      any               `json:"auth,omitempty" ignored:"the credential store is the engine's own: no credential is needed to read it" doc:"NoETL: the credential for the secret manager."`
}

// Kind implements Spec.
func (Secrets) Kind() string { return "secrets" }
