package subscription

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// fakePubSub is pstest's in-memory Pub/Sub (Addr: its gRPC address, for
// the fixtures) behind a REST front (REST: host:port) that speaks the
// subscriber calls of Pub/Sub's REST API the kind uses, translated to the
// gRPC calls of the same service: the kind is tested over the wire it
// uses against the state pstest keeps.
type fakePubSub struct {
	Addr, REST string
}

func newFakePubSub(t *testing.T) *fakePubSub {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { srv.Close() })
	sc, err := pubsubapi.NewSubscriptionAdminClient(context.Background(), option.WithEndpoint(srv.Addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	f := &fakePubSub{Addr: srv.Addr}
	path := regexp.MustCompile(`^/v1/(projects/[^/]+/subscriptions/[^/:]+):(pull|acknowledge|modifyAckDeadline)$`)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := path.FindStringSubmatch(r.URL.Path)
		if r.Method != http.MethodPost || m == nil {
			http.Error(w, `{"error": {"code": 404, "message": "no such method", "status": "NOT_FOUND"}}`, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req, resp proto.Message
		switch m[2] {
		case "pull":
			req = &pubsubpb.PullRequest{}
		case "acknowledge":
			req = &pubsubpb.AcknowledgeRequest{}
		default:
			req = &pubsubpb.ModifyAckDeadlineRequest{}
		}
		if err := protojson.Unmarshal(body, req); err != nil {
			http.Error(w, `{"error": {"code": 400, "message": "bad body", "status": "INVALID_ARGUMENT"}}`, http.StatusBadRequest)
			return
		}
		var err error
		switch x := req.(type) {
		case *pubsubpb.PullRequest:
			x.Subscription = m[1]
			resp, err = sc.Pull(r.Context(), x)
		case *pubsubpb.AcknowledgeRequest:
			x.Subscription = m[1]
			err = sc.Acknowledge(r.Context(), x)
		case *pubsubpb.ModifyAckDeadlineRequest:
			x.Subscription = m[1]
			err = sc.ModifyAckDeadline(r.Context(), x)
		}
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			st, _ := status.FromError(err)
			name := strings.ToUpper(regexp.MustCompile(`([a-z])([A-Z])`).ReplaceAllString(st.Code().String(), "${1}_${2}"))
			code := http.StatusBadRequest
			if name == "NOT_FOUND" {
				code = http.StatusNotFound
			}
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": st.Message(), "status": name}})
			return
		}
		if resp == nil {
			_, _ = io.WriteString(w, "{}")
			return
		}
		b, _ := protojson.Marshal(resp)
		_, _ = w.Write(b)
	}))
	t.Cleanup(hs.Close)
	f.REST = strings.TrimPrefix(hs.URL, "http://")
	return f
}
