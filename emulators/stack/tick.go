package stack

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// Ticker stands in for Cloud Scheduler's job of the deployment
// (terraform/subscriptions.tf): it POSTs to URL (the subscribe function's
// /tick: probes, spool drains, batch pulls of registered subscriptions)
// every Every, one call at a time (a slow call delays the next instead of
// piling up).
type Ticker struct {
	URL    string
	Every  time.Duration
	Client *http.Client
	Log    *slog.Logger
}

// Run ticks until ctx ends. A failed call is logged (at most once a
// minute while it keeps failing) and the next tick tries again.
func (t *Ticker) Run(ctx context.Context) {
	c := t.Client
	if c == nil {
		c = &http.Client{Timeout: time.Minute}
	}
	lg := t.Log
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	var lastWarn time.Time
	tk := time.NewTicker(t.Every)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		code, body, err := t.once(ctx, c)
		if ctx.Err() != nil {
			return
		}
		if err == nil && code/100 == 2 {
			lg.Debug("subscribe tick", "status", code)
			continue
		}
		if time.Since(lastWarn) >= time.Minute {
			lastWarn = time.Now()
			lg.Warn("subscribe tick failed", "url", t.URL, "status", code, "body", body, "error", errString(err))
		}
	}
}

func (t *Ticker) once(ctx context.Context, c *http.Client) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(nil))
	if err != nil {
		return 0, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}
