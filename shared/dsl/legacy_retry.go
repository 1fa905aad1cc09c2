package dsl

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file rewrites the legacy retry block (NoETL event-driven retry
// design) into task policy rules.

var legacyRetryKeys = []string{"max_attempts", "initial_delay", "backoff_multiplier", "max_delay", "jitter", "retry_when", "stop_when", "retry_on", "retry_on_status", "backoff", "backoff_seconds", "on_error", "on_success"}

// retryOnKinds maps the error names of a legacy retry_on list to this
// engine's error kinds (outcome.error.kind): NoETL fixtures write
// connection_error for what the http tool reports as connection.
var retryOnKinds = map[string][]string{
	"connection_error": {"connection_error", "connection"},
	"connection":       {"connection", "connection_error"},
	"timeout_error":    {"timeout_error", "timeout"},
}

// retryOnWhen is the retry condition of a legacy retry_on (error kinds)
// and retry_on_status (HTTP statuses) list: an error outcome whose kind or
// HTTP status is listed.
func retryOnWhen(kinds []string, statuses []int) string {
	var conds []string
	if len(kinds) > 0 {
		var quoted []string
		seen := map[string]bool{}
		for _, k := range kinds {
			names := retryOnKinds[k]
			if names == nil {
				names = []string{k}
			}
			for _, n := range names {
				if !seen[n] {
					seen[n] = true
					quoted = append(quoted, "'"+n+"'")
				}
			}
		}
		conds = append(conds, "outcome.error.kind in ["+strings.Join(quoted, ", ")+"]")
	}
	if len(statuses) > 0 {
		parts := make([]string, len(statuses))
		for i, c := range statuses {
			parts[i] = strconv.Itoa(c)
		}
		conds = append(conds, "outcome.http.status in ["+strings.Join(parts, ", ")+"]")
	}
	return WhenOutcome(OutcomeError, "("+strings.Join(conds, " or ")+")")
}

// stepRetry applies a step-level legacy retry block to the step's tasks
// that have no policy of their own.
func (l *loader) stepRetry(s *Step, e *entry, path string) {
	rules, pg, ok := l.legacyRetry(e.v, path)
	if ok && pg != nil {
		l.stepPagination(s, pg)
		return
	}
	if !ok || rules == nil {
		return
	}
	if len(s.Tasks) == 0 {
		l.warnf(e.k, path, "legacy retry on a step without tasks has no effect: ignored")
		return
	}
	for _, t := range s.Tasks {
		if t.Policy != nil {
			l.warnf(e.k, path, "task %q has its own spec.policy: the legacy step retry is not applied to it", t.Name)
			continue
		}
		cp := make([]*Rule, len(rules))
		for i, r := range rules {
			rr := *r
			cp[i] = &rr
		}
		t.Policy = &Policy{Rules: cp}
	}
}

// legacyRetry normalises NoETL event-driven retry design's retry forms (true, N, or a mapping with
// max_attempts, initial_delay, backoff_multiplier, max_delay, jitter,
// retry_when, stop_when; also NoETL distributed loop design's on_error) into task policy rules:
//
//	ok              → continue            (legacy retries only failures)
//	stop_when       → fail                (Legacy: user's expression)
//	retry_when      → retry attempts/backoff/delay/max_delay
//	                  (Legacy; default "{{ outcome.status == 'error' }}")
//	else            → fail
//
// Without retry_when/stop_when it is the single rule error → retry. rules is
// nil when the block disables retry; ok is false on a problem.
//
// A block with on_success (NoETL distributed loop design pagination/polling) returns no rules but
// a *successRetry (see pagination.go) holding the parsed on_success and the
// error rules above minus "ok → continue" (nil when the block has no error
// retry settings: errors then fail the task, as in NoETL); the caller
// rewrites the task pipeline with it.
func (l *loader) legacyRetry(n *yaml.Node, path string) ([]*Rule, *successRetry, bool) {
	d := deref(n)
	line := l.lineFor(d, path)
	cfg := struct {
		attempts  int
		delay     float64
		mult      float64
		maxDelay  float64
		retryWhen string
		stopWhen  string
		// retryOn and retryStatus are the legacy retry_on (error kinds)
		// and retry_on_status (HTTP statuses) lists.
		retryOn     []string
		retryStatus []int
		jitter      bool
	}{attempts: 3, delay: 1.0, mult: 2.0, maxDelay: 60}
	var pg *successRetry
	errCfg := false
	fromLists := false // retry_when built from retry_on / retry_on_status
	if d == nil || d.Kind != yaml.MappingNode {
		switch {
		case d != nil && d.Kind == yaml.ScalarNode && d.ShortTag() == "!!bool":
			b, _ := l.boolean(d, path, "retry")
			if !b {
				l.warnf(d, path, "retry: false has no effect: remove it")
				return nil, nil, true
			}
		case d != nil && d.Kind == yaml.ScalarNode && d.ShortTag() == "!!int":
			i, ok := l.integer(d, path, "retry")
			if !ok {
				return nil, nil, false
			}
			if i < 0 {
				l.errf(d, path, "retry attempts must be at least 0, got %d", i)
				return nil, nil, false
			}
			if i == 0 {
				l.warnf(d, path, "retry: 0 has no effect: remove it")
				return nil, nil, true
			}
			cfg.attempts = i
		default:
			l.errf(n, path, "retry must be true, a number of attempts or a mapping {max_attempts, initial_delay, backoff_multiplier, max_delay, retry_when}, got %s", describe(d))
			return nil, nil, false
		}
	} else {
		ok := true
		// number stores e's number in *dst when it is at least min
		// (math.SmallestNonzeroFloat64 for "> 0"; bound is the rule as
		// the error states it), else fails the block.
		number := func(e entry, ep string, dst *float64, min float64, bound string) {
			if f, good := l.num(e.v, ep, e.key); good && f >= min {
				*dst = f
			} else {
				if good {
					l.errf(e.k, ep, "%s must be %s", e.key, bound)
				}
				ok = false
			}
		}
		var apply func(n *yaml.Node, path string)
		apply = func(n *yaml.Node, path string) {
			fs, good := l.fields(n, path, "retry")
			if !good {
				ok = false
				return
			}
			for _, e := range fs {
				ep := join(path, e.key)
				if e.key != "on_success" {
					errCfg = true
				}
				switch e.key {
				case "max_attempts":
					if i, good := l.integer(e.v, ep, "max_attempts"); good {
						if i < 1 {
							l.errf(e.k, ep, "max_attempts must be at least 1, got %d", i)
							ok = false
						}
						cfg.attempts = i
					} else {
						ok = false
					}
				case "initial_delay":
					number(e, ep, &cfg.delay, 0, "≥ 0")
				case "backoff_multiplier":
					number(e, ep, &cfg.mult, math.SmallestNonzeroFloat64, "> 0")
				case "max_delay":
					number(e, ep, &cfg.maxDelay, 0, "≥ 0")
				case "jitter":
					// Full jitter on the delay, drawn deterministically
					// from the unit and the attempt (engine.JitteredBackoff).
					if b, good := l.boolean(e.v, ep, "jitter"); good {
						cfg.jitter = b
					} else {
						ok = false
					}
				case "retry_on":
					// NoETL fixtures: retry_on: [timeout, connection_error].
					items, good := l.list(e.v, ep, "retry_on", "a list of error kinds, e.g. [timeout, connection_error]")
					for i, it := range items {
						if k, good := l.str(it, idx(ep, i), "a retry_on error kind"); good && isIdent(k) {
							cfg.retryOn = append(cfg.retryOn, k)
						} else {
							if good {
								l.errf(it, idx(ep, i), "retry_on error kind %q must be an identifier, e.g. timeout, connection_error, rate_limit, server_error", clip(k))
							}
							ok = false
						}
					}
					if !good {
						ok = false
					}
				case "retry_on_status":
					// NoETL fixtures: retry_on_status: [429, 500, 502, 503, 504].
					items, good := l.list(e.v, ep, "retry_on_status", "a list of HTTP statuses, e.g. [429, 503]")
					for i, it := range items {
						if c, good := l.integer(it, idx(ep, i), "a retry_on_status HTTP status"); good {
							cfg.retryStatus = append(cfg.retryStatus, c)
						} else {
							ok = false
						}
					}
					if !good {
						ok = false
					}
				case "backoff", "backoff_seconds":
					// NoETL fixtures: backoff: 5 / backoff_seconds: 2, the
					// seconds before the first retry.
					if _, both := index(fs)["initial_delay"]; both {
						l.errf(e.k, ep, "retry has both %s and initial_delay (the seconds before the first retry): keep initial_delay", e.key)
						ok = false
						continue
					}
					number(e, ep, &cfg.delay, 0, "≥ 0 seconds")
				case "retry_when":
					cfg.retryWhen, _ = l.template(e.v, ep, "retry_when")
				case "stop_when":
					cfg.stopWhen, _ = l.template(e.v, ep, "stop_when")
				case "on_error":
					if !strings.HasSuffix(path, ".on_error") { // one level only
						apply(e.v, ep)
					} else {
						l.errf(e.k, ep, "unexpected nested on_error")
						ok = false
					}
				case "on_success":
					if strings.HasSuffix(path, ".on_error") {
						l.errf(e.k, ep, "unexpected on_success inside on_error: put it beside on_error, under retry")
						ok = false
						continue
					}
					if pg = l.successRetry(e, ep); pg == nil {
						ok = false
					}
				default:
					l.errf(e.k, ep, "unknown retry key %q (legacy retry knows %s; prefer task policy: tool[].spec.policy.rules)", e.key, strings.Join(legacyRetryKeys, ", "))
					ok = false
				}
			}
		}
		apply(d, path)
		if !ok {
			return nil, nil, false
		}
		if len(cfg.retryOn) > 0 || len(cfg.retryStatus) > 0 {
			if cfg.retryWhen != "" {
				l.errf(d, path, "retry has both retry_when and retry_on/retry_on_status: keep one (retry_on lists error kinds, retry_on_status HTTP statuses)")
				return nil, nil, false
			}
			cfg.retryWhen = retryOnWhen(cfg.retryOn, cfg.retryStatus)
			fromLists = true
		}
	}
	backoff := "exponential"
	switch {
	case cfg.mult == 1:
		backoff = "none"
	case cfg.mult != 2:
		l.warnf(d, path, "legacy backoff_multiplier %g is approximated by backoff: exponential (delay * 2^(attempt-1))", cfg.mult)
	}
	retry := Then{Do: "retry", Attempts: cfg.attempts, Backoff: backoff, Delay: cfg.delay, MaxDelay: cfg.maxDelay, Jitter: cfg.jitter}
	mk := func(when string, legacy bool, th Then) *Rule {
		return &Rule{When: when, Then: th, Legacy: legacy, Line: line, Path: path}
	}
	isError := WhenOutcome(OutcomeError, "")
	if pg != nil {
		switch {
		case !errCfg:
		case cfg.retryWhen == "" && cfg.stopWhen == "":
			pg.errRules = []*Rule{mk(isError, false, retry)}
			pg.errDesc = fmt.Sprintf("error → retry (attempts %d, backoff %s, delay %g, max_delay %g)", cfg.attempts, backoff, cfg.delay, cfg.maxDelay)
		default:
			if cfg.stopWhen != "" {
				pg.errRules = append(pg.errRules, mk(cfg.stopWhen, true, Then{Do: "fail"}))
			}
			if cfg.retryWhen != "" {
				pg.errRules = append(pg.errRules, mk(cfg.retryWhen, true, retry))
			} else {
				pg.errRules = append(pg.errRules, mk(isError, false, retry))
			}
			pg.errRules = append(pg.errRules, &Rule{Else: true, Then: Then{Do: "fail"}, Line: line, Path: path})
			pg.errDesc = fmt.Sprintf("stop_when → fail, retry_when → retry (attempts %d, backoff %s, delay %g, max_delay %g; legacy names), else → fail", cfg.attempts, backoff, cfg.delay, cfg.maxDelay)
		}
		return nil, pg, true
	}
	msg := fmt.Sprintf("legacy retry is deprecated: normalised to task policy spec.policy.rules [error → {do: retry, attempts: %d, backoff: %s, delay: %g, max_delay: %g}]", cfg.attempts, backoff, cfg.delay, cfg.maxDelay)
	if cfg.retryWhen == "" && cfg.stopWhen == "" {
		l.warnf(d, path, "%s", msg)
		return []*Rule{mk(isError, false, retry)}, nil, true
	}
	rules := []*Rule{mk(WhenOutcome(OutcomeOK, ""), false, Then{Do: "continue"})}
	if cfg.stopWhen != "" {
		rules = append(rules, mk(cfg.stopWhen, true, Then{Do: "fail"}))
	}
	if cfg.retryWhen != "" {
		rules = append(rules, mk(cfg.retryWhen, true, retry))
	} else {
		rules = append(rules, mk(isError, false, retry))
	}
	rules = append(rules, &Rule{Else: true, Then: Then{Do: "fail"}, Line: line, Path: path})
	if fromLists && cfg.stopWhen == "" {
		l.warnf(d, path, "legacy retry is deprecated: normalised to task policy spec.policy.rules: [{when: \"{{ outcome.status == 'ok' }}\", then: {do: continue}}, {when: \"%s\", then: {do: retry, attempts: %d, backoff: %s, delay: %g, max_delay: %g}}, {else: {then: {do: fail}}}]", cfg.retryWhen, cfg.attempts, backoff, cfg.delay, cfg.maxDelay)
		return rules, nil, true
	}
	l.warnf(d, path, "legacy retry is deprecated: normalised to task policy spec.policy.rules [ok → continue, stop_when → fail, retry_when → retry (attempts %d, backoff %s, delay %g, max_delay %g), else → fail]; retry_when/stop_when are kept verbatim and the worker provides their legacy names (status_code, error, success, result, data, attempt); canonical form: when: \"{{ outcome.status == 'error' and outcome.http.status >= 500 }}\"", cfg.attempts, backoff, cfg.delay, cfg.maxDelay)
	return rules, nil, true
}
