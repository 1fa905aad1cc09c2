package toolspec

// ResultFetch is the configuration of kind result_fetch: a stored result fetched by reference (noetl-tools ResultFetchConfig).
// Not yet read through this struct by its tool (the tool still reads its
// configuration map): the keys are the validator's.
type ResultFetch struct {
	Ref            any `json:"ref,omitempty" required:"ref" doc:"The stored result's reference."`
	Prefer         any `json:"prefer,omitempty" doc:"Result fetch prefer."`
	FlightEndpoint any `json:"flight_endpoint,omitempty" doc:"Result fetch flight endpoint."`
	BearerToken    any `json:"bearer_token,omitempty" doc:"Result fetch bearer token."`
	TLSCAPath      any `json:"tls_ca_path,omitempty" doc:"Result fetch tls ca path."`
	ClientCertPath any `json:"client_cert_path,omitempty" doc:"Result fetch client cert path."`
	ClientKeyPath  any `json:"client_key_path,omitempty" doc:"Result fetch client key path."`
}

// Kind implements Spec.
func (ResultFetch) Kind() string { return "result_fetch" }
