package dsl

import (
	"bytes"
	"fmt"
	stdnet "net"
	"net/url"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file reads `kind: Subscription` resources: NoETL's subscription
// listener (noetl/ai-meta#90; noetl-worker src/subscription.rs parse_spec,
// noetl-tools src/tools/source/directives.rs and src/spool) in the subset
// this engine runs: a Google Pub/Sub source whose messages start
// executions of a playbook, with header directives, W3C trace propagation
// and a GCS store-and-forward spool behind a circuit breaker. The runtime
// is shared/subscribe; README "Subscriptions" says what each field does.

// Subscription is a parsed and validated `kind: Subscription` resource.
// Fields hold the resource's values with the defaults applied (NoETL's
// defaults, except the spool backend, which is gcs: the only one here).
type Subscription struct {
	// APIVersion is as written (noetl.io/v1, v2 or v10).
	APIVersion string `json:"apiVersion"`
	// Metadata names the subscription: Name is its key everywhere (the
	// registration, the push endpoint, the spool prefix).
	Metadata SubscriptionMetadata `json:"metadata"`
	// Source is the message source: "pubsub" or "kafka".
	Source string `json:"source"`
	// Topic, Group, Brokers and Auth are a kafka source's spec.topic,
	// spec.group, spec.brokers (host:port; or the credential's) and
	// spec.auth (a kafka credential's name). A kafka subscription is
	// always pulled on the subscribe function's ticks (batch dispatch).
	Topic   string   `json:"topic,omitempty"`
	Group   string   `json:"group,omitempty"`
	Brokers []string `json:"brokers,omitempty"`
	Auth    string   `json:"auth,omitempty"`
	// Mode is "pull" (default) or "push": how NoETL's runtime consumes
	// the subscription. Here both are delivered by Pub/Sub push to the
	// subscribe function, except with Dispatch.BatchDispatch (pulled).
	Mode string `json:"mode"`
	// Activation is "continuous" (the only value).
	Activation string `json:"activation"`
	// PubSubSubscription is spec.subscription: an existing Pub/Sub
	// subscription, "projects/<p>/subscriptions/<s>" or a bare id.
	PubSubSubscription string `json:"subscription"`
	// Runtime holds spec.runtime.
	Runtime SubscriptionRuntime `json:"runtime"`
	// Dispatch holds spec.dispatch.
	Dispatch SubscriptionDispatch `json:"dispatch"`
	// Headers holds spec.headers (the directive allowlist, RFC §7).
	Headers SubscriptionHeaders `json:"headers"`
	// Dedup holds spec.dedup when enabled (nil otherwise).
	Dedup *SubscriptionDedup `json:"dedup,omitempty"`
	// Spool holds spec.spool; Mode "off" when absent.
	Spool Spool `json:"spool"`
	// Warnings are the non-fatal findings (placeholders left to
	// substitute, fields accepted but without effect here).
	Warnings []Problem `json:"-"`
	// Text is the resource's YAML as loaded.
	Text string `json:"-"`
}

// SubscriptionMetadata is a subscription's metadata.
type SubscriptionMetadata struct {
	// Name is required: 1 to 128 characters [A-Za-z0-9_.-], starting with
	// a letter or digit (it is a Firestore document id, a URL path
	// segment and a GCS object prefix).
	Name        string         `json:"name"`
	Path        string         `json:"path,omitempty"`
	Description string         `json:"description,omitempty"`
	Extra       map[string]any `json:"extra,omitempty"`
}

// SubscriptionRuntime is spec.runtime. Target and Pool name NoETL's worker
// pool; they have no effect here (the subscribe function is the runtime).
type SubscriptionRuntime struct {
	Target string `json:"target,omitempty"`
	Pool   string `json:"pool,omitempty"`
	// Batch is the most messages one pull takes (1..1000, default 100),
	// used by batch dispatch.
	Batch int `json:"batch"`
	// TimeoutMS bounds one pull's wait in milliseconds (default 1000).
	TimeoutMS int `json:"timeout_ms"`
}

// Payload sources of dispatch.payload_from (noetl-worker build_payload).
const (
	// PayloadJSON merges the decoded JSON body at the top of the workload
	// (a non-object body goes under "body"): the default.
	PayloadJSON = "message.json"
	// PayloadBody puts the body as a string under "body".
	PayloadBody = "message.body"
	// PayloadAttributes merges the message attributes at the top.
	PayloadAttributes = "message.attributes"
)

// SubscriptionDispatch is spec.dispatch: what each message starts.
type SubscriptionDispatch struct {
	// Playbook is the catalog path (or file path) of the playbook each
	// message starts (required).
	Playbook string `json:"playbook"`
	// PayloadFrom is PayloadJSON (default), PayloadBody or
	// PayloadAttributes.
	PayloadFrom string `json:"payload_from"`
	// ExecutionPool names NoETL's command segment; no effect here.
	ExecutionPool string `json:"execution_pool,omitempty"`
	// BatchDispatch makes the engine pull the subscription in batches of
	// BatchMax messages and start their executions together (one per
	// message, as NoETL's POST /api/execute/batch does) instead of taking
	// push deliveries one at a time.
	BatchDispatch bool `json:"batch_dispatch,omitempty"`
	// BatchMax caps a batch (default Runtime.Batch).
	BatchMax int `json:"batch_max,omitempty"`
}

// Directive controls (noetl-tools directives.rs Control).
const (
	ControlPlaybook       = "dispatch.playbook"
	ControlExecutionPool  = "dispatch.execution_pool"
	ControlPriority       = "priority"
	ControlIdempotencyKey = "idempotency_key"
	ControlContentType    = "content_type"
	ControlSchemaHint     = "schema_hint"
)

var controls = []string{ControlPlaybook, ControlExecutionPool, ControlPriority, ControlIdempotencyKey, ControlContentType, ControlSchemaHint}

// SubscriptionHeaders is spec.headers: which message attributes act as
// dispatch instructions (RFC §7: untrusted by default, only allowlisted
// headers act).
type SubscriptionHeaders struct {
	// Normalize is informational: attribute names are always lowercased
	// into message.headers.
	Normalize bool `json:"normalize,omitempty"`
	// Directives is the allowlist.
	Directives []Directive `json:"directives,omitempty"`
	// Trace is the trace propagation.
	Trace TraceConfig `json:"trace"`
	// Passthrough is "data": other headers stay in message.headers.
	Passthrough string `json:"passthrough"`
}

// Directive is one allowlisted header (RFC §7.2).
type Directive struct {
	// Header is the attribute name, lowercased.
	Header string `json:"header"`
	// Controls is one of the Control* constants.
	Controls string `json:"controls"`
	// Allowed constrains dispatch.playbook and dispatch.execution_pool
	// (required, non-empty for them): other values are ignored.
	Allowed []string `json:"allowed,omitempty"`
	// Map maps a priority value to a pool (required for priority).
	Map map[string]string `json:"map,omitempty"`
}

// TraceConfig is spec.headers.trace.
type TraceConfig struct {
	// Propagate is "w3c" (traceparent/tracestate attributes join the
	// execution's trace) or "none" (default).
	Propagate string `json:"propagate"`
	// BaggageAllowlist names baggage keys that may cross.
	BaggageAllowlist []string `json:"baggage_allowlist,omitempty"`
}

// SubscriptionDedup is spec.dedup when enabled: the directive's
// idempotency key (else the message id) names the execution, so messages
// with one key start one execution. WindowSecs is accepted; here the
// window is unbounded (the execution id is derived from the key).
type SubscriptionDedup struct {
	WindowSecs int `json:"window_secs"`
}

// Spool modes (noetl-tools spool SpoolMode).
const (
	SpoolOff          = "off"
	SpoolBufferAndAck = "buffer_and_ack"
	SpoolHybrid       = "hybrid"
)

// Spool is spec.spool: store-and-forward while a downstream is down
// (RFC §8). With Mode off the message is refused (Pub/Sub redelivers).
type Spool struct {
	Mode string `json:"mode"`
	// Backend is "gcs".
	Backend string `json:"backend"`
	// Bucket is the GCS bucket; objects go under
	// subscriptions/<name>/spool/ (dead letters under .../dlq/).
	Bucket string `json:"bucket,omitempty"`
	// Ordering is "per_key" (default), "global" or "none": replay order.
	Ordering string `json:"ordering"`
	// OrderingKey names the header carrying the per-key lane (default the
	// Pub/Sub ordering key).
	OrderingKey string         `json:"ordering_key,omitempty"`
	Circuit     CircuitConfig  `json:"circuit"`
	Retention   SpoolRetention `json:"retention"`
	Drain       SpoolDrain     `json:"drain"`
	// HybridEscalateAfterMS: in hybrid mode, messages are refused (Pub/Sub
	// redelivers) until the circuit has been open this long, then spooled
	// (default 30000).
	HybridEscalateAfterMS int `json:"hybrid_escalate_after_ms"`
}

// CircuitConfig is spec.spool.circuit (noetl-tools spool/circuit.rs).
type CircuitConfig struct {
	// TripAfter consecutive failures open the circuit (≥1, default 5).
	TripAfter int `json:"trip_after"`
	// ProbeAfterMS: an open circuit of a passive downstream lets one
	// dispatch through after this long (default 30000).
	ProbeAfterMS int `json:"probe_after_ms"`
	// ProbeIntervalMS: how often active downstreams are probed (default
	// 5000).
	ProbeIntervalMS int `json:"probe_interval_ms"`
	// Downstream lists the dependencies (empty: one passive "default").
	Downstream []Downstream `json:"downstream,omitempty"`
}

// Downstream is one dependency a breaker keys on.
type Downstream struct {
	Name string `json:"name"`
	// Probe is "http" (default), "tcp", "nats" or "passive".
	Probe string `json:"type"`
	// Target is the URL (http), host:port (tcp) or nats URL (nats).
	Target string `json:"target,omitempty"`
}

// SpoolRetention is spec.spool.retention.
type SpoolRetention struct {
	// MaxAgeHours dead-letters older items on drain (0 = no bound).
	MaxAgeHours int `json:"max_age_hours,omitempty"`
	// MaxBytes bounds the spool (0 = no bound; default 1 GiB).
	MaxBytes int64 `json:"max_bytes"`
	// OnFull is "stop_acking" (default: refuse, Pub/Sub redelivers),
	// "drop_to_dlq" (evict the oldest) or "alert_only".
	OnFull string `json:"on_full"`
}

// SpoolDrain is spec.spool.drain.
type SpoolDrain struct {
	// RatePerSec bounds replays per second (0 = unbounded).
	RatePerSec int `json:"rate_per_sec,omitempty"`
	// MaxReplayAttempts: an item failing this many replays is
	// dead-lettered (default 5).
	MaxReplayAttempts int `json:"max_replay_attempts"`
	// OnRecovery is "ordered_then_live" (default) or "interleave".
	OnRecovery string `json:"on_recovery"`
}

// placeholderRE matches the ${VAR} placeholders of a subscription resource
// (substituted by the caller before registration).
var placeholderRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Placeholders returns the names of the ${VAR} placeholders in src, in
// order of first appearance, once each (comments included: a placeholder
// in a comment is harmless but still reported by callers that refuse
// them, so substitute everywhere).
func Placeholders(src string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range placeholderRE.FindAllStringSubmatch(src, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// Substitute replaces each ${VAR} of src whose name is in vars and returns
// the result with the names that had no value (sorted). Values are
// inserted verbatim.
func Substitute(src string, vars map[string]string) (string, []string) {
	missing := map[string]bool{}
	out := placeholderRE.ReplaceAllStringFunc(src, func(m string) string {
		name := m[2 : len(m)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		missing[name] = true
		return m
	})
	return out, sortedKeys(missing)
}

// ResourceKind returns the top-level `kind` of a YAML document ("" when
// it cannot be read), so a caller can tell a Subscription from a
// Playbook before loading it.
func ResourceKind(src []byte) string {
	var doc struct {
		Kind string `yaml:"kind"`
	}
	if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&doc); err != nil {
		return ""
	}
	return doc.Kind
}

// LoadSubscriptionFile reads and loads the subscription resource at path.
func LoadSubscriptionFile(path string) (*Subscription, error) {
	return loadFile(path, LoadSubscription)
}

// LoadSubscription parses and validates a `kind: Subscription` resource.
// name labels the source in problem messages. On any problem it returns a
// nil subscription and a *ValidationError listing every problem with its
// YAML line (like Load); accepted fields without effect here and ${VAR}
// placeholders (which the caller must substitute before registration) are
// Warnings. Unknown keys are errors. LoadSubscription never panics.
//
// Rejected with a message naming what they need: sources other than
// pubsub, spec.auth / spec.endpoint / spool.credential (the engine reaches
// Pub/Sub and GCS with its own service account), spool backends other
// than gcs, the nats/kafka connection keys.
func LoadSubscription(src []byte, name string) (sub *Subscription, err error) {
	l := newLoader(name)
	defer func() {
		if r := recover(); r != nil {
			sub, err = nil, l.panicked(r, "subscription")
		}
	}()
	if root := l.document(src, "subscription", "spec"); root != nil {
		sub = l.subscription(root)
	}
	if sub != nil {
		for _, p := range Placeholders(string(src)) {
			l.warnings = append(l.warnings, Problem{Line: placeholderLine(src, p), Message: fmt.Sprintf("placeholder ${%s} must be substituted before registration", p), Severity: SeverityWarning})
		}
	}
	if len(l.problems) > 0 {
		return nil, l.rejected()
	}
	sub.Warnings = sortProblems(dedup(l.warnings))
	sub.Text = string(src)
	return sub, nil
}

func placeholderLine(src []byte, name string) int {
	for i, line := range strings.Split(string(src), "\n") {
		if strings.Contains(line, "${"+name+"}") {
			return i + 1
		}
	}
	return 0
}

var subscriptionNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ValidSubscriptionName reports whether name can name a subscription
// resource (see SubscriptionMetadata.Name).
func ValidSubscriptionName(name string) bool { return subscriptionNameRE.MatchString(name) }

// hasPlaceholder reports whether s holds a ${VAR} placeholder (its format
// cannot be checked before substitution).
func hasPlaceholder(s string) bool { return placeholderRE.MatchString(s) }

func (l *loader) subscription(root *yaml.Node) *Subscription {
	s := &Subscription{}
	have := map[string]bool{}
	if !l.walk(root, "", "the subscription document", func(e entry, fp string) {
		have[e.key] = true
		switch e.key {
		case "apiVersion":
			if v, ok := l.str(e.v, fp, "apiVersion"); ok {
				switch v {
				case APIVersion, LegacyAPIVersion, "noetl.io/v10":
				default:
					l.errf(e.k, fp, "unsupported apiVersion %q: use %s or %s", v, LegacyAPIVersion, APIVersion)
				}
				s.APIVersion = v
			}
		case "kind":
			l.choice(nil, e, fp, "kind", false, "kind must be Subscription, got %q", "Subscription")
		case "metadata":
			l.subMetadata(s, e.v, fp)
		case "spec":
			l.subSpec(s, e.v, fp)
		default:
			l.errf(e.k, fp, "unknown root key %q (allowed: apiVersion, kind, metadata, spec)", e.key)
		}
	}) {
		return nil
	}
	for _, k := range []string{"apiVersion", "kind", "metadata", "spec"} {
		if !have[k] {
			l.errf(root, "", "%s is required", k)
		}
	}
	return s
}

func (l *loader) subMetadata(s *Subscription, n *yaml.Node, path string) {
	if !l.walk(n, path, "metadata", func(e entry, fp string) {
		switch e.key {
		case "name":
			if v, ok := l.str(e.v, fp, "metadata.name"); ok {
				if !ValidSubscriptionName(v) {
					l.errf(e.k, fp, "metadata.name %q: use 1 to 128 letters, digits, '_', '.' or '-', starting with a letter or digit (it names the push endpoint and the spool prefix)", clip(v))
				}
				s.Metadata.Name = v
			}
		case "path":
			s.Metadata.Path, _ = l.str(e.v, fp, "metadata.path")
		case "description":
			s.Metadata.Description, _ = l.str(e.v, fp, "metadata.description")
		case "version", "labels", "tags":
			if s.Metadata.Extra == nil {
				s.Metadata.Extra = map[string]any{}
			}
			s.Metadata.Extra[e.key] = l.value(e.v, fp)
		default:
			l.warnf(e.k, fp, "unknown metadata key %q ignored (known: name, path, description, version, labels, tags)", e.key)
		}
	}) {
		return
	}
	if s.Metadata.Name == "" {
		l.errf(n, path+".name", "metadata.name is required")
	}
}

// sourceKeys are the connection keys of NoETL's other sources (noetl-tools
// SubscriptionConfig): rejected, this engine consumes Pub/Sub only.
var sourceKeys = []string{"url", "user", "password", "token", "stream", "consumer", "topic", "group", "brokers"}

func (l *loader) subSpec(s *Subscription, n *yaml.Node, path string) {
	s.Mode, s.Activation = "pull", "continuous"
	s.Runtime = SubscriptionRuntime{Batch: 100, TimeoutMS: 1000}
	s.Dispatch.PayloadFrom = PayloadJSON
	s.Headers = SubscriptionHeaders{Trace: TraceConfig{Propagate: "none"}, Passthrough: "data"}
	s.Spool = defaultSpool()
	s.Spool.Mode = SpoolOff
	have := map[string]entry{}
	kafka := map[string]entry{} // topic, group, brokers, auth: checked once the source is known
	paths := map[string]string{}
	if !l.walk(n, path, "spec", func(e entry, fp string) {
		have[e.key] = e
		switch e.key {
		case "source":
			l.choice(&s.Source, e, fp, "spec.source", true, "source %[1]q is not supported: this engine consumes Google Pub/Sub subscriptions (source: pubsub) and Kafka topics (source: kafka); %[1]s needs NoETL's worker runtime", "pubsub", "kafka")
		case "topic", "group", "brokers":
			kafka[e.key], paths[e.key] = e, fp
		case "mode":
			l.choice(&s.Mode, e, fp, "spec.mode", true, "mode %q: want pull or push", "pull", "push")
		case "activation":
			l.choice(&s.Activation, e, fp, "spec.activation", true, "activation %q is not supported: a registered subscription is continuous until deleted (activation: continuous)", "continuous")
		case "subscription":
			if v, ok := l.str(e.v, fp, "spec.subscription"); ok {
				if !hasPlaceholder(v) && !validPubSubSubscription(v) {
					l.errf(e.k, fp, "subscription %q: want projects/<project>/subscriptions/<id> or an id (3 to 255 letters, digits, -_.~+%%, starting with a letter)", clip(v))
				}
				s.PubSubSubscription = v
			}
		case "auth":
			kafka[e.key], paths[e.key] = e, fp
		case "endpoint":
			l.errf(e.k, fp, "endpoint is not supported: the engine reaches Pub/Sub through its own configuration (PUBSUB_EMULATOR_HOST on the local stack); remove endpoint")
		case "runtime":
			l.subRuntime(s, e.v, fp)
		case "dispatch":
			l.subDispatch(s, e.v, fp)
		case "headers":
			l.subHeaders(s, e.v, fp)
		case "dedup":
			l.subDedup(s, e.v, fp)
		case "limits":
			l.subLimits(e.v, fp)
		case "spool":
			l.subSpool(s, e.v, fp)
		default:
			if oneOf(e.key, sourceKeys) {
				l.errf(e.k, fp, "%s is a connection key of NoETL's nats/kafka sources: a pubsub subscription names its Pub/Sub subscription (spec.subscription) only", e.key)
				return
			}
			l.errf(e.k, fp, "unknown spec key %q (allowed: source, mode, activation, subscription, runtime, dispatch, headers, dedup, limits, spool)", e.key)
		}
	}) {
		return
	}
	required := []string{"source", "subscription", "dispatch"}
	if s.Source == "kafka" {
		required = []string{"source", "topic", "group", "dispatch"}
		l.subKafka(s, kafka, paths, n, path)
		if e, ok := have["subscription"]; ok {
			l.errf(e.k, path+".subscription", "spec.subscription names a Pub/Sub subscription: a kafka source reads spec.topic for spec.group")
		}
		if !s.Dispatch.BatchDispatch {
			s.Dispatch.BatchDispatch = true
			l.warnf(n, path+".dispatch.batch_dispatch", "a kafka subscription is pulled on the subscribe function's ticks (batch dispatch): a function cannot hold a Kafka consumer")
		}
	} else {
		for k, e := range kafka {
			if k == "auth" {
				l.errf(e.k, paths[k], "auth is not supported for Pub/Sub here: the engine reads the subscription with its own service account (grant it roles/pubsub.subscriber); remove auth")
				continue
			}
			l.errf(e.k, paths[k], "%s is a connection key of NoETL's nats/kafka sources: a pubsub subscription names its Pub/Sub subscription (spec.subscription) only", k)
		}
	}
	for _, k := range required {
		if _, ok := have[k]; !ok {
			l.errf(n, path+"."+k, "spec.%s is required", k)
		}
	}
	if s.Dispatch.BatchMax == 0 {
		s.Dispatch.BatchMax = s.Runtime.Batch
	}
}

var (
	pubsubIDRE       = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$`)
	pubsubProjectRE  = regexp.MustCompile(`^[a-z][a-z0-9\-.:]{0,62}$`)
	gcsBucketRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9._\-]{1,220}[a-z0-9]$`)
	directiveHeaders = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]*$`)
)

func validPubSubSubscription(s string) bool {
	if pubsubIDRE.MatchString(s) && !strings.HasPrefix(s, "goog") {
		return true
	}
	parts := strings.Split(s, "/")
	return len(parts) == 4 && parts[0] == "projects" && parts[2] == "subscriptions" &&
		pubsubProjectRE.MatchString(parts[1]) && pubsubIDRE.MatchString(parts[3]) && !strings.HasPrefix(parts[3], "goog")
}

func (l *loader) subRuntime(s *Subscription, n *yaml.Node, path string) {
	l.walk(n, path, "spec.runtime", func(e entry, fp string) {
		switch e.key {
		case "target", "pool":
			v, _ := l.str(e.v, fp, "runtime."+e.key)
			if e.key == "target" {
				s.Runtime.Target = v
			} else {
				s.Runtime.Pool = v
			}
			l.warnf(e.k, fp, "runtime.%s has no effect here: the subscribe function is the runtime (its instances scale with the deliveries)", e.key)
		case "batch":
			if v, ok := l.integer(e.v, fp, "runtime.batch"); ok {
				if v < 1 || v > 1000 {
					l.errf(e.k, fp, "runtime.batch %d: want 1 to 1000 messages", v)
				}
				s.Runtime.Batch = v
			}
		case "timeout_ms":
			if v, ok := l.integer(e.v, fp, "runtime.timeout_ms"); ok {
				if v < 0 || v > 600000 {
					l.errf(e.k, fp, "runtime.timeout_ms %d: want 0 to 600000", v)
				}
				s.Runtime.TimeoutMS = v
			}
		default:
			l.errf(e.k, fp, "unknown runtime key %q (allowed: target, pool, batch, timeout_ms)", e.key)
		}
	})
}

func (l *loader) subDispatch(s *Subscription, n *yaml.Node, path string) {
	if !l.walk(n, path, "spec.dispatch", func(e entry, fp string) {
		switch e.key {
		case "playbook":
			s.Dispatch.Playbook, _ = l.str(e.v, fp, "dispatch.playbook")
		case "payload_from":
			l.choice(&s.Dispatch.PayloadFrom, e, fp, "dispatch.payload_from", true, "payload_from %q: want "+PayloadJSON+", "+PayloadBody+" or "+PayloadAttributes, PayloadJSON, PayloadBody, PayloadAttributes)
		case "execution_pool":
			s.Dispatch.ExecutionPool, _ = l.str(e.v, fp, "dispatch.execution_pool")
			l.warnf(e.k, fp, "execution_pool has no effect here: every execution's units go through the work queue")
		case "batch_dispatch":
			s.Dispatch.BatchDispatch, _ = l.boolean(e.v, fp, "dispatch.batch_dispatch")
		case "batch_max":
			if v, ok := l.integer(e.v, fp, "dispatch.batch_max"); ok {
				if v < 1 || v > 1000 {
					l.errf(e.k, fp, "dispatch.batch_max %d: want 1 to 1000", v)
				}
				s.Dispatch.BatchMax = v
			}
		default:
			l.errf(e.k, fp, "unknown dispatch key %q (allowed: playbook, payload_from, execution_pool, batch_dispatch, batch_max)", e.key)
		}
	}) {
		return
	}
	if s.Dispatch.Playbook == "" {
		l.errf(n, path+".playbook", "dispatch.playbook is required: the playbook each message starts")
	}
}

func (l *loader) subHeaders(s *Subscription, n *yaml.Node, path string) {
	l.walk(n, path, "spec.headers", func(e entry, fp string) {
		switch e.key {
		case "normalize":
			s.Headers.Normalize, _ = l.boolean(e.v, fp, "headers.normalize")
		case "passthrough":
			l.choice(&s.Headers.Passthrough, e, fp, "headers.passthrough", true, "passthrough %q: only data (headers that are not directives stay in message.headers)", "data")
		case "trace":
			l.walk(e.v, fp, "headers.trace", func(t entry, tp string) {
				switch t.key {
				case "propagate":
					l.choice(&s.Headers.Trace.Propagate, t, tp, "trace.propagate", true, "trace.propagate %q: want w3c or none", "w3c", "none")
				case "baggage_allowlist":
					s.Headers.Trace.BaggageAllowlist = l.strList(t.v, tp, "trace.baggage_allowlist")
				default:
					l.errf(t.k, tp, "unknown trace key %q (allowed: propagate, baggage_allowlist)", t.key)
				}
			})
		case "directives":
			items, _ := l.list(e.v, fp, "headers.directives", "a list")
			seen := map[string]bool{}
			for i, c := range items {
				if dv, ok := l.directive(c, idx(fp, i)); ok {
					if seen[dv.Header+"\x00"+dv.Controls] {
						l.errf(c, idx(fp, i), "directive %s → %s is declared twice", dv.Header, dv.Controls)
					}
					seen[dv.Header+"\x00"+dv.Controls] = true
					s.Headers.Directives = append(s.Headers.Directives, dv)
				}
			}
		default:
			l.errf(e.k, fp, "unknown headers key %q (allowed: normalize, directives, trace, passthrough)", e.key)
		}
	})
}

func (l *loader) directive(n *yaml.Node, path string) (Directive, bool) {
	var d Directive
	good := true
	if !l.walk(n, path, "a directive", func(e entry, fp string) {
		switch e.key {
		case "header":
			if v, ok := l.str(e.v, fp, "directive header"); ok {
				if !directiveHeaders.MatchString(v) {
					l.errf(e.k, fp, "header %q is not an attribute name", clip(v))
					good = false
				}
				d.Header = strings.ToLower(v)
			}
		case "controls":
			if v, ok := l.str(e.v, fp, "directive controls"); ok {
				if !oneOf(v, controls) {
					l.errf(e.k, fp, "controls %q: want one of %s", clip(v), strings.Join(controls, ", "))
					good = false
				}
				d.Controls = v
			}
		case "allowed":
			d.Allowed = l.strList(e.v, fp, "directive allowed")
		case "map":
			m := l.dict(e.v, fp, "directive map")
			if len(m) > 0 {
				d.Map = map[string]string{}
				for k, v := range m {
					sv, ok := v.(string)
					if !ok {
						l.errf(e.v, join(fp, k), "map values must be pool names (strings)")
						good = false
						continue
					}
					d.Map[k] = sv
				}
			}
		default:
			l.errf(e.k, fp, "unknown directive key %q (allowed: header, controls, allowed, map)", e.key)
		}
	}) {
		return Directive{}, false
	}
	if d.Header == "" {
		l.errf(n, path+".header", "a directive needs header")
		good = false
	}
	if d.Controls == "" {
		l.errf(n, path+".controls", "a directive needs controls")
		good = false
	}
	switch d.Controls {
	case ControlPlaybook, ControlExecutionPool:
		if len(d.Allowed) == 0 {
			l.errf(n, path, "directive %q controls %s but declares no non-empty allowed list: a routing directive must constrain its targets (RFC §7.5)", d.Header, d.Controls)
			good = false
		}
	case ControlPriority:
		if len(d.Map) == 0 {
			l.errf(n, path, "directive %q controls priority but declares no non-empty map (value → pool) (RFC §7.5)", d.Header)
			good = false
		}
	}
	return d, good
}

func (l *loader) strList(n *yaml.Node, path, what string) []string {
	items, _ := l.list(n, path, what, "a list of strings")
	var out []string
	for i, c := range items {
		if v, ok := l.str(c, idx(path, i), what+" items"); ok {
			out = append(out, v)
		}
	}
	return out
}

func (l *loader) subDedup(s *Subscription, n *yaml.Node, path string) {
	enabled, window := false, 300
	if !l.walk(n, path, "spec.dedup", func(e entry, fp string) {
		switch e.key {
		case "enabled":
			enabled, _ = l.boolean(e.v, fp, "dedup.enabled")
		case "window_secs":
			if v, ok := l.integer(e.v, fp, "dedup.window_secs"); ok {
				if v < 1 {
					l.errf(e.k, fp, "dedup.window_secs %d: want a positive number of seconds", v)
				}
				window = v
				l.warnf(e.k, fp, "dedup.window_secs is not bounded here: a key starts one execution for as long as that execution is kept (the execution id is derived from it)")
			}
		default:
			l.errf(e.k, fp, "unknown dedup key %q (allowed: enabled, window_secs)", e.key)
		}
	}) {
		return
	}
	if enabled {
		s.Dedup = &SubscriptionDedup{WindowSecs: window}
	}
}

func (l *loader) subLimits(n *yaml.Node, path string) {
	l.walk(n, path, "spec.limits", func(e entry, fp string) {
		switch e.key {
		case "max_in_flight", "max_dispatch_per_sec":
			if v, ok := l.integer(e.v, fp, "limits."+e.key); ok && v < 1 {
				l.errf(e.k, fp, "limits.%s %d: want a positive number", e.key, v)
			}
			l.warnf(e.k, fp, "limits.%s is not enforced here: bound the subscribe function's instances and concurrency instead (Terraform var.functions.subscribe)", e.key)
		default:
			l.errf(e.k, fp, "unknown limits key %q (allowed: max_in_flight, max_dispatch_per_sec)", e.key)
		}
	})
}

func defaultSpool() Spool {
	return Spool{
		Mode: SpoolOff, Backend: "gcs", Ordering: "per_key",
		Circuit:               CircuitConfig{TripAfter: 5, ProbeAfterMS: 30000, ProbeIntervalMS: 5000},
		Retention:             SpoolRetention{MaxBytes: 1 << 30, OnFull: "stop_acking"},
		Drain:                 SpoolDrain{MaxReplayAttempts: 5, OnRecovery: "ordered_then_live"},
		HybridEscalateAfterMS: 30000,
	}
}

func (l *loader) enum(n *yaml.Node, path, what string, allowed ...string) (string, bool) {
	v, ok := l.str(n, path, what)
	if !ok {
		return "", false
	}
	if !oneOf(v, allowed) {
		l.errf(n, path, "%s %q: want one of %s", what, clip(v), strings.Join(allowed, ", "))
		return v, false
	}
	return v, true
}

func (l *loader) nonNegative(n *yaml.Node, path, what string) (int, bool) {
	v, ok := l.integer(n, path, what)
	if ok && v < 0 {
		l.errf(n, path, "%s %d: want 0 or more", what, v)
		return v, false
	}
	return v, ok
}

func (l *loader) subSpool(s *Subscription, n *yaml.Node, path string) {
	sp := defaultSpool()
	modeSet := false
	if !l.walk(n, path, "spec.spool", func(e entry, fp string) {
		switch e.key {
		case "mode":
			sp.Mode, _ = l.enum(e.v, fp, "spool.mode", SpoolOff, SpoolBufferAndAck, SpoolHybrid)
			modeSet = true
		case "backend":
			if v, ok := l.str(e.v, fp, "spool.backend"); ok {
				switch v {
				case "gcs":
				case "nats_object", "local_disk", "s3":
					l.errf(e.k, fp, "spool.backend %s is not available here: the subscribe function is serverless and spools to GCS (backend: gcs with a bucket)", v)
				default:
					l.errf(e.k, fp, "spool.backend %q: want gcs", clip(v))
				}
				sp.Backend = v
			}
		case "bucket":
			if v, ok := l.str(e.v, fp, "spool.bucket"); ok {
				if !hasPlaceholder(v) && !gcsBucketRE.MatchString(strings.TrimPrefix(v, "gs://")) {
					l.errf(e.k, fp, "spool.bucket %q is not a GCS bucket name", clip(v))
				}
				sp.Bucket = strings.TrimPrefix(v, "gs://")
			}
		case "path":
			l.errf(e.k, fp, "spool.path belongs to the local_disk backend, which is not available here (backend: gcs with a bucket)")
		case "credential":
			l.errf(e.k, fp, "spool.credential is not supported: the subscribe function writes the bucket with its own service account (grant it roles/storage.objectAdmin on the bucket)")
		case "ordering":
			sp.Ordering, _ = l.enum(e.v, fp, "spool.ordering", "global", "per_key", "none")
		case "ordering_key":
			if v, ok := l.str(e.v, fp, "spool.ordering_key"); ok {
				sp.OrderingKey = strings.ToLower(v)
			}
		case "hybrid_escalate_after_ms":
			sp.HybridEscalateAfterMS, _ = l.nonNegative(e.v, fp, "spool.hybrid_escalate_after_ms")
		case "circuit":
			l.subCircuit(&sp.Circuit, e.v, fp)
		case "retention":
			l.walk(e.v, fp, "spool.retention", func(r entry, rp string) {
				switch r.key {
				case "max_age_hours":
					sp.Retention.MaxAgeHours, _ = l.nonNegative(r.v, rp, "retention.max_age_hours")
				case "max_bytes":
					if isNull(r.v) {
						sp.Retention.MaxBytes = 0
						return
					}
					v, _ := l.nonNegative(r.v, rp, "retention.max_bytes")
					sp.Retention.MaxBytes = int64(v)
				case "on_full":
					sp.Retention.OnFull, _ = l.enum(r.v, rp, "retention.on_full", "stop_acking", "drop_to_dlq", "alert_only")
				default:
					l.errf(r.k, rp, "unknown retention key %q (allowed: max_age_hours, max_bytes, on_full)", r.key)
				}
			})
		case "drain":
			l.walk(e.v, fp, "spool.drain", func(d entry, dp string) {
				switch d.key {
				case "rate_per_sec":
					sp.Drain.RatePerSec, _ = l.nonNegative(d.v, dp, "drain.rate_per_sec")
				case "max_replay_attempts":
					if v, ok := l.integer(d.v, dp, "drain.max_replay_attempts"); ok {
						if v < 1 {
							l.errf(d.k, dp, "drain.max_replay_attempts %d: want 1 or more", v)
						}
						sp.Drain.MaxReplayAttempts = v
					}
				case "on_recovery":
					sp.Drain.OnRecovery, _ = l.enum(d.v, dp, "drain.on_recovery", "ordered_then_live", "interleave")
				default:
					l.errf(d.k, dp, "unknown drain key %q (allowed: rate_per_sec, max_replay_attempts, on_recovery)", d.key)
				}
			})
		default:
			l.errf(e.k, fp, "unknown spool key %q (allowed: mode, backend, bucket, ordering, ordering_key, circuit, retention, drain, hybrid_escalate_after_ms)", e.key)
		}
	}) {
		return
	}
	if !modeSet {
		// NoETL's default mode is off: a spool block without a mode only
		// configures the circuit (refuse while it is open).
		sp.Mode = SpoolOff
	}
	if sp.Mode != SpoolOff && sp.Bucket == "" {
		l.errf(n, path+".bucket", "spool.mode %s needs a bucket (backend gcs)", sp.Mode)
	}
	s.Spool = sp
}

func (l *loader) subCircuit(c *CircuitConfig, n *yaml.Node, path string) {
	l.walk(n, path, "spool.circuit", func(e entry, fp string) {
		switch e.key {
		case "trip_after":
			if v, ok := l.integer(e.v, fp, "circuit.trip_after"); ok {
				if v < 1 {
					l.errf(e.k, fp, "circuit.trip_after %d: want 1 or more consecutive failures", v)
				}
				c.TripAfter = v
			}
		case "probe_after_ms":
			c.ProbeAfterMS, _ = l.nonNegative(e.v, fp, "circuit.probe_after_ms")
		case "probe_interval_ms":
			c.ProbeIntervalMS, _ = l.nonNegative(e.v, fp, "circuit.probe_interval_ms")
		case "downstream":
			items, _ := l.list(e.v, fp, "circuit.downstream", "a list")
			seen := map[string]bool{}
			for i, item := range items {
				ip := idx(fp, i)
				ds, ok := l.downstream(item, ip)
				if !ok {
					continue
				}
				if seen[ds.Name] {
					l.errf(item, ip, "downstream %q is declared twice", ds.Name)
				}
				seen[ds.Name] = true
				c.Downstream = append(c.Downstream, ds)
			}
		default:
			l.errf(e.k, fp, "unknown circuit key %q (allowed: trip_after, probe_after_ms, probe_interval_ms, downstream)", e.key)
		}
	})
}

func (l *loader) downstream(n *yaml.Node, path string) (Downstream, bool) {
	ds := Downstream{Probe: "http"}
	var typeNode *yaml.Node
	if !l.walk(n, path, "a downstream", func(e entry, fp string) {
		switch e.key {
		case "name":
			ds.Name, _ = l.str(e.v, fp, "downstream name")
		case "type", "probe":
			ds.Probe, _ = l.enum(e.v, fp, "downstream "+e.key, "http", "tcp", "nats", "passive")
			typeNode = e.k
		case "target":
			ds.Target, _ = l.str(e.v, fp, "downstream target")
		default:
			l.errf(e.k, fp, "unknown downstream key %q (allowed: name, type, target)", e.key)
		}
	}) {
		return Downstream{}, false
	}
	good := true
	if ds.Name == "" {
		l.errf(n, path+".name", "a downstream needs a name")
		good = false
	}
	if ds.Probe != "passive" && ds.Target == "" {
		l.errf(n, path+".target", "downstream %q probe %s needs a target", ds.Name, ds.Probe)
		good = false
	}
	if ds.Target != "" && !hasPlaceholder(ds.Target) {
		if msg := checkProbeTarget(ds.Probe, ds.Target); msg != "" {
			l.errf(typeNode, path+".target", "downstream %q: %s", ds.Name, msg)
			good = false
		}
	}
	return ds, good
}

// checkProbeTarget returns what is wrong with a probe target ("" = fine).
func checkProbeTarget(probe, target string) string {
	switch probe {
	case "http":
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Sprintf("http target %q must be an http(s) URL", clip(target))
		}
	case "tcp":
		if _, _, err := stdnet.SplitHostPort(target); err != nil {
			return fmt.Sprintf("tcp target %q must be host:port", clip(target))
		}
	case "nats":
		t := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(target, "nats://"), "tls://"), "/")
		if _, _, err := stdnet.SplitHostPort(t); err != nil {
			return fmt.Sprintf("nats target %q must be nats://host:port", clip(target))
		}
	}
	return ""
}

// SubscriptionID returns the subscription id of spec.subscription (the
// last path segment of projects/<p>/subscriptions/<id>, or the id itself).
func (s *Subscription) SubscriptionID() string {
	if i := strings.LastIndex(s.PubSubSubscription, "/"); i >= 0 {
		return s.PubSubSubscription[i+1:]
	}
	return s.PubSubSubscription
}

// subKafka reads a kafka source's keys.
func (l *loader) subKafka(s *Subscription, kafka map[string]entry, paths map[string]string, n *yaml.Node, path string) {
	if e, ok := kafka["topic"]; ok {
		s.Topic, _ = l.str(e.v, paths["topic"], "spec.topic")
	}
	if e, ok := kafka["group"]; ok {
		s.Group, _ = l.str(e.v, paths["group"], "spec.group")
	}
	if e, ok := kafka["auth"]; ok {
		s.Auth, _ = l.str(e.v, paths["auth"], "spec.auth (a kafka credential's name)")
	}
	if e, ok := kafka["brokers"]; ok {
		var raw any
		if err := e.v.Decode(&raw); err == nil {
			if !hasPlaceholder(fmt.Sprint(raw)) {
				b, err := kafkaBrokers(raw)
				if err != nil {
					l.errf(e.k, paths["brokers"], "spec.brokers: %v", err)
				}
				s.Brokers = b
			} else if str, ok := raw.(string); ok {
				s.Brokers = []string{str}
			}
		}
	}
	if _, ok := kafka["brokers"]; !ok {
		if _, ok := kafka["auth"]; !ok {
			l.errf(n, path+".brokers", "a kafka subscription needs its brokers: spec.auth (a kafka credential {brokers}) or spec.brokers (host:port)")
		}
	}
}

// kafkaBrokers reads host:port brokers: a comma-separated string or a
// list (as credentials.KafkaBrokers).
func kafkaBrokers(v any) ([]string, error) {
	var out []string
	switch x := v.(type) {
	case string:
		for _, b := range strings.Split(x, ",") {
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
	case []any:
		for _, e := range x {
			str, ok := e.(string)
			if !ok || strings.TrimSpace(str) == "" {
				return nil, fmt.Errorf("brokers must be host:port strings, got %v", e)
			}
			out = append(out, strings.TrimSpace(str))
		}
	default:
		return nil, fmt.Errorf("brokers must be a string or a list of host:port, got %T", v)
	}
	for _, b := range out {
		if _, _, err := stdnet.SplitHostPort(b); err != nil {
			return nil, fmt.Errorf("broker %q is not host:port", b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("brokers is empty")
	}
	return out, nil
}

// SourceKey is what a registration consumes, unique among registrations:
// the Pub/Sub subscription's path, or for kafka "kafka:<topic>#<group>".
func (s *Subscription) SourceKey(project string) string {
	if s.Source == "kafka" {
		return "kafka:" + s.Topic + "#" + s.Group
	}
	return s.SubscriptionPath(project)
}

// SubscriptionPath returns spec.subscription as
// projects/<project>/subscriptions/<id>, using project for a bare id.
func (s *Subscription) SubscriptionPath(project string) string {
	if strings.HasPrefix(s.PubSubSubscription, "projects/") {
		return s.PubSubSubscription
	}
	return "projects/" + project + "/subscriptions/" + s.PubSubSubscription
}

// Downstreams returns the circuit's downstreams: the declared ones, or
// one passive "default" (noetl-tools CircuitConfig::downstreams).
func (c CircuitConfig) Downstreams() []Downstream {
	if len(c.Downstream) == 0 {
		return []Downstream{{Name: "default", Probe: "passive"}}
	}
	return c.Downstream
}

// DirectivesFor returns the directives of control c, in declaration
// order.
func (h SubscriptionHeaders) DirectivesFor(c string) []Directive {
	var out []Directive
	for _, d := range h.Directives {
		if d.Controls == c {
			out = append(out, d)
		}
	}
	return out
}
