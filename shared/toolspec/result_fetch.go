package toolspec

// ResultFetch is the configuration of kind result_fetch: a stored result
// fetched by reference (noetl-tools ResultFetchConfig).
type ResultFetch struct {
	Ref            any    `json:"ref,omitempty" alias:"result_ref,uri" required:"ref" doc:"The reference: a stored result's reference map, its inner $ref map, a physical key (gs://bucket/key or key) or a logical noetl:// URI."`
	Action         string `json:"action,omitempty" alias:"operation" enum:"get" default:"get" doc:"What to do: get (the only action)."`
	Prefer         any    `json:"prefer,omitempty" ignored:"results are read from the results tier directly (no Arrow Flight service)" doc:"NoETL: the preferred transport (flight or storage)."`
	FlightEndpoint any    `json:"flight_endpoint,omitempty" ignored:"no Arrow Flight service: results are read from the results tier" doc:"NoETL: the Arrow Flight endpoint."`
	BearerToken    any    `json:"bearer_token,omitempty" ignored:"no Arrow Flight service: results are read from the results tier" doc:"NoETL: the Arrow Flight bearer token."`
	TLSCAPath      any    `json:"tls_ca_path,omitempty" ignored:"no Arrow Flight service: results are read from the results tier" doc:"NoETL: the Arrow Flight CA file."`
	ClientCertPath any    `json:"client_cert_path,omitempty" ignored:"no Arrow Flight service: results are read from the results tier" doc:"NoETL: the Arrow Flight client certificate."`
	ClientKeyPath  any    `json:"client_key_path,omitempty" ignored:"no Arrow Flight service: results are read from the results tier" doc:"NoETL: the Arrow Flight client key."`
}

// Kind implements Spec.
func (ResultFetch) Kind() string { return "result_fetch" }
