package redact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/display"
	"github.com/noetl/gcpengine/shared/redact"
)

func TestHandlerMasksLogRecords(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(redact.NewHandler(slog.NewJSONHandler(&buf, nil), nil))
	kc := redact.FromCredential(map[string]any{"user": "svc_reporting", "password": "Pw-9912!"})
	ctx := redact.WithRedactor(context.Background(), kc)

	log.With("token", "tok-with-attrs").InfoContext(ctx, "login as svc_reporting failed",
		"error", errors.New("auth Pw-9912! rejected"),
		"url", "https://h/x?api_key=zz9&page=1",
		"args", map[string]any{"password": "x", "n": 1},
		slog.Group("req", "Authorization", "Basic c3ZjOnB3", "path", "/x"),
		"retryable", true,
		"sort_key", "k1",
	)
	out := buf.String()
	for _, leak := range []string{"svc_reporting", "Pw-9912!", "tok-with-attrs", "zz9", "c3ZjOnB3", `"password":"x"`} {
		if strings.Contains(out, leak) {
			t.Errorf("log line leaks %q: %s", leak, out)
		}
	}
	for _, keep := range []string{`"page=1"`, `"path":"/x"`, `"retryable":true`, `"sort_key":"k1"`, `"n":1`} {
		if !strings.Contains(out, strings.Trim(keep, `"`)) {
			t.Errorf("log line lost %s: %s", keep, out)
		}
	}
	// Without a Redactor in the context, keys and patterns still apply.
	buf.Reset()
	log.Info("dial postgres://u:pw77@h/db", "secret", "s")
	if out := buf.String(); strings.Contains(out, "pw77") || strings.Contains(out, `"secret":"s"`) {
		t.Errorf("log line without keychain: %s", out)
	}
}

// Control characters of user text (ESC, BEL, 8-bit CSI, a right-to-left
// override) are escaped in every log line: the message, string
// attributes, nested values and errors (docs/security.md "Rooms", display safety).
func TestHandlerEscapesControlCharacters(t *testing.T) {
	const evil = "a\x1b[2J\a\u009b31m\u202eb"
	var buf bytes.Buffer
	log := slog.New(redact.NewHandler(slog.NewJSONHandler(&buf, nil), nil))
	log.Info("step "+evil, "name", evil, "doc", map[string]any{"k": []any{evil}}, "err", errors.New(evil), slog.Group("g", "x", evil))
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprint(line)
	if c, bad := display.UnsafeIn(text); bad {
		t.Fatalf("log line holds %U raw: %q", c, text)
	}
	if n := strings.Count(text, `\u202eb`); n != 5 {
		t.Fatalf("escaped %d of 5 values: %s", n, text)
	}
}
