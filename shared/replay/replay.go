// Package replay rebuilds an execution's event read model (the batch
// documents materialize writes, executions/{id}/batches/{batch_id}, that
// the api's GET /executions/{id}/events reads) from the events topic
// (README "Repair"; `noetl rebuild EXECUTION_ID`).
//
// The events topic is the write-ahead log. Its replay subscription
// (NOETL_REPLAY_SUBSCRIPTION, default events-replay; terraform/pubsub.tf,
// and the local stack's emulator) is a pull subscription that nothing
// else reads and that keeps acknowledged messages (retain_acked_messages,
// 7 days). A rebuild seeks it to a time a little before the execution was
// created (Seek to a time: the Pub/Sub emulator and Pub/Sub both support
// it on such a subscription), pulls the messages from there on, keeps the
// signed batches of that execution and writes each one that the read
// model lacks. Batches are keyed by their batch id (the first copy wins,
// store.Store.BatchPut), so a rebuild is idempotent: run twice, or over a
// read model that is partly there, it writes only what is missing. Every
// pulled message is acknowledged (it stays retained for the next seek).
//
// One rebuild at a time holds the subscription (a seek moves it for every
// reader): a lease (LeaseUnit of LeaseExecution) serialises them; a
// second rebuild while one runs is ErrBusy.
//
// What it cannot rebuild it reports (Report.Missing): events published
// before the subscription's reach (Reach, 7 days back from now), and the
// gaps the rebuilt log shows. The engine's events carry no sequence number
// on the wire (seq and prev_event_id are derived from the clocks when the
// log is read), so a gap is what the log of an execution must hold and
// does not: its start (playbook.execution.requested), and once the
// execution ended its end (playbook.finished) and the end of every step
// run that started (step.done, step.failed or step.canceled).
package replay

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wire"
)

// Message is one message pulled from the replay subscription.
type Message struct {
	// AckID acknowledges it (Subscription.Ack).
	AckID       string
	Data        []byte
	Attributes  map[string]string
	PublishTime time.Time
}

// Subscription is the replay subscription: seek to a time, pull,
// acknowledge. PubSub is the driver on Pub/Sub (and its emulator).
type Subscription interface {
	// SeekTime marks the messages published before t acknowledged and
	// those published at or after t unacknowledged (delivered again).
	SeekTime(ctx context.Context, t time.Time) error
	// Pull returns at most max messages, none when nothing is
	// outstanding (after waiting at most a few seconds).
	Pull(ctx context.Context, max int) ([]Message, error)
	// Ack acknowledges the messages of ackIDs.
	Ack(ctx context.Context, ackIDs []string) error
}

// ReadModel is what a rebuild reads and writes of the engine's state
// (store.Store satisfies it).
type ReadModel interface {
	ExecutionGet(ctx context.Context, id string) (*store.Execution, error)
	BatchPut(ctx context.Context, b types.Batch) (created bool, err error)
	EventList(ctx context.Context, executionID string) ([]types.Event, error)
	LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) error
	LeaseRelease(ctx context.Context, executionID, unit, holder string) error
}

// The lease that serialises rebuilds: the unit LeaseUnit of the
// pseudo-execution LeaseExecution (no execution document; ids of
// executions are digits, so it names none).
const (
	LeaseExecution = "noetl-replay"
	LeaseUnit      = "replay-subscription"
)

// Defaults of Rebuilder's zero fields.
const (
	// DefaultReach is how far back the replay subscription keeps messages
	// (its message_retention_duration, Pub/Sub's largest).
	DefaultReach = 7 * 24 * time.Hour
	// DefaultSkew is how long before an execution's creation a rebuild
	// seeks (clocks of the api and Pub/Sub differ).
	DefaultSkew = time.Minute
	// DefaultIdle is how many consecutive pulls that bring no message
	// published before the rebuild began end the scan.
	DefaultIdle = 3
	// DefaultLeaseTTL bounds one rebuild's hold of the subscription.
	DefaultLeaseTTL = 15 * time.Minute
	pullMax         = 1000
)

// ErrBusy is returned while another rebuild holds the replay
// subscription.
var ErrBusy = &errs.Error{Code: errs.FailedPrecondition, Msg: "replay: another rebuild holds the replay subscription; retry when it ends"}

// Rebuilder rebuilds event read models. Sub, Store and Decode are
// required.
type Rebuilder struct {
	Sub   Subscription
	Store ReadModel
	// Decode verifies a message's signature and decodes its batch (the
	// api: runtime.DecodeBatch); a message it refuses is counted
	// (Report.Refused), never written.
	Decode func(Message) (types.Batch, error)
	// Reach is how far back the subscription keeps messages (0:
	// DefaultReach).
	Reach time.Duration
	// Skew is how long before the execution's creation the seek goes (0:
	// DefaultSkew).
	Skew time.Duration
	// Idle is the number of consecutive pulls without a message published
	// before the rebuild began that ends the scan (0: DefaultIdle).
	Idle int
	// Holder names this rebuild in the lease (required to be unique per
	// rebuild; "" derives one from the clock).
	Holder string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Report is wire.RebuildReport (the api answers POST /executions/{id}/rebuild with it).
type Report = wire.RebuildReport

func (r *Rebuilder) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func orDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Rebuild rebuilds the read model of execution id. The execution's record
// gives its creation time; without one (removed by the TTL policy) the
// time in its id does (types.IDTime). It fails (nothing written) when
// another rebuild holds the subscription (ErrBusy), when the id is
// neither an execution on record nor a valid execution id, or when the
// subscription or the store fail.
func (r *Rebuilder) Rebuild(ctx context.Context, id string) (Report, error) {
	rep := Report{ExecutionID: id, Missing: []string{}}
	if r.Sub == nil || r.Store == nil || r.Decode == nil {
		return rep, errors.New("replay: Sub, Store and Decode are required")
	}
	start := r.now().UTC()
	rec, err := r.Store.ExecutionGet(ctx, id)
	var created time.Time
	switch {
	case err == nil:
		created = rec.State.CreatedAt
	case errors.Is(err, store.ErrNotFound):
		rec = nil
	default:
		return rep, fmt.Errorf("replay: read execution %s: %w", id, err)
	}
	if created.IsZero() {
		if n, err := strconv.ParseUint(id, 10, 63); err != nil || n == 0 {
			return rep, &errs.Error{Code: errs.NotFound, Msg: "replay: execution " + id + " not found (no record, and not an execution id)"}
		}
		created = types.IDTime(id)
	}
	holder := r.Holder
	if holder == "" {
		holder = fmt.Sprintf("rebuild-%s-%d", id, start.UnixNano())
	}
	lease := store.LeaseAcquireParams{ExecutionID: LeaseExecution, Unit: LeaseUnit, Holder: holder, TTL: DefaultLeaseTTL, Now: start}
	if err := r.Store.LeaseAcquire(ctx, lease); err != nil {
		if errors.Is(err, store.ErrLeaseHeld) {
			return rep, ErrBusy
		}
		return rep, fmt.Errorf("replay: take the replay lease: %w", err)
	}
	defer func() {
		_ = r.Store.LeaseRelease(context.WithoutCancel(ctx), LeaseExecution, LeaseUnit, holder)
	}()

	before, err := r.Store.EventList(ctx, id)
	if err != nil {
		return rep, fmt.Errorf("replay: read the event log: %w", err)
	}
	rep.EventsBefore = len(before)

	seek := created.Add(-orDur(r.Skew, DefaultSkew))
	if horizon := start.Add(-orDur(r.Reach, DefaultReach)); seek.Before(horizon) {
		rep.Missing = append(rep.Missing, fmt.Sprintf("events published before %s are past the replay subscription's retention (%s; the execution was created %s)",
			horizon.Format(time.RFC3339), orDur(r.Reach, DefaultReach), created.UTC().Format(time.RFC3339)))
		seek = horizon
	}
	rep.SeekTime = seek.UTC()
	if err := r.Sub.SeekTime(ctx, seek); err != nil {
		return rep, fmt.Errorf("replay: seek the replay subscription to %s: %w", rep.SeekTime.Format(time.RFC3339Nano), err)
	}

	seen := map[string]bool{}
	idle, quiet := 0, r.Idle
	if quiet <= 0 {
		quiet = DefaultIdle
	}
	for idle < quiet {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("replay: %w", err)
		}
		msgs, err := r.Sub.Pull(ctx, pullMax)
		if err != nil {
			return rep, fmt.Errorf("replay: pull the replay subscription: %w", err)
		}
		old := false
		acks := make([]string, 0, len(msgs))
		for _, m := range msgs {
			rep.Scanned++
			acks = append(acks, m.AckID)
			if m.PublishTime.Before(start) {
				old = true
			}
			if m.Attributes["execution_id"] != id {
				continue
			}
			b, err := r.Decode(m)
			if err != nil || b.ExecutionID != id {
				rep.Refused++
				continue
			}
			if seen[b.ID] {
				continue // a redelivery within this scan
			}
			seen[b.ID] = true
			rep.Batches++
			created, err := r.Store.BatchPut(ctx, b)
			if err != nil {
				return rep, fmt.Errorf("replay: write batch %s: %w", b.ID, err)
			}
			if created {
				rep.Written++
				rep.WrittenEvents += len(b.Events)
			} else {
				rep.Present++
			}
		}
		if len(acks) > 0 {
			if err := r.Sub.Ack(ctx, acks); err != nil {
				return rep, fmt.Errorf("replay: acknowledge: %w", err)
			}
		}
		if old {
			idle = 0
		} else {
			idle++
		}
	}

	after, err := r.Store.EventList(ctx, id)
	if err != nil {
		return rep, fmt.Errorf("replay: read the rebuilt event log: %w", err)
	}
	rep.Events = len(after)
	rep.Missing = append(rep.Missing, Gaps(after, rec)...)
	rep.Complete = len(rep.Missing) == 0
	return rep, nil
}

// Gaps returns what an execution's event log lacks (see the package
// documentation): its start; once its record says it ended (rec non-nil
// and terminal; a nil rec is an execution whose record is gone, so ended),
// its end and the end of every step run that started.
func Gaps(evs []types.Event, rec *store.Execution) []string {
	var out []string
	has := map[types.EventType]bool{}
	type run struct {
		step string
		n    int
	}
	started, ended := map[run]bool{}, map[run]bool{}
	for _, e := range evs {
		has[e.EventType] = true
		k := run{e.Step, e.StepRun}
		switch e.EventType {
		case types.EvStepStarted:
			started[k] = true
		case types.EvStepDone, types.EvStepFailed, types.EvStepCanceled:
			ended[k] = true
		}
	}
	if !has[types.EvExecutionRequested] {
		out = append(out, "no "+string(types.EvExecutionRequested)+" event: the start of the log is missing")
	}
	if rec != nil && !rec.State.Terminal() {
		return out // still running: its later events are still to come
	}
	if !has[types.EvPlaybookFinished] {
		out = append(out, "no "+string(types.EvPlaybookFinished)+" event: the execution ended but the end of its log is missing")
	}
	var open []string
	for k := range started {
		if !ended[k] {
			open = append(open, fmt.Sprintf("%s#%d", k.step, k.n))
		}
	}
	sort.Strings(open)
	for _, s := range open {
		out = append(out, "step run "+s+" started but its end (step.done, step.failed or step.canceled) is missing")
	}
	return out
}
