package auth

import (
	"io"
	"net/http"
	"strconv"
)

// TooLargeError is a request body over its limit (HTTP 413).
type TooLargeError struct {
	// Limit is the limit in bytes; Size the declared size (Content-Length)
	// or -1 when the body was cut off while reading.
	Limit, Size int64
}

// Error implements error.
func (e *TooLargeError) Error() string {
	if e.Size >= 0 {
		return "request body of " + strconv.FormatInt(e.Size, 10) + " bytes is over the limit of " + strconv.FormatInt(e.Limit, 10) + " bytes"
	}
	return "request body is over the limit of " + strconv.FormatInt(e.Limit, 10) + " bytes"
}

// ReadBody reads r's whole body if it is at most limit bytes; a declared
// (Content-Length) or actual larger body is a *TooLargeError. A nil body
// reads as empty.
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, &TooLargeError{Limit: limit, Size: r.ContentLength}
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Limit: limit, Size: -1}
	}
	return b, nil
}
