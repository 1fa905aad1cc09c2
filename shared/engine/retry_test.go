package engine

import (
	"math"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// TestJitterIsAFunctionOfItsInputs: the same key and attempt give the same
// draw (a replay decides the same), and draws over many units fill [0, 1)
// (full jitter, not a constant).
func TestJitterIsAFunctionOfItsInputs(t *testing.T) {
	if Jitter("ex:step:3/fetch/0", 2) != Jitter("ex:step:3/fetch/0", 2) {
		t.Fatal("Jitter is not deterministic")
	}
	if Jitter("ex:step:3/fetch/0", 2) == Jitter("ex:step:3/fetch/0", 3) {
		t.Fatal("Jitter ignores the attempt")
	}
	var buckets [10]int
	for i := 0; i < 10000; i++ {
		j := Jitter("ex:step:"+itoa(i)+"/fetch/0", 1)
		if j < 0 || j >= 1 {
			t.Fatalf("Jitter = %v, want [0, 1)", j)
		}
		buckets[int(j*10)]++
	}
	for i, n := range buckets {
		if n < 800 || n > 1200 {
			t.Errorf("bucket %d holds %d of 10000 draws, want about 1000: %v", i, n, buckets)
		}
	}
}

func TestJitteredBackoff(t *testing.T) {
	exp := dsl.Then{Backoff: "exponential", Delay: 1}
	for attempt := 1; attempt <= 5; attempt++ {
		full := Backoff(exp, attempt)
		got := JitteredBackoff(exp, attempt, "u")
		if got < 0 || got >= full {
			t.Errorf("attempt %d: %v outside [0, %v)", attempt, got, full)
		}
		if want := time.Duration(math.Floor(float64(full) * Jitter("u", attempt))); got != want {
			t.Errorf("attempt %d: %v, want %v", attempt, got, want)
		}
	}
	if got := JitteredBackoff(dsl.Then{Delay: 2}, 3, "u"); got != 2*time.Second {
		t.Errorf("a constant delay became %v", got)
	}
	if got := JitteredBackoff(dsl.Then{Delay: 2, Jitter: true}, 3, "u"); got >= 2*time.Second || got != time.Duration(float64(2*time.Second)*Jitter("u", 3)) {
		t.Errorf("jitter: true on a constant delay gave %v", got)
	}
}

func failOut(kind string, retryable bool) types.Outcome {
	return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrorKind(kind), Message: kind, Retryable: retryable}}
}

// TestDefaultPolicy: a task without a policy retries what is retryable by
// classification with the configured budget, fails what is not, and a
// playbook's own policy wins (NoETL observability spec §8.4, §8.8).
func TestDefaultPolicy(t *testing.T) {
	bare := &dsl.Task{Name: "t", Kind: "http"}
	own := &dsl.Task{Name: "t", Kind: "http", Policy: &dsl.Policy{Rules: []*dsl.Rule{{Else: true, Then: dsl.Then{Do: "fail"}}}}}
	o := Options{TaskRetry: Budget{MaxAttempts: 4, Base: 100 * time.Millisecond, Max: time.Second},
		SinkRetry: Budget{MaxAttempts: 9, Base: time.Second, Max: time.Minute}}
	sc := template.NewScope(template.ScopeParams{})
	cases := []struct {
		name string
		o    Options
		task *dsl.Task
		sink bool
		out  types.Outcome
		do   types.Action
		then dsl.Then
		why  string
	}{
		{"ok continues", o, bare, false, types.Outcome{Status: types.StatusOK}, types.ActContinue, dsl.Then{}, ""},
		{"retryable error retries with the plugin budget", o, bare, false, failOut("server_error", true), types.ActRetry,
			dsl.Then{Do: "retry", Attempts: 4, Backoff: "exponential", Delay: 0.1, MaxDelay: 1, Jitter: true}, DefaultRetryable},
		{"a sink retries with the sink budget", o, bare, true, failOut("postgres", true), types.ActRetry,
			dsl.Then{Do: "retry", Attempts: 9, Backoff: "exponential", Delay: 1, MaxDelay: 60, Jitter: true}, DefaultRetryable},
		{"a fatal error fails", o, bare, false, failOut("client_error", false), types.ActFail, dsl.Then{}, DefaultFatal},
		{"the zero options use the seed's budget", Options{}, bare, false, failOut("connection", true), types.ActRetry,
			dsl.Then{Do: "retry", Attempts: 6, Backoff: "exponential", Delay: 0.2, MaxDelay: 30, Jitter: true}, DefaultRetryable},
		{"on_sink_fail fail_step", Options{OnSinkFail: OnSinkFailFail}, bare, true, failOut("postgres", true), types.ActFail, dsl.Then{}, DefaultFatal},
		{"on_sink_fail async_ignore", Options{OnSinkFail: OnSinkFailIgnore}, bare, true, failOut("postgres", true), types.ActContinue, dsl.Then{}, DefaultIgnored},
		{"on_sink_fail is for sinks only", Options{OnSinkFail: OnSinkFailIgnore}, bare, false, failOut("server_error", false), types.ActFail, dsl.Then{}, DefaultFatal},
		{"the playbook's policy wins", o, own, false, failOut("server_error", true), types.ActFail, dsl.Then{Do: "fail"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := c.o.DecideTask(c.task, c.sink, c.out, sc)
			if err != nil {
				t.Fatal(err)
			}
			if d.Action != c.do || d.Then.Do != c.then.Do || d.Then.Attempts != c.then.Attempts || d.Then.Delay != c.then.Delay ||
				d.Then.MaxDelay != c.then.MaxDelay || d.Then.Jitter != c.then.Jitter || d.Default != c.why {
				t.Errorf("decision %+v, want %s %+v (%s)", d, c.do, c.then, c.why)
			}
		})
	}
}

// TestWhenBudget: a `when` slower than Options.WhenTimeout is an
// evaluation error; the same `when` within the budget is evaluated.
func TestWhenBudget(t *testing.T) {
	slow := "{% set n = namespace(v=0) %}{% for i in range(90000) %}{% set n.v = n.v + 1 %}{% endfor %}{{ n.v > 0 }}"
	task := &dsl.Task{Name: "t", Kind: "noop", Policy: &dsl.Policy{Rules: []*dsl.Rule{{When: slow, Then: dsl.Then{Do: "break"}}}}}
	sc := template.NewScope(template.ScopeParams{})
	if _, err := (Options{WhenTimeout: time.Millisecond}).DecideTask(task, false, types.Outcome{Status: types.StatusOK}, sc); err == nil {
		t.Fatal("a when over a 1 ms budget was evaluated")
	}
	d, err := (Options{WhenTimeout: time.Minute}).DecideTask(task, false, types.Outcome{Status: types.StatusOK}, sc)
	if err != nil || d.Action != types.ActBreak {
		t.Fatalf("within the budget: %+v, %v", d, err)
	}
}
