// Package wiring is the control plane's composition root: the one place
// where the shared packages (contracts, their drivers, the engine, the
// control loop) are built from the configuration and joined into the
// dependencies of a function instance (Get: the base every function has,
// and what the function declares in its Needs, built once per instance,
// the way Cloud Functions reuse globals across invocations; deps.go). It
// also holds the small adapters every function needs: decoding Pub/Sub
// push CloudEvents and classifying errors into ack (permanent) or retry
// (transient). Nothing imports it but the functions and the local host
// (the layering test, shared/planes: it is the layer just below the
// binaries). The runner has its own wiring in runner/main.go.
package wiring

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	_ "github.com/noetl/gcpengine/shared/errs/googleerr" // errs.CodeOf maps the Google clients' errors
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

var (
	authMu sync.Mutex
	authn  *auth.Authenticator
)

// Authenticator returns the authenticator of the api and emit functions
// (shared/auth), built once from the configuration alone
// (NOETL_API_TOKEN, NOETL_API_AUDIENCES, NOETL_API_ROLES_FILE: no backend
// is needed to refuse a caller). A bad configuration or roles file is an
// error (tried again on the next call), never an open api.
func Authenticator(ctx context.Context) (*auth.Authenticator, error) {
	authMu.Lock()
	defer authMu.Unlock()
	if authn != nil {
		return authn, nil
	}
	cfg, err := config.LoadE()
	if err != nil {
		return nil, fmt.Errorf("runtime: configuration: %w", err)
	}
	roles, err := Roles(cfg)
	if err != nil {
		return nil, err
	}
	a, err := auth.New(ctx, auth.Config{Token: cfg.API.Token, Audiences: cfg.API.Audiences, Roles: roles, JWKSFile: cfg.OIDCJWKSFile})
	if err != nil {
		return nil, err
	}
	authn = a
	return a, nil
}

// ErrNoRoles refuses to serve the api and emit in the cloud profile
// without roles (README "Security": roles default closed). Code
// InvalidArgument: a configuration that cannot serve.
var ErrNoRoles = errs.Sentinel(errs.InvalidArgument, "runtime: the cloud profile (NOETL_PROFILE=cloud) needs roles: set NOETL_API_ROLES_FILE or NOETL_API_ROLES (Terraform: var.api_roles); without them the api and emit serve no one")

// Roles returns the roles of cfg: the roles file (NOETL_API_ROLES_FILE)
// or the inline document (NOETL_API_ROLES). Without either it is nil
// (every authenticated caller is admin) in the local profile and
// ErrNoRoles in the cloud profile. A bad document is an error.
func Roles(cfg config.Config) (*auth.Roles, error) {
	switch {
	case cfg.API.Roles != "":
		return auth.ParseRoles([]byte(cfg.API.Roles))
	case cfg.API.RolesFile != "":
		return auth.LoadRoles(cfg.API.RolesFile)
	case cfg.Profile == config.ProfileCloud:
		return nil, ErrNoRoles
	}
	return nil, nil
}

// DecodeBatch verifies and decodes the event batch carried by a Pub/Sub
// message: its data must carry the signature of the engine
// (sign.Attribute, purpose sign.Batch) before anything else is looked at.
// Its error is permanent: a message that does not verify or decode never
// will (an unsigned or forged one wraps sign.ErrUnsigned/ErrForged).
func DecodeBatch(msg PushMessage, s *sign.Signer) (types.Batch, error) {
	if err := s.Verify(sign.Batch, msg.Data, msg.Attributes[sign.Attribute]); err != nil {
		return types.Batch{}, Permanent(fmt.Errorf("refusing an event batch that the engine did not sign: %w", err))
	}
	var b types.Batch
	if err := jsonx.Unmarshal(msg.Data, &b); err != nil {
		return types.Batch{}, Permanent(fmt.Errorf("decode event batch: %w", err))
	}
	if b.ID == "" || b.ExecutionID == "" {
		return types.Batch{}, Permanent(errors.New("event batch without batch_id or execution_id"))
	}
	for i := range b.Events {
		b.Events[i].Payload = jsonx.NormalizeMap(b.Events[i].Payload)
		if b.Events[i].ExecutionID != b.ExecutionID {
			return types.Batch{}, Permanent(fmt.Errorf("event %d of batch %s belongs to execution %q, not %q", i, b.ID, b.Events[i].ExecutionID, b.ExecutionID))
		}
	}
	return b, nil
}

// DecodeCommand verifies and decodes a command: the body of a Cloud Task
// (sig from the sign.Header header) or of a commands-topic message (sig
// from the sign.Attribute attribute). The signature (purpose sign.Command)
// is checked before the body is decoded; the command must name an
// execution and (but for an execution timeout) a step. Errors are permanent (an unsigned or forged body
// wraps sign.ErrUnsigned/ErrForged). A reference body (BodyRef) is
// returned as is: the caller loads the full command (tasks.LoadBody).
func DecodeCommand(body []byte, sig string, s *sign.Signer) (types.Command, error) {
	if err := s.Verify(sign.Command, body, sig); err != nil {
		return types.Command{}, Permanent(fmt.Errorf("refusing a unit that the engine did not sign: %w", err))
	}
	var cmd types.Command
	if err := jsonx.Unmarshal(body, &cmd); err != nil {
		return types.Command{}, Permanent(fmt.Errorf("decode command: %w", err))
	}
	if cmd.ExecutionID == "" || (cmd.Step == "" && cmd.Kind != types.CmdExecutionTimeout) {
		return types.Command{}, Permanent(errors.New("command without execution_id or step"))
	}
	store.NormCommand(&cmd)
	return cmd, nil
}

// PushMessage is the Pub/Sub message inside a
// google.cloud.pubsub.topic.v1.messagePublished CloudEvent (the one
// functions-framework-go makes of a push subscription's body), with the
// delivery's attempt number.
type PushMessage struct {
	Data        []byte            `json:"data"`
	Attributes  map[string]string `json:"attributes"`
	MessageID   string            `json:"messageId"`
	PublishTime string            `json:"publishTime"`
	OrderingKey string            `json:"orderingKey"`
	// DeliveryAttempt is the push delivery's attempt number (1 on the
	// first delivery), which Pub/Sub sends on subscriptions with a
	// dead-letter policy (the patched functions-framework-go keeps it:
	// third_party/functions-framework-go/PATCHES.md); 0 when unknown (a
	// subscription without a dead-letter policy, a Cloud Task body).
	DeliveryAttempt int `json:"-"`
}

// DecodePush extracts the Pub/Sub message of a push CloudEvent and its
// delivery attempt (the data's "deliveryAttempt"; a negative one counts
// as unknown). Its error is permanent (the event will never decode).
func DecodePush(e event.Event) (PushMessage, error) {
	var body struct {
		Message         PushMessage `json:"message"`
		Subscription    string      `json:"subscription"`
		DeliveryAttempt int         `json:"deliveryAttempt"`
	}
	if err := json.Unmarshal(e.Data(), &body); err != nil {
		return PushMessage{}, Permanent(fmt.Errorf("decode push body: %w", err))
	}
	body.Message.DeliveryAttempt = max(body.DeliveryAttempt, 0)
	return body.Message, nil
}

// LastDelivery reports whether msg is the last push delivery its
// subscription's dead-letter policy allows: its attempt number reaches
// maxAttempts (NOETL_PUSH_MAX_DELIVERY_ATTEMPTS, the policy's
// max_delivery_attempts). After a failed last delivery Pub/Sub forwards
// the message to the dead-letter topic, where nothing replays it; the
// engine files it in its DLQ instead (AckPermanent). Unknown attempts
// (0) or maxAttempts (<= 0) are never the last.
func LastDelivery(msg PushMessage, maxAttempts int) bool {
	return maxAttempts > 0 && msg.DeliveryAttempt >= maxAttempts
}

// Permanent marks err as permanent (code InvalidArgument): the function
// acks the message and records it in the DLQ instead of asking for
// redelivery.
func Permanent(err error) error { return errs.Wrap(errs.InvalidArgument, err, "") }

// IsPermanent reports whether err is permanent (errs.Permanent).
func IsPermanent(err error) bool { return errs.Permanent(err) }

// B64 is a helper for tests: base64 of s.
func B64(s []byte) string { return base64.StdEncoding.EncodeToString(s) }

// AckPermanent records a message whose handling failed permanently in the
// DLQ and returns nil so the message is acked (not redelivered); a
// transient error is returned unchanged for redelivery
// (functions-framework samples: permanent → ack-and-record, transient →
// retry), except on the last delivery the subscription's dead-letter
// policy allows (LastDelivery with Cfg.PushMaxDeliveryAttempts), where it
// is filed in the DLQ too (reason max_attempts, Attempts the delivery's
// attempt number) and acked: the DLQ keeps it replayable, the dead-letter
// topic would not. If the DLQ write fails, its error is returned (the
// message then reaches the dead-letter topic). The entry names the
// function (Source), what was refused (Kind "message" for a Pub/Sub
// message — Topic is where a replay publishes it —, "unit" for a Cloud
// Task body) and keeps the message for replay (Unit, Attributes); its
// payload and error are redacted (the secrets of the execution the body
// names, shared/redact key and pattern rules) and the payload cut to 2
// KiB. A message the engine did not sign (sign.Rejected) is not kept for
// replay (Unit empty): it would be refused again.
func (d *Deps) AckPermanent(ctx context.Context, fn string, msg PushMessage, execID, step string, err error) error {
	switch {
	case err == nil:
		return nil
	case IsPermanent(err):
		return d.deadLetter(ctx, fn, msg, execID, step, err)
	case LastDelivery(msg, d.Cfg.PushMaxDeliveryAttempts):
		return d.deadLetter(ctx, fn, msg, execID, step, err)
	}
	return err
}

// AckPermanentUnit is AckPermanent for a Cloud Task body delivered to
// execute (Kind "unit").
func (d *Deps) AckPermanentUnit(ctx context.Context, msg PushMessage, execID, step string, err error) error {
	if err == nil || !IsPermanent(err) {
		return err
	}
	return d.deadLetter(ctx, "execute", msg, execID, step, err)
}

func (d *Deps) deadLetter(ctx context.Context, fn string, msg PushMessage, execID, step string, err error) error {
	now := time.Now().UTC()
	// A refused body may carry an execution's secrets (a forged unit with
	// copied args): masked with that execution's redactor when the body
	// names one, whatever the body's origin.
	red := d.RedactorOf(ctx, execID)
	if execID == "" {
		red = d.RedactorOf(ctx, claimedExecution(msg.Data))
	}
	topic, kind := d.Cfg.EventsTopic, store.DLQMessage
	switch fn {
	case "dispatch":
		topic = d.Cfg.CommandsTopic
	case "execute":
		topic, kind = "", store.DLQUnit
	}
	msgErr := red.String(err.Error())
	e := store.DLQEntry{MessageID: fn + "-" + msg.MessageID, ExecutionID: execID, StepID: step, Attempts: max(1, msg.DeliveryAttempt),
		LastError: msgErr, FirstSeen: now, LastSeen: now, Payload: dlqPayload(red, msg.Data),
		ContextExcerpt: fn + ": " + msgErr, Source: fn, Kind: kind, Topic: topic, Attributes: msg.Attributes}
	e.SetUnit(msg.Data)
	if sign.Rejected(err) {
		// What the engine did not sign is never replayable: it would be
		// refused again (and its bytes are the sender's).
		e.Unit, e.UnitEncoding, e.Attributes = "", "", nil
	} else if masked := red.SecretsBytes(msg.Data); len(masked) != len(msg.Data) || string(masked) != string(msg.Data) {
		// No secret value is kept (README "Security"): a unit is replayed
		// as a new signed task of the masked command; a message with a
		// secret (the engine masks them at the source) loses its
		// signature and would be refused on replay.
		e.SetUnit(masked)
		if kind == "message" {
			e.Attributes = nil
		}
	}
	if msg.MessageID == "" {
		e.MessageID = fn + "-" + types.DeriveID(string(msg.Data))
	}
	if perr := d.Store.DLQPut(ctx, e); perr != nil {
		return perr
	}
	observeDLQ(ctx, d.Log, fn, string(kind), msg.MessageID, execID, step, msgErr, !IsPermanent(err)) // telemetry (observe.go)
	return nil
}

// SignerSealer seals with the deployment's key (store.Sealer; purpose
// sign.Workload).
type SignerSealer struct{ Signer *sign.Signer }

// Seal implements store.Sealer.
func (s SignerSealer) Seal(b []byte) (string, error) { return s.Signer.Seal(sign.Workload, b) }

// Open implements store.Sealer.
func (s SignerSealer) Open(t string) ([]byte, error) { return s.Signer.Open(sign.Workload, t) }

// RedactorOf returns the redactor of an execution (launch.ExecRedactor:
// its keychain's values when they still resolve, its secret-named
// workload values, the key and pattern rules); only the key and pattern
// rules when id is empty or the execution cannot be read.
func (d *Deps) RedactorOf(ctx context.Context, id string) *redact.Redactor {
	if id == "" || d.Store == nil {
		return redact.New(nil)
	}
	rec, err := d.Store.ExecutionGet(ctx, id)
	if err != nil {
		return redact.New(nil)
	}
	var kc map[string]any
	// The credential store is built here when the function did not
	// declare it (NeedCredentials): only a dead-lettered body of an
	// execution with a keychain needs it.
	if pb, err := dsl.Load([]byte(rec.Source), "execution"); err == nil && len(pb.Keychain) > 0 && d.Ensure(ctx, NeedCredentials) == nil {
		kc, _ = launch.Keychain(ctx, d.Credentials, pb, rec.State)
	}
	return launch.ExecRedactor(kc, rec.State.Workload)
}

// claimedExecution returns the execution_id a (possibly forged) JSON body
// claims, "" when there is none (only used to mask secrets).
func claimedExecution(body []byte) string {
	var v struct {
		ExecutionID string `json:"execution_id"`
	}
	if json.Unmarshal(body, &v) != nil || len(v.ExecutionID) > 200 {
		return ""
	}
	return v.ExecutionID
}

// DLQPayload is the payload kept in a DLQ entry for a refused body: masked
// by key and pattern (redact.Keys rules: a forged body can carry anything;
// the functions also mask the secrets of the execution the body names)
// and cut to its first 2 KiB (on a UTF-8 boundary).
func DLQPayload(body []byte) string { return dlqPayload(redact.New(nil), body) }

func dlqPayload(red *redact.Redactor, body []byte) string {
	p := string(red.Bytes(body))
	if len(p) > 2048 {
		cut := 2048
		for cut > 0 && !utf8.RuneStart(p[cut]) {
			cut--
		}
		p = p[:cut]
	}
	return p
}
