// Package pubsubrest serves the subscriber calls of Pub/Sub's REST API
// (v1: POST /v1/projects/<p>/subscriptions/<s>:pull, :acknowledge,
// :modifyAckDeadline, JSON bodies as the service takes them) over a
// gRPC implementation of the subscriber service, such as pstest's. Google's
// Pub/Sub emulator serves REST beside gRPC; pstest serves gRPC only, so the
// stack's Pub/Sub of user data and the subscription kind's tests put this
// front on it: the kind speaks REST (it links no Pub/Sub client library,
// runner/kinds/subscription).
//
// Serve also answers gRPC on the same listener (HTTP/2 cleartext with
// content-type application/grpc goes to the gRPC server), as the
// emulator does on its one port.
package pubsubrest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Subscriber is the part of the subscriber service the REST front calls
// (pubsubpb.SubscriberServer has it; pstest's *GServer implements it).
type Subscriber interface {
	Pull(context.Context, *pubsubpb.PullRequest) (*pubsubpb.PullResponse, error)
	Acknowledge(context.Context, *pubsubpb.AcknowledgeRequest) (*emptypb.Empty, error)
	ModifyAckDeadline(context.Context, *pubsubpb.ModifyAckDeadlineRequest) (*emptypb.Empty, error)
}

// maxBody bounds a request body (the calls carry ack ids only).
const maxBody = 8 << 20

var path = regexp.MustCompile(`^/v1/(projects/[^/]+/subscriptions/[^/:]+):(pull|acknowledge|modifyAckDeadline)$`)

// Handler returns the REST front of sub. An unknown path answers 404, a
// body that is not the call's JSON 400, and a gRPC error the HTTP status
// and the error body ({"error": {"code", "message", "status"}}) Google's
// APIs answer for its code.
func Handler(sub Subscriber) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := path.FindStringSubmatch(r.URL.Path)
		if r.Method != http.MethodPost || m == nil {
			writeError(w, status.Errorf(codes.NotFound, "no such method: %s %s", r.Method, r.URL.Path))
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			writeError(w, status.Errorf(codes.InvalidArgument, "read the body: %v", err))
			return
		}
		var req proto.Message
		switch m[2] {
		case "pull":
			req = &pubsubpb.PullRequest{}
		case "acknowledge":
			req = &pubsubpb.AcknowledgeRequest{}
		default:
			req = &pubsubpb.ModifyAckDeadlineRequest{}
		}
		if len(strings.TrimSpace(string(body))) > 0 {
			if err := protojson.Unmarshal(body, req); err != nil {
				writeError(w, status.Errorf(codes.InvalidArgument, "invalid JSON payload: %v", err))
				return
			}
		}
		var resp proto.Message
		switch x := req.(type) {
		case *pubsubpb.PullRequest:
			x.Subscription = m[1]
			resp, err = sub.Pull(r.Context(), x)
		case *pubsubpb.AcknowledgeRequest:
			x.Subscription = m[1]
			resp, err = sub.Acknowledge(r.Context(), x)
		case *pubsubpb.ModifyAckDeadlineRequest:
			x.Subscription = m[1]
			resp, err = sub.ModifyAckDeadline(r.Context(), x)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		b, err := protojson.Marshal(resp)
		if err != nil {
			writeError(w, status.Errorf(codes.Internal, "encode: %v", err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}

// httpStatus is the HTTP status Google's APIs answer for a gRPC code.
var httpStatus = map[codes.Code]int{
	codes.InvalidArgument: http.StatusBadRequest, codes.FailedPrecondition: http.StatusBadRequest,
	codes.OutOfRange: http.StatusBadRequest, codes.Unauthenticated: http.StatusUnauthorized,
	codes.PermissionDenied: http.StatusForbidden, codes.NotFound: http.StatusNotFound,
	codes.AlreadyExists: http.StatusConflict, codes.Aborted: http.StatusConflict,
	codes.ResourceExhausted: http.StatusTooManyRequests, codes.Canceled: 499,
	codes.Unimplemented: http.StatusNotImplemented, codes.Unavailable: http.StatusServiceUnavailable,
	codes.DeadlineExceeded: http.StatusGatewayTimeout,
}

// statusName is the canonical name of a code ("NOT_FOUND"), as the error
// body's "status" carries it.
func statusName(c codes.Code) string {
	var out strings.Builder
	prev := rune(0)
	for _, r := range c.String() {
		if r >= 'A' && r <= 'Z' && prev >= 'a' && prev <= 'z' {
			out.WriteByte('_')
		}
		out.WriteRune(r)
		prev = r
	}
	name := strings.ToUpper(out.String())
	if name == "CANCELED" {
		name = "CANCELLED"
	}
	return name
}

func writeError(w http.ResponseWriter, err error) {
	st, _ := status.FromError(err)
	code, ok := httpStatus[st.Code()]
	if !ok {
		code = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": st.Message(), "status": statusName(st.Code())}})
}

// Serve answers on ln: gRPC requests (HTTP/2 with content-type
// application/grpc) go to gs, the rest to the REST front of sub. It
// returns the server; Close it to stop.
func Serve(ln net.Listener, gs *grpc.Server, sub Subscriber) *http.Server {
	rest := Handler(sub)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			gs.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
	hs := &http.Server{Handler: h2c.NewHandler(h, &http2.Server{}), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return hs
}
