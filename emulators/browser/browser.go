// Package browser drives a headless Chromium (Debian's chromium) with
// chromedp for the console's browser tests and scripts/console-shots.
// The browser runs with the flags a closed network and a root user need
// (Flags) and a fresh profile directory per browser, removed when it is
// closed.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/noetl/gcpengine/shared/errs"
)

// Flags are the command-line switches Chromium runs with, besides a
// fresh --user-data-dir: headless, no sandbox (the tests run as root), no
// GPU, no QUIC, and nothing that reaches the network by itself (first-run
// pages, background fetches, component updates, sync).
var Flags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync"}

// ErrNoChromium: no Chromium binary was found.
var ErrNoChromium = errs.Sentinel(errs.NotFound, "browser: no chromium binary (apt-get install chromium, or set NOETL_CHROMIUM)")

// Path returns the Chromium binary: NOETL_CHROMIUM, else chromium or
// chromium-browser on PATH.
func Path() (string, error) {
	if p := os.Getenv("NOETL_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Browser is one running Chromium.
type Browser struct {
	dir         string
	allocCancel context.CancelFunc
	ctx         context.Context
	cancel      context.CancelFunc
}

// Start starts Chromium with Flags, a fresh profile and a window of
// width × height pixels.
func Start(width, height int) (*Browser, error) {
	bin, err := Path()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "noetl-chromium-")
	if err != nil {
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(width, height),
	}
	for _, f := range Flags {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{dir: dir, allocCancel: acancel, ctx: ctx, cancel: cancel}
	// Start the browser now, so a broken installation fails here. (The
	// first action must run on the tab's own context: the browser lives
	// as long as the context it started on.)
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("browser: start %s: %w", bin, err)
		}
	case <-time.After(60 * time.Second):
		b.Close()
		return nil, fmt.Errorf("browser: %s did not start within 60s", bin)
	}
	return b, nil
}

// Do runs actions in the browser's tab, in order, within timeout.
func (b *Browser) Do(timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// Run runs one action in the browser's tab within timeout and returns
// its value.
func Run[T any](b *Browser, timeout time.Duration, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// Context is the browser tab's context (for chromedp calls that need one).
func (b *Browser) Context() context.Context { return b.ctx }

// Close stops Chromium and removes its profile.
func (b *Browser) Close() {
	b.cancel()
	b.allocCancel()
	_ = os.RemoveAll(b.dir)
}

// Login opens the console's login form at base (the console's URL, e.g.
// http://127.0.0.1:8680/api/console) and logs in with token, as a person
// would: typed into the form, never in a URL.
func Login(base, token string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS("nav[aria-label=Main]")),
	)
}
