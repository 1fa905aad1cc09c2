package toolspec

// Artifact is the configuration of kind artifact: a stored result read
// back (noetl-tools ArtifactConfig; NoETL's artifact executor). The
// reference is usually the task's input.result_ref.
type Artifact struct {
	Action         string `json:"action,omitempty" alias:"operation" enum:"get" default:"get" doc:"What to do: get (put is done by the engine when a step ends: output.store)."`
	URI            any    `json:"uri,omitempty" alias:"result_ref,ref" doc:"The reference when the input has no result_ref: a stored result's reference map, its inner $ref map, a physical key (gs://bucket/key or key) or a logical noetl:// URI."`
	Data           any    `json:"data,omitempty" ignored:"results are stored by the engine (output.store), never by an artifact task" doc:"NoETL: the value an artifact put stores."`
	Compress       any    `json:"compress,omitempty" ignored:"results are stored by the engine (output.store), never by an artifact task" doc:"NoETL: compress the value an artifact put stores."`
	Credential     any    `json:"credential,omitempty" ignored:"the results tier is the engine's own: no credential is needed to read it" doc:"NoETL: the storage credential."`
	Prefer         any    `json:"prefer,omitempty" ignored:"results are read from the results tier directly (no Arrow Flight service)" doc:"NoETL: the preferred transport (flight or storage)."`
	FlightEndpoint any    `json:"flight_endpoint,omitempty" ignored:"no Arrow Flight service: results are read from the results tier" doc:"NoETL: the Arrow Flight endpoint."`
	BearerToken    any    `json:"bearer_token,omitempty" ignored:"no Arrow Flight service: results are read from the results tier" doc:"NoETL: the Arrow Flight bearer token."`
	TLSCAPath      any    `json:"tls_ca_path,omitempty" ignored:"no Arrow Flight service: results are read from the results tier" doc:"NoETL: the Arrow Flight CA file."`
	ClientCertPath any    `json:"client_cert_path,omitempty" ignored:"no Arrow Flight service: results are read from the results tier" doc:"NoETL: the Arrow Flight client certificate."`
	ClientKeyPath  any    `json:"client_key_path,omitempty" ignored:"no Arrow Flight service: results are read from the results tier" doc:"NoETL: the Arrow Flight client key."`
}

// Kind implements Spec.
func (Artifact) Kind() string { return "artifact" }
