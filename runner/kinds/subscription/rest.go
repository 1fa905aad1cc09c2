package subscription

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultEndpoint is Pub/Sub's REST endpoint in GCP.
const DefaultEndpoint = "https://pubsub.googleapis.com"

// maxResponseBytes bounds a Pub/Sub answer the kind reads (a pull of
// MaxBatch messages of Pub/Sub's 10 MB each would be larger than any
// drain should hold; 64 MiB).
const maxResponseBytes = 64 << 20

// restClient is Pub/Sub's subscriber API (v1) over REST: JSON over HTTP,
// the three calls a bounded drain needs (Pull, Acknowledge,
// ModifyAckDeadline). The kind speaks REST rather than link Pub/Sub's
// client library: it runs in the runner, whose build links no client of
// the control plane's services (the boundary test, shared/planes), and
// its connections pass the egress policy through hc's transport. The
// Pub/Sub emulator serves the same REST API on its port.
type restClient struct {
	// base is the endpoint: DefaultEndpoint or http://<emulator host:port>.
	base string
	// hc sends the calls (the egress policy's transport in the runner).
	hc *http.Client
	// tokens authenticates the calls (nil: none, the emulator).
	tokens oauth2.TokenSource
}

// receivedMessage is one message of a Pull answer (REST field names).
type receivedMessage struct {
	AckID           string        `json:"ackId"`
	Message         pubsubMessage `json:"message"`
	DeliveryAttempt int32         `json:"deliveryAttempt"`
}

// pubsubMessage is a Pub/Sub message: Data is base64 on the wire
// (encoding/json decodes it into bytes), PublishTime RFC 3339.
type pubsubMessage struct {
	Data        []byte            `json:"data"`
	Attributes  map[string]string `json:"attributes"`
	MessageID   string            `json:"messageId"`
	PublishTime time.Time         `json:"publishTime"`
	OrderingKey string            `json:"orderingKey"`
}

// pull asks for at most max messages of sub (projects/<p>/subscriptions/<s>);
// the call waits until messages arrive or ctx ends.
func (c *restClient) pull(ctx context.Context, sub string, max int) ([]receivedMessage, error) {
	var out struct {
		ReceivedMessages []receivedMessage `json:"receivedMessages"`
	}
	err := c.call(ctx, sub, "pull", map[string]any{"maxMessages": max}, &out)
	return out.ReceivedMessages, err
}

// acknowledge acks ids.
func (c *restClient) acknowledge(ctx context.Context, sub string, ids []string) error {
	return c.call(ctx, sub, "acknowledge", map[string]any{"ackIds": ids}, nil)
}

// modifyAckDeadline sets the ack deadline of ids to seconds (0: redeliver
// at once).
func (c *restClient) modifyAckDeadline(ctx context.Context, sub string, ids []string, seconds int) error {
	return c.call(ctx, sub, "modifyAckDeadline", map[string]any{"ackIds": ids, "ackDeadlineSeconds": seconds}, nil)
}

// call POSTs body to <base>/v1/<sub>:<verb> and decodes the answer into
// out (nil: discarded). A non-2xx answer is returned as a gRPC status
// error with the code Pub/Sub's error body names ("status": "NOT_FOUND",
// …; else the HTTP status's), so failure classifies both transports alike.
func (c *restClient) call(ctx context.Context, sub, verb string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/"+sub+":"+verb, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.tokens != nil {
		tok, err := c.tokens.Token()
		if err != nil {
			return status.Errorf(codes.Unauthenticated, "pubsub token: %v", err)
		}
		tok.SetAuthHeader(req)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return err
	}
	if len(data) > maxResponseBytes {
		return status.Errorf(codes.ResourceExhausted, "the %s answer is larger than %d bytes", verb, maxResponseBytes)
	}
	if resp.StatusCode/100 != 2 {
		return restError(resp.StatusCode, data)
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return status.Errorf(codes.Internal, "decode the %s answer: %v", verb, err)
	}
	return nil
}

// restError is the gRPC status error of a Pub/Sub REST error answer
// ({"error": {"code", "message", "status"}}).
func restError(httpStatus int, data []byte) error {
	var e struct {
		Error struct {
			Message string          `json:"message"`
			Status  json.RawMessage `json:"status"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	msg := e.Error.Message
	if msg == "" {
		msg = strings.TrimSpace(string(data))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		msg = fmt.Sprintf("HTTP %d: %s", httpStatus, msg)
	}
	var code codes.Code
	if len(e.Error.Status) == 0 || code.UnmarshalJSON(e.Error.Status) != nil {
		code = httpCode(httpStatus)
	}
	return status.Error(code, msg)
}

// httpCode maps an HTTP status to the gRPC code Google's APIs pair with it.
func httpCode(s int) codes.Code {
	switch s {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusConflict:
		return codes.Aborted
	case http.StatusPreconditionFailed:
		return codes.FailedPrecondition
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	}
	if s >= 500 {
		return codes.Internal
	}
	return codes.Unknown
}
