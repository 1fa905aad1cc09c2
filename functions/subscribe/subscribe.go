// Package subscribe is the subscribe Cloud Function (HTTP trigger): the
// push endpoint of registered `kind: Subscription` resources (README "Running NoETL v2 playbooks"
// item 7). Each registration's Pub/Sub subscription pushes to
// /push/<name>; Cloud Scheduler (GCP) or the stack's ticker calls /tick.
//
//	POST /push/{name}  a Pub/Sub push body {"message": {...}, "subscription", "deliveryAttempt"}
//	                   → 200 {"outcome": "started"|"spooled"|"dead_lettered", "execution_id", ...}
//	                   → 404 unknown registration, 409 a subscription that is not the
//	                     registration's, 503 transient (the control plane and the spool refuse):
//	                     non-2xx answers make Pub/Sub redeliver
//	POST /tick         probes, drains spools, pulls batch-dispatch subscriptions
//	                   → 200 {"subscriptions": {name: {circuit, drain, pulled, error}}}
//	GET  /healthz      → 200
//
// A body that is not a push body is filed in the DLQ and acked (200): it
// can never succeed (the functions' rule: permanent → ack and record,
// transient → non-2xx).
package subscribe

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/storage"
	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/errs"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/store"
	sub "github.com/noetl/gcpengine/shared/subscribe"
	"github.com/noetl/gcpengine/shared/subscribe/gcsspool"
	"github.com/noetl/gcpengine/shared/subscribe/pubsubpull"
	"github.com/noetl/gcpengine/shared/wiring"
)

func init() { functions.HTTP("subscribe", Subscribe) }

// Needs is what subscribe builds besides the base every function has
// (wiring.Needs; wiring.Get): the catalog (the playbooks subscriptions start) and the credential store (their keychains). No tasks, results, control plane or tools.
const Needs = wiring.NeedCatalog | wiring.NeedCredentials

// maxPushBody bounds a push body: a 10 MB Pub/Sub message in base64 plus
// its attributes.
const maxPushBody = 16 << 20

var (
	mu  sync.Mutex
	svc *sub.Service
)

// Service returns the instance's subscription service, built on first
// use on the runtime's dependencies (shared/wiring) plus a GCS client
// (spools) and a Pub/Sub subscription admin client (batch pulls). An
// error is returned to this request and tried again on the next.
func Service(ctx context.Context) (*sub.Service, *wiring.Deps, error) {
	d, err := wiring.Get(ctx, Needs)
	if err != nil {
		return nil, nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if svc != nil {
		return svc, d, nil
	}
	gcs, err := storage.NewClient(context.Background())
	if err != nil {
		return nil, nil, err
	}
	admin, err := pubsubapi.NewSubscriptionAdminClient(context.Background())
	if err != nil {
		gcs.Close()
		return nil, nil, err
	}
	// A kafka subscription's brokers are the author's: every connection
	// passes the same egress policy as the runner's kinds (NOETL_EGRESS_*).
	policy, err := egress.New(d.Cfg.Egress.Profile, d.Cfg.Egress.Allow, d.Cfg.Egress.Deny)
	if err != nil {
		d.Log.Error("egress policy", "error", err.Error())
		policy, _ = egress.New("cloud", nil, nil)
	}
	svc = &sub.Service{Store: d.Store, Bus: d.Bus, Playbooks: d.Catalog, Credentials: d.Credentials,
		Buckets: gcsspool.Buckets(gcs), Puller: pubsubpull.Puller{Client: admin}, Egress: policy, Log: d.Log}
	return svc, d, nil
}

// Subscribe routes the function's requests (see the package doc).
func Subscribe(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "" || p == "/healthz":
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	case strings.HasPrefix(p, "/push/") && r.Method == http.MethodPost:
		push(w, r, strings.TrimPrefix(p, "/push/"))
	case p == "/tick" && r.Method == http.MethodPost:
		tick(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no route for " + r.Method + " " + r.URL.Path})
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// pushBody is a Pub/Sub push request body.
type pushBody struct {
	Message struct {
		Data           []byte            `json:"data"`
		Attributes     map[string]string `json:"attributes"`
		MessageID      string            `json:"messageId"`
		MessageIDSnake string            `json:"message_id"`
		// PublishTime is Google's RFC 3339 text (parsed by DecodePush).
		PublishTime      string `json:"publishTime"`
		PublishTimeSnake string `json:"publish_time"`
		OrderingKey      string `json:"orderingKey"`
	} `json:"message"`
	Subscription    string `json:"subscription"`
	DeliveryAttempt int    `json:"deliveryAttempt"`
}

// DecodePush decodes a Pub/Sub push body into its message and the
// subscription that pushed it. Its error is permanent.
func DecodePush(b []byte) (sub.Message, string, error) {
	var pb pushBody
	if err := json.Unmarshal(b, &pb); err != nil {
		return sub.Message{}, "", errs.Wrap(errs.InvalidArgument, err, "subscribe: not a Pub/Sub push body")
	}
	m := sub.Message{ID: pb.Message.MessageID, Data: pb.Message.Data, Attributes: pb.Message.Attributes,
		OrderingKey: pb.Message.OrderingKey, DeliveryAttempt: pb.DeliveryAttempt}
	if m.ID == "" {
		m.ID = pb.Message.MessageIDSnake
	}
	// Pub/Sub sends the publish time as RFC 3339 text; one that does not
	// parse is left unknown (zero) rather than refusing the message.
	pt := pb.Message.PublishTime
	if pt == "" {
		pt = pb.Message.PublishTimeSnake
	}
	if t, err := time.Parse(time.RFC3339Nano, pt); err == nil {
		m.PublishTime = t.UTC()
	}
	if m.ID == "" {
		return sub.Message{}, "", errs.New(errs.InvalidArgument, "subscribe: push body without message.messageId")
	}
	return m, pb.Subscription, nil
}

func push(w http.ResponseWriter, r *http.Request, name string) {
	ctx := r.Context()
	s, d, err := Service(ctx)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPushBody+1))
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "read body: " + err.Error()})
		return
	}
	msg, pushedBy, err := DecodePush(body)
	if err == nil && len(body) > maxPushBody {
		err = errs.New(errs.InvalidArgument, "subscribe: push body larger than %d bytes", maxPushBody)
	}
	if err != nil {
		// Never from Pub/Sub: file it and ack.
		excerpt := string(redact.New(nil).Bytes(body))
		if len(excerpt) > 2048 {
			excerpt = excerpt[:2048]
		}
		now := time.Now().UTC()
		e := store.DLQEntry{MessageID: "subscribe-" + name + "-undecodable-" + now.Format(time.RFC3339Nano), Attempts: 1, LastError: err.Error(), FirstSeen: now, LastSeen: now,
			Payload: excerpt, ContextExcerpt: "subscription " + name + ": " + err.Error(), Source: "subscribe", Kind: "message"}
		if perr := d.Store.DLQPut(ctx, e); perr != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": perr.Error()})
			return
		}
		d.Log.ErrorContext(ctx, "subscription push body dead-lettered", "subscription", name, "error", err.Error())
		writeJSON(w, http.StatusOK, map[string]any{"outcome": sub.OutcomeDeadLettered, "reason": err.Error()})
		return
	}
	reg, err := s.Lookup(ctx, name)
	if errors.Is(err, sub.ErrUnknownSubscription) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": err.Error()})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
		return
	}
	if pushedBy != "" && pushedBy != reg.Record.PubSubSubscription {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "subscription " + name + " consumes " + reg.Record.PubSubSubscription + ", not " + pushedBy})
		return
	}
	res, err := s.Handle(ctx, reg, msg)
	if err != nil {
		d.Log.WarnContext(ctx, "subscription message refused; Pub/Sub redelivers", "subscription", name, "message_id", msg.ID, "error", err.Error())
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func tick(w http.ResponseWriter, r *http.Request) {
	s, _, err := Service(r.Context())
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
		return
	}
	rep, err := s.Tick(r.Context())
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
