package toolspec

// Artifact is the configuration of kind artifact: a stored result read back (noetl-tools ArtifactConfig); the reference is input.result_ref.
// Not yet read through this struct by its tool (the tool still reads its
// configuration map): the keys are the validator's.
type Artifact struct {
	Action         string `json:"action,omitempty" enum:"get" doc:"What to do: get (put is done by the engine: output.store)."`
	URI            any    `json:"uri,omitempty" doc:"Artifact uri."`
	Data           any    `json:"data,omitempty" doc:"Artifact data."`
	Compress       any    `json:"compress,omitempty" doc:"Artifact compress."`
	Credential     any    `json:"credential,omitempty" doc:"Artifact credential."`
	Prefer         any    `json:"prefer,omitempty" doc:"Artifact prefer."`
	FlightEndpoint any    `json:"flight_endpoint,omitempty" doc:"Artifact flight endpoint."`
	BearerToken    any    `json:"bearer_token,omitempty" doc:"Artifact bearer token."`
	TLSCAPath      any    `json:"tls_ca_path,omitempty" doc:"Artifact tls ca path."`
	ClientCertPath any    `json:"client_cert_path,omitempty" doc:"Artifact client cert path."`
	ClientKeyPath  any    `json:"client_key_path,omitempty" doc:"Artifact client key path."`
}

// Kind implements Spec.
func (Artifact) Kind() string { return "artifact" }
