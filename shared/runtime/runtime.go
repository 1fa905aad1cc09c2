// Package runtime wires the shared packages into the process-wide
// dependencies of a function instance (lazily, once per instance, the way
// Cloud Functions reuse globals across invocations), and holds the small
// adapters every function needs: decoding Pub/Sub push CloudEvents and
// classifying errors into ack (permanent) or retry (transient).
package runtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cloud.google.com/go/storage"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/router"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/worker"
)

// Deps are the process-wide dependencies.
type Deps struct {
	// Control applies transitions on behalf of the api (cancellation,
	// DLQ discards).
	Control    *control.Control
	Cfg        config.Config
	Log        *slog.Logger
	Store      *store.Firestore
	Bus        *bus.PubSub
	Dispatcher *tasks.Dispatcher
	Router     *router.Router
	Worker     *worker.Worker
	Results    *results.Store
	// Credentials is the credential store (keychain resolution).
	Credentials credentials.Store
	// Catalog resolves playbook paths (catalog first, then files).
	Catalog    *catalog.Catalog
	closeTools func()
}

var (
	mu   sync.Mutex
	deps *Deps
)

// Get returns the instance's dependencies, creating them on first use. A
// failed creation (a bad configuration, a backend not reachable yet) is
// returned to this request and tried again on the next one, so a cold
// start that failed does not poison the instance.
func Get(ctx context.Context) (*Deps, error) {
	mu.Lock()
	defer mu.Unlock()
	if deps != nil {
		return deps, nil
	}
	d, err := open(context.Background())
	if err != nil {
		return nil, err
	}
	deps = d
	return deps, nil
}

// flusherStop ends the operation-count flusher (Close).
var flusherStop context.CancelFunc

func open(ctx context.Context) (*Deps, error) {
	cfg, err := config.LoadE()
	if err != nil {
		return nil, fmt.Errorf("runtime: configuration: %w", err)
	}
	// Every log record passes the redaction handler: secret-named keys,
	// URL query secrets and Basic/Bearer values, and the values of the
	// credentials of the context's redactor (redact.WithRedactor), are
	// masked (seed 000 §8.9).
	log := slog.New(redact.NewHandler(telemetry.Setup("noetl-functions").Handler(), nil))
	slog.SetDefault(log)
	st, err := store.OpenFirestore(ctx, cfg.Project)
	if err != nil {
		return nil, err
	}
	b, err := bus.Open(ctx, cfg.Project, cfg.EventsTopic, cfg.CommandsTopic)
	if err != nil {
		return nil, err
	}
	d, err := tasks.Open(ctx, cfg.QueuePath(cfg.WorkQueue), cfg.QueuePath(cfg.TimersQueue), cfg.ExecuteURL)
	if err != nil {
		return nil, err
	}
	d.Deadline = cfg.DispatchDeadline
	d.ServiceAccount, d.Audience = cfg.TasksServiceAccount, cfg.ExecuteAudience
	store.DLQRetention = time.Duration(cfg.DLQ.RetentionDays) * 24 * time.Hour
	gcs, err := storage.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("runtime: storage client: %w", err)
	}
	rs := &results.Store{Backend: results.NewGCS(gcs, cfg.ResultsBucket), InlineMax: cfg.ResultInlineMax}
	creds := credentials.NewFirestore(st.Client())
	reg, closeTools := tools.Default(tools.DefaultOptions{PythonBin: cfg.PythonBin, Credentials: creds, Results: rs, Project: cfg.Project, ScriptDir: cfg.RepoRoot})
	opts := engine.Options{DefaultMaxInFlight: cfg.DefaultMaxInFlight}
	cat := &catalog.Catalog{Store: st, Root: cfg.RepoRoot}
	mk := func(source string) *control.Control {
		return &control.Control{Store: st, Bus: b, Tasks: d, Results: rs, Credentials: creds, Opts: opts, Log: log, Source: source}
	}
	fctx, stop := context.WithCancel(context.Background())
	flusherStop = stop
	go bus.RunFlusher(fctx, b, meter.Default, 500*time.Millisecond, time.Second, log)
	return &Deps{
		Cfg: cfg, Log: log, Store: st, Bus: b, Dispatcher: d, Results: rs, closeTools: closeTools,
		Router:  &router.Router{Control: mk("route"), Log: log},
		Control: mk("api"),
		Catalog: cat, Credentials: creds,
		Worker: &worker.Worker{Control: mk("execute"), Store: st, Bus: b, Tools: reg, Results: rs, Catalog: cat, Credentials: creds, Log: log, LeaseTTL: cfg.LeaseTTL, HeartbeatInterval: cfg.HeartbeatInterval, HandOffAfter: cfg.DispatchDeadline * 4 / 5, ToolTimeout: cfg.Timeouts.ToolDefault, LoopItemTimeout: cfg.Timeouts.LoopItem},
	}, nil
}

// Close stops the flusher (flushing pending operation counts) and closes
// the clients.
func (d *Deps) Close() {
	if flusherStop != nil {
		flusherStop()
	}
	time.Sleep(100 * time.Millisecond)
	if d.closeTools != nil {
		d.closeTools()
	}
	_ = d.Bus.Close()
	_ = d.Dispatcher.Close()
	_ = d.Store.Close()
}

// DecodeBatch decodes the event batch carried by a Pub/Sub message. Its
// error is permanent: a message that does not decode never will.
func DecodeBatch(msg PushMessage) (types.Batch, error) {
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

// PushMessage is the Pub/Sub message inside a
// google.cloud.pubsub.topic.v1.messagePublished CloudEvent (the one
// functions-framework-go makes of a push subscription's body).
type PushMessage struct {
	Data        []byte            `json:"data"`
	Attributes  map[string]string `json:"attributes"`
	MessageID   string            `json:"messageId"`
	PublishTime string            `json:"publishTime"`
	OrderingKey string            `json:"orderingKey"`
}

// DecodePush extracts the Pub/Sub message of a push CloudEvent. Its
// error is permanent (the event will never decode).
func DecodePush(e event.Event) (PushMessage, error) {
	var body struct {
		Message      PushMessage `json:"message"`
		Subscription string      `json:"subscription"`
	}
	if err := json.Unmarshal(e.Data(), &body); err != nil {
		return PushMessage{}, Permanent(fmt.Errorf("decode push body: %w", err))
	}
	return body.Message, nil
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
// DLQ and returns nil so the message is acked (not redelivered); any other
// error is returned unchanged for redelivery (functions-framework samples:
// permanent → ack-and-record, transient → retry).
func (d *Deps) AckPermanent(ctx context.Context, fn string, msg PushMessage, execID, step string, err error) error {
	if err == nil || !IsPermanent(err) {
		return err
	}
	now := nowRFC3339()
	red := redact.New(nil)
	payload := string(red.Bytes(msg.Data))
	if len(payload) > 2048 {
		payload = payload[:2048]
	}
	topic, kind := d.Cfg.EventsTopic, "message"
	switch fn {
	case "dispatch":
		topic = d.Cfg.CommandsTopic
	case "execute":
		topic, kind = "", "unit"
	}
	msgErr := red.String(err.Error())
	e := store.DLQEntry{MessageID: fn + "-" + msg.MessageID, ExecutionID: execID, StepID: step, Attempts: 1,
		LastError: msgErr, FirstSeen: now, LastSeen: now, Payload: payload,
		ContextExcerpt: fn + ": " + msgErr, Source: fn, Kind: kind, Topic: topic, Unit: string(msg.Data), Attributes: msg.Attributes}
	if perr := d.Store.DLQPut(ctx, e); perr != nil {
		return perr
	}
	observeDLQ(ctx, d.Log, fn, kind, msg.MessageID, execID, step, msgErr) // telemetry (observe.go)
	return nil
}
