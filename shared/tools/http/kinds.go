package http

import (
	nethttp "net/http"

	"github.com/noetl/gcpengine/shared/types"
)

// Error kinds of an http task (outcome.error.kind), NoETL's error taxonomy
// (noetl/core/errors classify_error), which NoETL's playbooks match in
// their policy rules (`output.error.kind == 'rate_limit'`).
const (
	// KindRateLimit is a 429 answer (retryable).
	KindRateLimit = types.ErrKindRateLimit
	// KindAuth is a 401 or 403 answer.
	KindAuth = types.ErrKindAuth
	// KindNotFound is a 404 answer.
	KindNotFound = types.ErrKindNotFound
	// KindClientError is any other 4xx answer (408 is retryable).
	KindClientError = types.ErrKindClientError
	// KindServerError is a 5xx answer (retryable).
	KindServerError = types.ErrKindServerError
	// KindConnection is a failure to connect or a connection lost before a
	// complete answer (retryable).
	KindConnection = types.ErrKindConnection
	// KindTimeout is a request that exceeded its deadline (retryable).
	KindTimeout = types.ErrKindTimeout
)

// StatusKind returns the error kind of an HTTP status ≥ 400 and whether
// it is retryable (408, 429 and 5xx are; NoETL canonical v10 retry spec §3.1).
func StatusKind(code int) (kind types.ErrorKind, retryable bool) {
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
