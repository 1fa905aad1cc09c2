// Package subscribe runs `kind: Subscription` resources (README "Running NoETL v2 playbooks";
// NoETL's subscription listener, noetl/ai-meta#90): each message of the
// resource's Pub/Sub subscription starts one execution of its playbook,
// with the workload NoETL's runtime builds (noetl-worker
// src/subscription.rs build_payload), the header directives of RFC §7
// (noetl-tools src/tools/source/directives.rs), W3C trace propagation, and
// the store-and-forward spool of RFC §8 (noetl-tools src/spool: a circuit
// breaker per downstream, buffer_and_ack to GCS, ordered replay).
//
// Serverless mapping: the subscribe function receives Pub/Sub push
// deliveries (or pulls batches on its ticks for dispatch.batch_dispatch)
// and calls Service.Handle; ticks (Cloud Scheduler in GCP, the stack's
// ticker locally) call Service.Tick, which probes the downstreams, drains
// spools and pulls batches. An execution's id is derived from the
// subscription name and the message id (launch.DerivedID), so a
// redelivered message starts nothing new. Registrar wires a registration
// to Pub/Sub (the subscription's push config) for the api.
package subscribe

import (
	"time"

	"encoding/json"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/launch"
)

// SourcePubSub is the source name in workloads and spool items.
const SourcePubSub = "pubsub"

// Message is one Pub/Sub message as a push body or a pull carries it.
type Message struct {
	// ID is the Pub/Sub message id (unique per topic).
	ID string `json:"messageId"`
	// Data is the message body.
	Data []byte `json:"data"`
	// Attributes are the message attributes.
	Attributes map[string]string `json:"attributes,omitempty"`
	// PublishTime is when the source accepted the message (UTC; RFC 3339
	// on the wire, omitted when zero: unknown).
	PublishTime time.Time `json:"publishTime,omitzero"`
	// OrderingKey is the Pub/Sub ordering key ("" = none).
	OrderingKey string `json:"orderingKey,omitempty"`
	// DeliveryAttempt is Pub/Sub's delivery count (0 when the
	// subscription has no dead-letter policy).
	DeliveryAttempt int `json:"deliveryAttempt,omitempty"`
}

// Envelope is the normalized message a playbook reads under
// workload.message (NoETL's PolledMessage): id, data (the body parsed as
// JSON when it is JSON, else the UTF-8 string), headers (the attributes
// with lowercased names, RFC §7.1), attributes (verbatim) and metadata
// (messageId, publishTime, deliveryAttempt, orderingKey).
type Envelope struct {
	ID         string         `json:"id"`
	Data       any            `json:"data"`
	Headers    map[string]any `json:"headers"`
	Attributes map[string]any `json:"attributes"`
	Metadata   map[string]any `json:"metadata"`
}

// DecodePayload parses b as JSON (numbers as in jsonx: whole numbers
// int64), else returns it as a string (invalid UTF-8 replaced), as NoETL's
// decode_payload does.
func DecodePayload(b []byte) any {
	var v any
	if json.Valid(b) {
		if err := jsonx.Unmarshal(b, &v); err == nil {
			return jsonx.Normalize(v)
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// publishText is the publish time as the envelope's metadata shows it to
// templates: RFC 3339 text, UTC ("" when unknown).
func publishText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Normalize returns the envelope of m.
func Normalize(m Message) Envelope {
	e := Envelope{ID: m.ID, Data: DecodePayload(m.Data), Headers: map[string]any{}, Attributes: map[string]any{},
		Metadata: map[string]any{"messageId": m.ID, "publishTime": publishText(m.PublishTime)}}
	for k, v := range m.Attributes {
		e.Attributes[k] = v
		e.Headers[strings.ToLower(k)] = v
	}
	if m.DeliveryAttempt > 0 {
		e.Metadata["deliveryAttempt"] = int64(m.DeliveryAttempt)
	} else {
		e.Metadata["deliveryAttempt"] = nil
	}
	if m.OrderingKey != "" {
		e.Metadata["orderingKey"] = m.OrderingKey
	}
	return e
}

func (e Envelope) asMap() map[string]any {
	return map[string]any{"id": e.ID, "data": e.Data, "headers": e.Headers, "attributes": e.Attributes, "metadata": e.Metadata}
}

// Applied is one directive that took effect (RFC §7.6 audit).
type Applied struct {
	Header   string `json:"header"`
	Controls string `json:"controls"`
	Value    string `json:"effective_value"`
}

// Plan is what a message's directives decided (noetl-tools DispatchPlan):
// "" fields were not set by any directive.
type Plan struct {
	// Playbook overrides dispatch.playbook (an allowed value only).
	Playbook string `json:"playbook_override,omitempty"`
	// ExecutionPool is the resolved pool (dispatch.execution_pool
	// directive, else a priority mapping); it selects the circuit
	// downstream of the same name.
	ExecutionPool string `json:"execution_pool_override,omitempty"`
	// IdempotencyKey is the idempotency_key directive's value.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	ContentType    string `json:"content_type,omitempty"`
	SchemaHint     string `json:"schema_hint,omitempty"`
	// Trace is the W3C trace context (headers.trace.propagate: w3c).
	Trace   map[string]string `json:"trace,omitempty"`
	Applied []Applied         `json:"applied,omitempty"`
}

// headerValue returns the last value of a header (NoETL: multi-valued
// headers are last-wins for directives).
func headerValue(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []any:
		if len(x) > 0 {
			s, ok := x[len(x)-1].(string)
			return s, ok
		}
	}
	return "", false
}

// Resolve applies the directive allowlist h to a message's normalized
// headers (RFC §7): only allowlisted headers act; dispatch.playbook and
// dispatch.execution_pool values must be in their allowed list; priority
// maps a value to a pool; an explicit dispatch.execution_pool directive
// wins over priority. With trace propagation w3c, traceparent, tracestate
// and the allowlisted baggage members are extracted.
func Resolve(h dsl.SubscriptionHeaders, headers map[string]any) Plan {
	var p Plan
	poolExplicit := false
	for _, d := range h.Directives {
		v, ok := headerValue(headers[d.Header])
		if !ok {
			continue
		}
		applied := Applied{Header: d.Header, Controls: d.Controls, Value: v}
		switch d.Controls {
		case dsl.ControlPlaybook:
			if !containsStr(d.Allowed, v) {
				continue
			}
			p.Playbook = v
		case dsl.ControlExecutionPool:
			if !containsStr(d.Allowed, v) {
				continue
			}
			p.ExecutionPool, poolExplicit = v, true
		case dsl.ControlPriority:
			pool, ok := d.Map[v]
			if !ok {
				continue
			}
			applied.Value = pool
			if !poolExplicit {
				p.ExecutionPool = pool
			}
		case dsl.ControlIdempotencyKey:
			p.IdempotencyKey = v
		case dsl.ControlContentType:
			p.ContentType = v
		case dsl.ControlSchemaHint:
			p.SchemaHint = v
		default:
			continue
		}
		p.Applied = append(p.Applied, applied)
	}
	if h.Trace.Propagate == "w3c" {
		tc := map[string]string{}
		for _, k := range []string{"traceparent", "tracestate"} {
			if v, ok := headerValue(headers[k]); ok && v != "" {
				tc[k] = v
			}
		}
		if b, ok := headerValue(headers["baggage"]); ok && len(h.Trace.BaggageAllowlist) > 0 {
			var kept []string
			for _, member := range strings.Split(b, ",") {
				key := strings.TrimSpace(strings.SplitN(member, "=", 2)[0])
				if containsStr(h.Trace.BaggageAllowlist, key) {
					kept = append(kept, strings.TrimSpace(member))
				}
			}
			if len(kept) > 0 {
				tc["baggage"] = strings.Join(kept, ",")
			}
		}
		if len(tc) > 0 {
			p.Trace = tc
		}
	}
	return p
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Workload builds the workload of a message's execution (noetl-worker
// build_payload): the envelope under "message", the subscription's name
// under "subscription" and the source under "source"; then the
// payload_from selection merged at the top (without replacing those
// three) when it is an object, else under "body"; then idempotency_key
// and content_type from the directives.
func Workload(e Envelope, payloadFrom string, p Plan, subscription, source string) map[string]any {
	w := map[string]any{"message": e.asMap(), "subscription": subscription, "source": source}
	var primary any
	switch payloadFrom {
	case dsl.PayloadAttributes:
		primary = e.Attributes
	case dsl.PayloadBody:
		if s, ok := e.Data.(string); ok {
			primary = s
		} else {
			b, _ := json.Marshal(e.Data)
			primary = string(b)
		}
	default:
		primary = e.Data
	}
	if m, ok := primary.(map[string]any); ok {
		for k, v := range m {
			if _, taken := w[k]; !taken {
				w[k] = v
			}
		}
	} else {
		w["body"] = primary
	}
	if p.IdempotencyKey != "" {
		w["idempotency_key"] = p.IdempotencyKey
	}
	if p.ContentType != "" {
		w["content_type"] = p.ContentType
	}
	return jsonx.Clone(w).(map[string]any)
}

// DedupKey is the key a message's execution id is derived from: the
// topic and the message id (Pub/Sub message ids are unique within a
// topic, so every subscription of the topic derives the same key), or,
// when the resource enables dedup (spec.dedup.enabled), the idempotency
// key directive's value when there is one (RFC §10 OQ8: the explicit key
// wins).
func DedupKey(s *dsl.Subscription, topic string, p Plan, messageID string) string {
	if s.Dedup != nil && p.IdempotencyKey != "" {
		return "key:" + p.IdempotencyKey
	}
	return "msg:" + topic + "/" + messageID
}

// ExecutionID returns the execution id of a message of subscription name
// with dedup key key: launch.DerivedID("subscription", name, key), a
// BIGINT like every execution id. A redelivered message (same id) starts
// the same execution again, which launch.Start treats as a no-op.
func ExecutionID(name, key string) string { return launch.DerivedID("subscription", name, key) }
