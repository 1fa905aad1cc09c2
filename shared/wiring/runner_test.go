package wiring

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/tools"
)

// Without a runner the runner kinds fail with a config error naming the
// knob: they never fall back to running in the control plane.
func TestRunnerKindsNeedTheRunner(t *testing.T) {
	reg := runnerTools(config.Config{}, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(reg) != len(tools.RunnerKinds) {
		t.Fatalf("%d tools, want %d", len(reg), len(tools.RunnerKinds))
	}
	for _, k := range tools.RunnerKinds {
		o := reg[k].Run(context.Background(), tools.Request{Config: map[string]any{"code": "result = 1", "command": "echo hi"}})
		if o.Error == nil || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, "NOETL_RUNNER_URL") {
			t.Errorf("%s without a runner: %+v", k, o.Error)
		}
	}
}

// With a runner URL and a local token key that cannot be read, a call
// fails with the runner error kind naming the key file (and is retried by
// policy), never runs locally.
func TestRunnerTokenKeyMissing(t *testing.T) {
	cfg := config.Config{Runner: config.RunnerConfig{URL: "http://127.0.0.1:9", Audience: "http://127.0.0.1:9", Invoker: "x@y.iam.gserviceaccount.com", TokenKeyFile: "/nonexistent/key.pem"}}
	reg := runnerTools(cfg, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	o := reg[tools.KindPython].Run(context.Background(), tools.Request{Config: map[string]any{"code": "result = 1"}})
	if o.Error == nil || o.Error.Kind != "runner" || !strings.Contains(o.Error.Message, "NOETL_RUNNER_TOKEN_KEY_FILE") {
		t.Fatalf("%+v", o.Error)
	}
}
