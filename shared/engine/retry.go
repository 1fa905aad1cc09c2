package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// Budget is a default retry budget (NoETL observability spec §8.4 and
// §8.12 "retries"): at most MaxAttempts attempts in all, the delay before
// attempt n+1 drawn with full jitter from [0, min(Max, Base·2^(n-1))).
type Budget struct {
	MaxAttempts int
	Base, Max   time.Duration
}

// The seed's default budgets (NoETL observability spec §8.12): tool calls
// 6 attempts 200 ms..30 s (NOETL_RETRIES_PLUGIN_*), sink writes 8 attempts
// 200 ms..60 s (NOETL_RETRIES_SINK_*). A zero Options uses them.
var (
	DefaultTaskRetry = Budget{MaxAttempts: 6, Base: 200 * time.Millisecond, Max: 30 * time.Second}
	DefaultSinkRetry = Budget{MaxAttempts: 8, Base: 200 * time.Millisecond, Max: 60 * time.Second}
)

// Sink failure policies (NOETL_POLICIES_ON_SINK_FAIL, NoETL observability
// spec §8.8 on_sink_fail): what a sink — a side-effecting storage task
// (postgres, duckdb, gcs, transfer) — without its own policy does when it
// fails.
const (
	// OnSinkFailRetry retries a retryable failure with the sink budget,
	// then fails the step (the default).
	OnSinkFailRetry = "retry"
	// OnSinkFailFail fails the step at the first failure.
	OnSinkFailFail = "fail_step"
	// OnSinkFailIgnore records the failure (task.failed) and goes on with
	// the pipeline (best effort).
	OnSinkFailIgnore = "async_ignore"
)

// sinkKinds are the kinds whose side-effecting tasks are sinks (storage
// writes; the worker's sink metrics use the same list).
var sinkKinds = map[string]bool{"postgres": true, "duckdb": true, "gcs": true, "transfer": true}

// IsSink reports whether a task of kind (the kind that runs it: a workbook
// task's template kind) is a sink in pb: a storage kind with side effects
// (NoETL observability spec §8.1 "Sinks"; the DSL has no special sink).
func IsSink(pb *dsl.Playbook, task *dsl.Task, kind string) bool {
	return sinkKinds[kind] && SideEffecting(pb, task)
}

// taskBudget is the budget of a task without a policy.
func (o Options) taskBudget(sink bool) Budget {
	b, def := o.TaskRetry, DefaultTaskRetry
	if sink {
		b, def = o.SinkRetry, DefaultSinkRetry
	}
	if b.MaxAttempts <= 0 {
		return def
	}
	return b
}

// DecideTask is the package's DecideTask with the deployment's defaults
// for a task without a policy (NoETL observability spec §8.4 "When to
// Retry", §8.8): an ok outcome continues; an error the tool classified as
// retryable (HTTP 408, 429 and 5xx, network errors, timeouts, PostgreSQL
// 40001, 40P01 and class 08: types.TaskError.Retryable) is retried with
// the budget — TaskRetry, or SinkRetry for a sink (sink: IsSink) —,
// exponential with full jitter (Then.Jitter); any other error fails the
// task (a fatal error). A sink's failure follows OnSinkFail: fail_step
// never retries, async_ignore records the failure and continues. A
// playbook's own policy always wins: `spec.policy.rules: [{else: {then:
// {do: fail}}}]` restores fail-at-once for one task.
func (o Options) DecideTask(task *dsl.Task, sink bool, out types.Outcome, sc template.Scope) (Decision, error) {
	if task.Policy != nil && len(task.Policy.Rules) > 0 {
		return o.decideRules(task, out, sc)
	}
	if out.Status == types.StatusOK {
		return Decision{Action: types.ActContinue, Rule: -1}, nil
	}
	if sink {
		switch o.OnSinkFail {
		case OnSinkFailFail:
			return Decision{Action: types.ActFail, Rule: -1, Default: DefaultFatal}, nil
		case OnSinkFailIgnore:
			return Decision{Action: types.ActContinue, Rule: -1, Default: DefaultIgnored}, nil
		}
	}
	if out.Error == nil || !out.Error.Retryable {
		return Decision{Action: types.ActFail, Rule: -1, Default: DefaultFatal}, nil
	}
	b := o.taskBudget(sink)
	return Decision{Action: types.ActRetry, Rule: -1, Default: DefaultRetryable, Then: dsl.Then{Do: string(types.ActRetry),
		Attempts: b.MaxAttempts, Backoff: "exponential", Delay: b.Base.Seconds(), MaxDelay: b.Max.Seconds(), Jitter: true}}, nil
}

// Default decisions (Decision.Default): why a task without a policy did
// what it did.
const (
	// DefaultRetryable: a retryable error, retried with the budget.
	DefaultRetryable = "retryable"
	// DefaultFatal: an error that is not retryable (or a sink under
	// on_sink_fail: fail_step): the task fails at once.
	DefaultFatal = "fatal"
	// DefaultIgnored: a sink's failure under on_sink_fail: async_ignore.
	DefaultIgnored = "ignored"
)

// Jitter returns a number in [0, 1) that is a pure function of key and
// attempt: the first 8 bytes of SHA-256(key 0x1f attempt) over 2^64. The
// engine draws every jittered backoff with it instead of a random source,
// so a decision is a function of what is recorded — the unit's
// idempotency key (execution, step, iteration), the task, the jumps taken
// and the attempt all travel in the unit's command — and replaying the
// same inputs gives the same delays, while different units and attempts
// are spread over the whole range (AWS "full jitter").
func Jitter(key string, attempt int) float64 {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0x1f})
	h.Write([]byte(strconv.Itoa(attempt)))
	sum := h.Sum(nil)
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / float64(1<<53)
}

// JitteredBackoff returns the delay before attempt+1 of a retry decided by
// t: Backoff(t, attempt), then, for a computed backoff (exponential or
// linear) and whenever t.Jitter is set, full jitter: the delay is scaled by
// Jitter(key, attempt) (so it falls in [0, delay)). A constant delay
// (`backoff: none` without jitter) is kept as written: it is a poll
// interval, not a backoff. key identifies the task attempt's unit (the
// unit's idempotency key, task and jumps; see Jitter).
func JitteredBackoff(t dsl.Then, attempt int, key string) time.Duration {
	d := Backoff(t, attempt)
	if d <= 0 {
		return 0
	}
	if !t.Jitter && t.Backoff != "exponential" && t.Backoff != "linear" {
		return d
	}
	return time.Duration(math.Floor(float64(d) * Jitter(key, attempt)))
}
