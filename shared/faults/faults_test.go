package faults

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    map[string]rule
		wantErr string
	}{
		{"", map[string]rule{}, ""},
		{" , ", map[string]rule{}, ""},
		{"execute.after_tool=crash:0.02", map[string]rule{"execute.after_tool": {"crash", 0.02}}, ""},
		{"a=error:0, b=crash:1", map[string]rule{"a": {"error", 0}, "b": {"crash", 1}}, ""},
		{"a", nil, "not point=action:probability"},
		{"a=error", nil, "not point=action:probability"},
		{"a=error:x", nil, "between 0 and 1"},
		{"a=error:1.5", nil, "between 0 and 1"},
		{"a=error:-0.1", nil, "between 0 and 1"},
		{"a=boom:0.5", nil, "crash or error"},
		{"a=error:0.5,b", nil, "not point=action:probability"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := Parse(c.in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), Env) {
					t.Fatalf("Parse(%q) error %v, want one naming %s and %q", c.in, err, Env, c.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
			}
		})
	}
}

// configure installs rules (as if NOETL_FAULTS were spec) with a seeded
// random source and a stub for the process exit, and restores the
// package's state after the test. It returns the exit codes the stub saw.
func configure(t *testing.T, spec string) *[]int {
	t.Helper()
	r, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	oldRules, oldRng, oldCounts, oldLoaded, oldExit, oldLog := rules, rng, counts, loaded, exit, log
	exits := &[]int{}
	rules, rng, counts, loaded = r, rand.New(rand.NewPCG(1, 2)), map[string]int{}, true
	exit = func(code int) { *exits = append(*exits, code) }
	log = slog.New(slog.DiscardHandler)
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		rules, rng, counts, loaded, exit, log = oldRules, oldRng, oldCounts, oldLoaded, oldExit, oldLog
		mu.Unlock()
	})
	return exits
}

func TestInject(t *testing.T) {
	exits := configure(t, "always=error:1,never=error:0,half=error:0.5,die=crash:1")
	if !Enabled() {
		t.Fatal("Enabled() false with rules configured")
	}
	var inj Injected
	if err := Inject("always", "ex1"); !errors.As(err, &inj) || inj.Point != "always" {
		t.Fatalf("p=1: %v, want Injected at always", err)
	}
	hits := map[string]int{}
	for range 2000 {
		for _, p := range []string{"never", "half", "unconfigured"} {
			if Inject(p, "ex1") != nil {
				hits[p]++
			}
		}
	}
	if hits["never"] != 0 || hits["unconfigured"] != 0 {
		t.Fatalf("p=0 or unconfigured points fired: %v", hits)
	}
	if hits["half"] < 850 || hits["half"] > 1150 {
		t.Fatalf("p=0.5 fired %d times in 2000", hits["half"])
	}
	if len(*exits) != 0 {
		t.Fatal("an error fault exited")
	}
	_ = Inject("die", "ex1")
	if !reflect.DeepEqual(*exits, []int{ExitCode}) {
		t.Fatalf("crash fault exits %v, want [%d]", *exits, ExitCode)
	}
	want := map[string]int{"always.error": 1, "half.error": hits["half"], "die.crash": 1}
	if got := Counts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Counts() = %v, want %v", got, want)
	}
}

func TestLoadFromEnv(t *testing.T) {
	cases := []struct {
		env     string
		enabled bool
	}{
		{"", false},
		{"nonsense", false},
		{"p=error:1", true},
	}
	for _, c := range cases {
		t.Run(c.env, func(t *testing.T) {
			configure(t, "")
			mu.Lock()
			loaded, rules = false, nil
			mu.Unlock()
			t.Setenv(Env, c.env)
			t.Setenv(SeedEnv, "7")
			if Enabled() != c.enabled {
				t.Fatalf("Enabled() with %s=%q: want %v", Env, c.env, c.enabled)
			}
			if err := Inject("p", "ex1"); (err != nil) != c.enabled {
				t.Fatalf("Inject: %v", err)
			}
		})
	}
}

func TestInjectFor(t *testing.T) {
	wl := map[string]any{WorkloadKey: map[string]any{
		ExecuteStart + "@charge":  "error:1",
		ExecuteAfterTool:          "crash:1",
		ExecuteBeforeCommit:       "error:2", // invalid: ignored
		ExecuteAfterCommit + "@x": "error:0",
		MaterializeBeforeWrite:    7, // not a spec: ignored
	}}
	cases := []struct {
		name      string
		enabled   bool
		point     string
		step      string
		replay    bool
		wantErr   bool
		wantExits int
	}{
		{"a step-scoped fault hits its step", true, ExecuteStart, "charge", false, true, 0},
		{"a step-scoped fault spares other steps", true, ExecuteStart, "other", false, false, 0},
		{"a replayed unit is exempt", true, ExecuteStart, "charge", true, false, 0},
		{"workload faults need NOETL_FAULTS_WORKLOAD=1", false, ExecuteStart, "charge", false, false, 0},
		{"an unscoped crash hits every step", true, ExecuteAfterTool, "any", false, true, 1},
		{"an invalid spec is ignored", true, ExecuteBeforeCommit, "any", false, false, 0},
		{"probability 0 never fires", true, ExecuteAfterCommit, "x", false, false, 0},
		{"a non-string spec is ignored", true, MaterializeBeforeWrite, "any", false, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exits := configure(t, "")
			if c.enabled {
				t.Setenv(WorkloadEnv, "1")
			} else {
				t.Setenv(WorkloadEnv, "")
			}
			err := InjectFor(c.point, "ex1", c.step, wl, c.replay)
			var inj Injected
			if c.wantErr != errors.As(err, &inj) {
				t.Fatalf("InjectFor: %v, want an injected fault: %v", err, c.wantErr)
			}
			if len(*exits) != c.wantExits {
				t.Fatalf("exits %v, want %d", *exits, c.wantExits)
			}
		})
	}
	t.Run("process faults still apply to replayed units", func(t *testing.T) {
		configure(t, ExecuteStart+"=error:1")
		if err := InjectFor(ExecuteStart, "ex1", "s", nil, true); err == nil {
			t.Fatal("NOETL_FAULTS did not apply")
		}
	})
}

// TestDrawThenInject: a drawn fault does nothing until its Inject (the
// caller finishes the point's state first), which counts and carries it
// out; nothing drawn injects nothing.
func TestDrawThenInject(t *testing.T) {
	exits := configure(t, ExecuteAfterTool+"=crash:1,"+ExecuteStart+"=error:1")
	f := DrawFor(ExecuteAfterTool, "ex1", "s", nil, false)
	if f == nil {
		t.Fatal("crash:1 drew nothing")
	}
	if len(*exits) != 0 || len(Counts()) != 0 {
		t.Fatalf("a drawn fault acted before its Inject: exits %v, counts %v", *exits, Counts())
	}
	_ = f.Inject() // the test's exit returns: what follows it is moot
	if len(*exits) != 1 || Counts()[ExecuteAfterTool+".crash"] != 1 {
		t.Fatalf("Inject: exits %v, counts %v; want one crash", *exits, Counts())
	}
	var inj Injected
	if err := Draw(ExecuteStart, "ex1").Inject(); !errors.As(err, &inj) {
		t.Fatalf("error:1: %v, want Injected", err)
	}
	if f := Draw(ExecuteAfterCommit, "ex1"); f != nil {
		t.Fatal("an unconfigured point drew a fault")
	}
	if err := (*Fault)(nil).Inject(); err != nil {
		t.Fatalf("nil Fault: %v", err)
	}
	restore := SetScript(func(point, _, _ string) string { return "crash" })
	defer restore()
	sf := DrawFor(ExecuteBeforeCommit, "ex1", "s", nil, false)
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("a scripted crash did not panic with Crashed")
			} else if _, ok := r.(Crashed); !ok {
				panic(r)
			}
		}()
		_ = sf.Inject()
	}()
}
