package api

// The /subscriptions routes: `kind: Subscription` resources (README
// "Subscriptions"; shared/subscribe):
//
//	POST   /subscriptions         body: the resource YAML, or JSON {"resource": "<yaml>"}
//	                              → 201 {name, generation, pubsub_subscription, topic, delivery,
//	                              push_endpoint, playbook, warnings}; 400 {"error", "problems"}
//	                              (invalid resource, ${...} placeholders left, unknown playbook
//	                              or Pub/Sub subscription); 409 (the subscription pushes
//	                              elsewhere or another registration consumes it)
//	GET    /subscriptions         → 200 {"subscriptions": [registration without source]}
//	GET    /subscriptions/{name}  → 200 registration with its source; 404
//	DELETE /subscriptions/{name}  → 204 (the Pub/Sub subscription is a pull subscription
//	                              again); 404
//
// Other methods are 405; store or Pub/Sub failures are 503.

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"

	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"

	"github.com/noetl/gcpengine/shared/store"
	sub "github.com/noetl/gcpengine/shared/subscribe"
	"github.com/noetl/gcpengine/shared/wiring"
)

// maxSubscriptionBody bounds a POST /subscriptions body.
const maxSubscriptionBody = 1 << 20

var (
	regMu sync.Mutex
	// registrar is the instance's registrar: nil until Registrar opens it.
	registrar *sub.Registrar
)

// Registrar returns the instance's subscription registrar, opening a
// Pub/Sub subscription admin client on first use (the emulator through
// PUBSUB_EMULATOR_HOST on the stack). An error is returned to this
// request and tried again on the next.
func Registrar(ctx context.Context) (*sub.Registrar, error) {
	return openOnce(ctx, &regMu, &registrar, func(d *wiring.Deps) (*sub.Registrar, error) {
		admin, err := pubsubapi.NewSubscriptionAdminClient(context.Background())
		if err != nil {
			return nil, err
		}
		return registrarOf(d, admin), nil
	})
}

// registrarOf is the registrar of d with admin: its subscriptions push to
// NOETL_SUBSCRIBE_URL as NOETL_PUSH_SERVICE_ACCOUNT (Registrar's
// SubscribeURL and PushServiceAccount).
func registrarOf(d *wiring.Deps, admin *pubsubapi.SubscriptionAdminClient) *sub.Registrar {
	return &sub.Registrar{Store: d.Store, Admin: admin, Playbooks: d.Catalog, Project: d.Cfg.Project,
		SubscribeURL: d.Cfg.SubscribeURL, PushServiceAccount: d.Cfg.PushServiceAccount, Log: d.Log}
}

// SubscriptionRequest is the JSON form of a POST /subscriptions body.
type SubscriptionRequest struct {
	// Resource is the `kind: Subscription` YAML, placeholders substituted.
	Resource string `json:"resource"`
}

// subscriptions serves /subscriptions (rest: after "/subscriptions").
func subscriptions(w http.ResponseWriter, r *http.Request, rest string) {
	collection{create: subscriptionRegister, list: subscriptionList, get: subscriptionGet, del: subscriptionDelete}.serve(w, r, rest)
}

// subscriptionError writes err: an invalid resource with its problems,
// anything else with the status of its code (400 for an invalid request,
// 404, 409, 503, ...: errs.HTTPStatus).
func subscriptionError(w http.ResponseWriter, err error) {
	if invalidDocument(w, err, "invalid subscription resource") {
		return
	}
	unavailable(w, err)
}

func subscriptionRegister(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSubscriptionBody+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "cannot read body: " + err.Error()})
		return
	}
	if len(body) > maxSubscriptionBody {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "body is larger than 1 MiB"})
		return
	}
	src := body
	if strings.HasPrefix(strings.TrimSpace(string(body)), "{") {
		var req SubscriptionRequest
		if !decodeJSON(w, body, &req) {
			return
		}
		if req.Resource == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `a JSON body needs "resource": the subscription YAML`})
			return
		}
		src = []byte(req.Resource)
	}
	reg, ok := opened(r.Context(), w, Registrar)
	if !ok {
		return
	}
	rec, spec, err := reg.Register(r.Context(), src)
	if err != nil {
		subscriptionError(w, err)
		return
	}
	warnings := []string{}
	for _, p := range spec.Warnings {
		warnings = append(warnings, p.String())
	}
	v := *rec
	v.Source = ""
	writeJSON(w, http.StatusCreated, map[string]any{"name": v.Name, "generation": v.Generation, "pubsub_subscription": v.PubSubSubscription,
		"topic": v.Topic, "delivery": v.Delivery, "push_endpoint": v.PushEndpoint, "playbook": v.Playbook, "warnings": warnings})
}

func subscriptionList(w http.ResponseWriter, r *http.Request) {
	d, ok := opened(r.Context(), w, deps)
	if !ok {
		return
	}
	list, err := d.Store.SubscriptionList(r.Context())
	if err != nil {
		subscriptionError(w, err)
		return
	}
	for i := range list {
		list[i].Source = ""
	}
	writeJSON(w, http.StatusOK, map[string]any{"subscriptions": list})
}

func subscriptionGet(w http.ResponseWriter, r *http.Request, name string) {
	d, ok := opened(r.Context(), w, deps)
	if !ok {
		return
	}
	rec, err := d.Store.SubscriptionGet(r.Context(), name)
	if !found(w, err, store.ErrNotFound, "subscription "+name+" not registered", subscriptionError) {
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func subscriptionDelete(w http.ResponseWriter, r *http.Request, name string) {
	reg, ok := opened(r.Context(), w, Registrar)
	if !ok {
		return
	}
	if !found(w, reg.Delete(r.Context(), name), store.ErrNotFound, "subscription "+name+" not registered", subscriptionError) {
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
