package api

// The /subscriptions routes: `kind: Subscription` resources (issue 9 item
// 7; shared/subscribe):
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
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/runtime"
	"github.com/noetl/gcpengine/shared/store"
	sub "github.com/noetl/gcpengine/shared/subscribe"
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
	regMu.Lock()
	defer regMu.Unlock()
	if registrar != nil {
		return registrar, nil
	}
	d, err := runtime.Get(ctx)
	if err != nil {
		return nil, err
	}
	admin, err := pubsubapi.NewSubscriptionAdminClient(context.Background())
	if err != nil {
		return nil, err
	}
	registrar = &sub.Registrar{Store: d.Store, Admin: admin, Playbooks: d.Catalog, Project: d.Cfg.Project,
		SubscribeURL: d.Cfg.SubscribeURL, PushServiceAccount: d.Cfg.PushServiceAccount, Log: d.Log}
	return registrar, nil
}

// SubscriptionRequest is the JSON form of a POST /subscriptions body.
type SubscriptionRequest struct {
	// Resource is the `kind: Subscription` YAML, placeholders substituted.
	Resource string `json:"resource"`
}

// subscriptions serves /subscriptions (rest: after "/subscriptions").
func subscriptions(w http.ResponseWriter, r *http.Request, rest string) {
	name := strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/")
	if name == "" {
		switch r.Method {
		case http.MethodPost:
			subscriptionRegister(w, r)
		case http.MethodGet:
			subscriptionList(w, r)
		default:
			methodNotAllowed(w, r, "GET, POST")
		}
		return
	}
	if strings.Contains(name, "/") {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no route for " + r.Method + " " + r.URL.Path})
		return
	}
	switch r.Method {
	case http.MethodGet:
		subscriptionGet(w, r, name)
	case http.MethodDelete:
		subscriptionDelete(w, r, name)
	default:
		methodNotAllowed(w, r, "GET, DELETE")
	}
}

// subscriptionError writes err with its status: 400 for an invalid
// resource or request, 404, 409, else 503.
func subscriptionError(w http.ResponseWriter, err error) {
	var ve *dsl.ValidationError
	switch {
	case errors.As(err, &ve):
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid subscription resource", "problems": ve.Problems, "message": err.Error()})
	case errs.Is(err, errs.InvalidArgument):
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]any{"error": err.Error()})
	case errs.Is(err, errs.AlreadyExists):
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error()})
	default:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
	}
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
		if err := jsonx.Unmarshal(body, &req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid JSON body: " + err.Error()})
			return
		}
		if req.Resource == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `a JSON body needs "resource": the subscription YAML`})
			return
		}
		src = []byte(req.Resource)
	}
	reg, err := Registrar(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
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
	d, err := runtime.Get(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
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
	d, err := runtime.Get(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		return
	}
	rec, err := d.Store.SubscriptionGet(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "subscription " + name + " not registered"})
		return
	}
	if err != nil {
		subscriptionError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func subscriptionDelete(w http.ResponseWriter, r *http.Request, name string) {
	reg, err := Registrar(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		return
	}
	err = reg.Delete(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "subscription " + name + " not registered"})
		return
	}
	if err != nil {
		subscriptionError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
