package toolspec

// HTTP is the configuration of kind http: one HTTP request
// (noetl-tools HttpConfig; NoETL's http executor).
type HTTP struct {
	URL             string         `json:"url,omitempty" alias:"endpoint" required:"url" doc:"The absolute http:// or https:// URL."`
	Method          string         `json:"method,omitempty" enum:"GET,POST,PUT,PATCH,DELETE,HEAD,OPTIONS" default:"GET" doc:"The request method."`
	Headers         map[string]any `json:"headers,omitempty" doc:"Request headers (values stringified)."`
	Params          any            `json:"params,omitempty" alias:"query" doc:"Query parameters: a mapping (a list value repeats the parameter) or a query string."`
	JSON            any            `json:"json,omitempty" doc:"The body, sent as JSON (a string is sent as is, as application/json)."`
	Body            any            `json:"body,omitempty" alias:"payload" doc:"The body: a string is sent as is, any other value as JSON."`
	Data            any            `json:"data,omitempty" alias:"form" doc:"The body (NoETL's data/form spelling): a string is sent as is, any other value as JSON."`
	Timeout         any            `json:"timeout,omitempty" doc:"The request's timeout: seconds, or {connect, read, total} in seconds (capped by the attempt's timeout)."`
	TimeoutSeconds  any            `json:"timeout_seconds,omitempty" doc:"The request's timeout in seconds (NoETL's spelling; timeout wins)."`
	Auth            any            `json:"auth,omitempty" alias:"credential" doc:"A credential name whose request headers are added (or a keychain entry)."`
	FollowRedirects any            `json:"follow_redirects,omitempty" ignored:"redirects are always followed (Go's default, up to 10; every connection goes through the egress policy)" doc:"NoETL: follow redirects."`
	ResponseType    any            `json:"response_type,omitempty" ignored:"the body is decoded from its content type (JSON, else text)" doc:"NoETL: how to decode the body."`
	Verify          any            `json:"verify,omitempty" alias:"verify_ssl" ignored:"TLS certificates are always verified" doc:"NoETL: verify the server's TLS certificate."`
}

// Kind implements Spec.
func (HTTP) Kind() string { return "http" }
