// Package chaos describes the delivery faults the local stack can inject
// to prove that no handler depends on delivery order or on exactly-once
// delivery (NOETL_DELIVERY_CHAOS): the push bridge delays messages at
// random (which shuffles their order) and duplicates a share of them, and
// the Cloud Tasks emulator does the same to task attempts (a duplicate is a
// second, concurrent delivery of the same attempt).
package chaos

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Env is the variable scripts/up reads.
const Env = "NOETL_DELIVERY_CHAOS"

// Defaults of NOETL_DELIVERY_CHAOS=1.
const (
	DefaultDupRate  = 0.2
	DefaultMaxDelay = 500 * time.Millisecond
)

// Options are the faults to inject. The zero value injects nothing.
type Options struct {
	// DupRate is the share (0..1) of deliveries made twice.
	DupRate float64
	// MaxDelay is the upper bound of a uniform random delay before each
	// delivery; deliveries run concurrently, so delays shuffle the order.
	MaxDelay time.Duration
	// Seed makes the random choices repeatable (0: time-based).
	Seed uint64
}

// Enabled reports whether any fault is injected.
func (o Options) Enabled() bool { return o.DupRate > 0 || o.MaxDelay > 0 }

// String formats the options in Parse's syntax ("" when disabled).
func (o Options) String() string {
	if !o.Enabled() {
		return ""
	}
	return fmt.Sprintf("dup=%g,delay=%s,seed=%d", o.DupRate, o.MaxDelay, o.Seed)
}

// Parse reads NOETL_DELIVERY_CHAOS: "" or "0" disables; "1" gives the
// defaults (20% duplicates, delays up to 500 ms, shuffled order); a
// comma-separated list sets fields, starting from the defaults:
// dup=0.3 (share of duplicated deliveries), delay=800ms (largest random
// delay; 0 disables delays), seed=42 (repeatable choices).
func Parse(s string) (Options, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "0", "false", "off":
		return Options{}, nil
	case "1", "true", "on":
		return Options{DupRate: DefaultDupRate, MaxDelay: DefaultMaxDelay}, nil
	}
	o := Options{DupRate: DefaultDupRate, MaxDelay: DefaultMaxDelay}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Options{}, fmt.Errorf("%s=%q: %q is not key=value (keys: dup, delay, seed)", Env, s, part)
		}
		switch k {
		case "dup":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				return Options{}, fmt.Errorf("%s=%q: dup wants a share between 0 and 1", Env, s)
			}
			o.DupRate = f
		case "delay":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return Options{}, fmt.Errorf("%s=%q: delay wants a duration such as 500ms", Env, s)
			}
			o.MaxDelay = d
		case "seed":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return Options{}, fmt.Errorf("%s=%q: seed wants a non-negative integer", Env, s)
			}
			o.Seed = n
		default:
			return Options{}, fmt.Errorf("%s=%q: unknown key %q (keys: dup, delay, seed)", Env, s, k)
		}
	}
	return o, nil
}

// Injector makes the random choices of one delivery path. Safe for
// concurrent use.
type Injector struct {
	o  Options
	mu sync.Mutex
	r  *rand.Rand
}

// New returns an injector for o.
func New(o Options) *Injector {
	seed := o.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	return &Injector{o: o, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Options returns the injector's options.
func (in *Injector) Options() Options {
	if in == nil {
		return Options{}
	}
	return in.o
}

// Delay returns a random delay for one delivery (0 when disabled).
func (in *Injector) Delay() time.Duration {
	if in == nil || in.o.MaxDelay <= 0 {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return time.Duration(in.r.Int64N(int64(in.o.MaxDelay)))
}

// Duplicate reports whether a delivery is to be made twice.
func (in *Injector) Duplicate() bool {
	if in == nil || in.o.DupRate <= 0 {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.r.Float64() < in.o.DupRate
}
