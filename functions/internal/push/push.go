// Package push is the one preamble of the Cloud Functions triggered by a
// Pub/Sub push subscription (route, dispatch, materialize), so that each
// function is its handler alone (the functions-framework samples' thin,
// registered handlers). A push function (Batches, Commands) gets the
// instance's dependencies, decodes the push envelope, verifies the
// engine's signature and decodes the body, meters the delivery and joins
// the execution's trace, calls the handler, and maps every error to the
// delivery's fate in one place (wiring.Deps.AckPermanent): a permanent
// error (a body that does not decode, a forgery) is acked and filed in the
// DLQ, a transient one returned for redelivery (filed instead on the last
// delivery the subscription allows), nil acks.
package push

import (
	"context"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wiring"
)

// Function describes a push function to its preamble.
type Function struct {
	// Name is the function's name: its meter names (invocations,
	// milliseconds) and the Source of the DLQ entries it files.
	Name string
	// Needs is what the function builds besides the base (wiring.Get).
	Needs wiring.Needs
	// OwnOps marks a function that counts its own operations (materialize
	// writes them into the document it stores, so nothing may be left
	// pending in the execution's meter): the preamble then neither meters
	// the delivery nor joins the execution's trace, and the handler's
	// context carries a throw-away meter for the store's own counts.
	OwnOps bool
	// Flush flushes the telemetry (5 s at most) once the delivery's fate
	// is decided, so the spans of a short-lived instance are not lost.
	Flush bool
	// Get returns the instance's dependencies (wiring.Get when nil; a
	// test gives its own).
	Get func(context.Context, wiring.Needs) (*wiring.Deps, error)
}

// Delivery is one verified push delivery of a body T (a types.Batch or a
// types.Command), as the handler gets it.
type Delivery[T any] struct {
	// Msg is the Pub/Sub message as pushed.
	Msg wiring.PushMessage
	// Body is the verified, decoded body.
	Body T
	// Request is the invocation's activity, begun when it arrived (its
	// End is the invocation's instance time in ms).
	Request *meter.Request
}

// Handler handles one delivery with the instance's dependencies d; its
// error decides the delivery's fate (see the package doc).
type Handler[T any] func(ctx context.Context, d *wiring.Deps, p Delivery[T]) error

// Batches returns the push function f serving h with the event batches of
// the events topic (signed sign.Batch).
func Batches(f Function, h Handler[types.Batch]) func(context.Context, event.Event) error {
	return serve(f, func(msg wiring.PushMessage, d *wiring.Deps) (types.Batch, string, string, error) {
		b, err := wiring.DecodeBatch(msg, d.Signer)
		return b, b.ExecutionID, "", err
	}, h)
}

// Commands returns the push function f serving h with the commands of the
// commands topic (signed sign.Command: a command the engine did not sign
// is refused like any forgery).
func Commands(f Function, h Handler[types.Command]) func(context.Context, event.Event) error {
	return serve(f, func(msg wiring.PushMessage, d *wiring.Deps) (types.Command, string, string, error) {
		c, err := wiring.DecodeCommand(msg.Data, msg.Attributes[sign.Attribute], d.Signer)
		return c, c.ExecutionID, c.Step, err
	}, h)
}

// serve is the preamble, with decode giving the body, and the execution
// and step the DLQ entry names.
func serve[T any](f Function, decode func(wiring.PushMessage, *wiring.Deps) (T, string, string, error), h Handler[T]) func(context.Context, event.Event) error {
	get := f.Get
	if get == nil {
		get = wiring.Get
	}
	return func(ctx context.Context, e event.Event) error {
		req := meter.ActivityOf(f.Name).Begin()
		d, err := get(ctx, f.Needs)
		if err != nil {
			return err
		}
		msg, err := wiring.DecodePush(e)
		if err != nil {
			return d.AckPermanent(ctx, f.Name, msg, "", "", err)
		}
		body, execID, step, err := decode(msg, d)
		if err != nil {
			return d.AckPermanent(ctx, f.Name, msg, "", "", err)
		}
		if f.OwnOps {
			ctx = meter.With(ctx, meter.New())
		} else {
			m := meter.For(ctx, execID)
			defer func() {
				m.Add(meter.Invocations(f.Name), 1)
				m.Add(meter.Milliseconds(f.Name), req.End())
			}()
			m.Add(meter.PubSubDelivery, 1)
			m.Add(meter.PubSubDeliveryBytes, meter.Billable(len(msg.Data)))
			// The execution's trace (traceparent attribute, else its
			// root's ids): the spans of the handler join it.
			ctx = telemetry.Execution{ID: execID}.Context(telemetry.Extract(ctx, msg.Attributes))
		}
		if f.Flush {
			defer func() {
				fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_ = telemetry.Flush(fctx)
				cancel()
			}()
		}
		err = h(ctx, d, Delivery[T]{Msg: msg, Body: body, Request: req})
		return d.AckPermanent(ctx, f.Name, msg, execID, step, err)
	}
}
