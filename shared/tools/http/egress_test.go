package http

import (
	"context"
	"errors"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/types"
)

// Issue 10 item 5: the http tool cannot reach the metadata server (the
// function's service-account token) or other link-local addresses.

func TestMetadataAndLinkLocalRefused(t *testing.T) {
	tl := New(Options{})
	for _, u := range []string{
		"http://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/token",
		"http://metadata.google.internal/computeMetadata/v1/",
		"http://METADATA.google.internal./computeMetadata/v1/",
		"http://metadata/computeMetadata/v1/",
		"http://169.254.1.2:8080/",
		"http://[fe80::1]/",
		"http://[fe80::1%25eth0]:80/",
		"http://[::ffff:169.254.169.254]/",
		"http://[fd00:ec2::254]/latest/meta-data/",
	} {
		start := time.Now()
		o := tl.run(context.Background(), request{Config: M{"url": u}, TimeoutS: 5})
		if o.Status != types.StatusError || o.Error == nil || o.Error.Kind != "forbidden_address" || o.Error.Retryable {
			t.Errorf("%s: outcome %+v, want error kind forbidden_address, not retryable", u, o.Error)
			continue
		}
		if !strings.Contains(o.Error.Message, "NOETL_HTTP_ALLOW_LINK_LOCAL") {
			t.Errorf("%s: message %q does not name the switch", u, o.Error.Message)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: refused after %s (a connection was attempted)", u, d)
		}
	}
}

func TestRefusedAfterResolutionAndRedirect(t *testing.T) {
	// A redirect to the metadata address: the URL's host is fine, the
	// dialer refuses the resolved destination.
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		nethttp.Redirect(w, r, "http://169.254.169.254/computeMetadata/v1/", nethttp.StatusFound)
	}))
	defer srv.Close()
	o := New(Options{}).run(context.Background(), request{Config: M{"url": srv.URL}, TimeoutS: 5})
	if o.Error == nil || o.Error.Kind != "forbidden_address" {
		t.Fatalf("redirect to the metadata server: %+v", o.Error)
	}
	// The dialer check itself, as the resolver hands it addresses.
	for addr, bad := range map[string]bool{
		"169.254.169.254:80": true, "[fe80::abcd]:443": true, "[::ffff:a9fe:a9fe]:80": true,
		"127.0.0.1:8080": false, "10.0.0.1:80": false, "[::1]:80": false, "8.8.8.8:53": false,
	} {
		err := forbidDial("tcp", addr, nil)
		if got := errors.Is(err, ErrForbiddenAddress); got != bad {
			t.Errorf("forbidDial(%s) = %v, want forbidden %v", addr, err, bad)
		}
	}
}

func TestLoopbackStillAllowed(t *testing.T) {
	srv := httptest.NewServer(nethttp.HandlerFunc(echo))
	defer srv.Close()
	o := New(Options{}).run(context.Background(), request{Config: M{"url": srv.URL}, TimeoutS: 5})
	if o.Status != types.StatusOK {
		t.Fatalf("loopback: %+v", o.Error)
	}
}

func TestAllowLinkLocalSwitch(t *testing.T) {
	// Nothing listens there: allowed, the request gets past the guard and
	// fails (or succeeds) otherwise.
	check := func(tl *Tool, name string) {
		t.Helper()
		o := tl.run(context.Background(), request{Config: M{"url": "http://169.254.169.254:9/"}, TimeoutS: 1})
		if o.Error != nil && o.Error.Kind == "forbidden_address" {
			t.Errorf("%s: still refused: %+v", name, o.Error)
		}
	}
	check(New(Options{AllowLinkLocal: true}), "Options.AllowLinkLocal")
	t.Setenv(EnvAllowLinkLocal, "true")
	check(New(Options{}), EnvAllowLinkLocal+"=true")
	t.Setenv(EnvAllowLinkLocal, "false")
	if o := New(Options{}).run(context.Background(), request{Config: M{"url": "http://169.254.169.254/"}, TimeoutS: 1}); o.Error == nil || o.Error.Kind != "forbidden_address" {
		t.Errorf("%s=false: %+v", EnvAllowLinkLocal, o.Error)
	}
}
