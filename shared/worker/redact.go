package worker

import (
	"context"
	"log/slog"

	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/types"
)

// Secrets in what a unit hands on (README "Security"). The unit's redactor
// knows the execution's secrets: its keychain's values, its secret-named
// workload values, and what secrets tasks read. Output — events, logs —
// is masked with every rule (Value); the engine's own data — the boundary
// applied to the execution state, iteration records, attempt records,
// results written to the results tier, units created for later — with
// the literal secrets only (Secrets), so a value under a secret-looking
// name that is not a known secret (a next_token) still reaches the next
// step.

// setRedactor sets the unit's redactor from a resolved keychain (nil:
// none) and the execution's workload, and masks the unit's log lines with
// it.
func (u *unit) setRedactor(kc map[string]any) {
	u.red = launch.ExecRedactor(kc, u.st.Workload)
	if u.log != nil && !u.red.Empty() {
		u.log = slog.New(redact.NewHandler(u.log.Handler(), u.red))
	}
}

// maskData removes the execution's literal secrets from a value.
func (u *unit) maskData(v any) any {
	if u.red == nil {
		return v
	}
	return u.red.Secrets(v)
}

// maskErrMap removes the execution's literal secrets from an error map.
func (u *unit) maskErrMap(m map[string]any) map[string]any {
	if m == nil || u.red == nil {
		return m
	}
	out, _ := u.red.Secrets(m).(map[string]any)
	return out
}

// maskOutcome returns a task outcome without the execution's literal
// secrets in its result, error and logs (the attempt record).
func (u *unit) maskOutcome(o types.Outcome) types.Outcome {
	if u.red.Empty() {
		return o
	}
	o.Result = u.red.Secrets(o.Result)
	if o.Error != nil {
		e := *o.Error
		e.Message = u.red.SecretsString(e.Message)
		o.Error = &e
	}
	o.Logs = u.red.SecretsString(o.Logs)
	return o
}

// stateBoundary is the boundary event the control plane applies to the
// execution state: the sealed event (ids, clock) with the raw event's
// payload masked of literal secrets only (sealed events are masked with
// every rule for output).
func (u *unit) stateBoundary(raw, sealed types.Event) types.Event {
	if u.red == nil {
		return sealed
	}
	b := sealed
	if m, ok := u.red.Secrets(raw.Payload).(map[string]any); ok {
		b.Payload = m
	}
	return b
}

// execRedactor returns the redactor of cmd's execution for a path outside
// a running unit (the DLQ): keychain values (when it still resolves) and
// secret-named workload values; the key and pattern rules when the
// execution cannot be read.
func (w *Worker) execRedactor(ctx context.Context, cmd types.Command) *redact.Redactor {
	rec, err := w.Store.ExecutionGet(ctx, cmd.ExecutionID)
	if err != nil {
		return redact.New(nil)
	}
	var kc map[string]any
	if pb, err := w.playbook(rec.Source); err == nil && len(pb.Keychain) > 0 && w.Credentials != nil {
		kc, _ = launch.Keychain(ctx, w.Credentials, pb, rec.State)
	}
	return launch.ExecRedactor(kc, rec.State.Workload)
}
