package http

import nethttp "net/http"

// Error kinds of an http task (outcome.error.kind), NoETL's error taxonomy
// (noetl/core/errors classify_error), which NoETL's playbooks match in
// their policy rules (`output.error.kind == 'rate_limit'`).
const (
	// KindRateLimit is a 429 answer (retryable).
	KindRateLimit = "rate_limit"
	// KindAuth is a 401 or 403 answer.
	KindAuth = "auth"
	// KindNotFound is a 404 answer.
	KindNotFound = "not_found"
	// KindClientError is any other 4xx answer (408 is retryable).
	KindClientError = "client_error"
	// KindServerError is a 5xx answer (retryable).
	KindServerError = "server_error"
	// KindConnection is a failure to connect or a connection lost before a
	// complete answer (retryable).
	KindConnection = "connection"
	// KindTimeout is a request that exceeded its deadline (retryable).
	KindTimeout = "timeout"
)

// StatusKind returns the error kind of an HTTP status ≥ 400 and whether
// it is retryable (408, 429 and 5xx are; NoETL canonical v10 retry spec §3.1).
func StatusKind(code int) (kind string, retryable bool) {
	switch {
	case code == nethttp.StatusTooManyRequests:
		return KindRateLimit, true
	case code == nethttp.StatusUnauthorized || code == nethttp.StatusForbidden:
		return KindAuth, false
	case code == nethttp.StatusNotFound:
		return KindNotFound, false
	case code >= 500:
		return KindServerError, true
	default:
		return KindClientError, code == nethttp.StatusRequestTimeout
	}
}
