package http

import (
	"context"
	nethttp "net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/types"
)

// The http tool's network policy (shared/egress). Every refusal here is
// the policy's decision before a connection is attempted: no test sends a
// packet to the metadata server or to a link-local or private address.

func TestMetadataAndLinkLocalRefused(t *testing.T) {
	for name, tl := range map[string]*Tool{"default": New(Options{}), "cloud": New(Options{Egress: cloudPolicy(t)})} {
		for _, u := range []string{
			"http://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/token",
			"http://metadata.google.internal/computeMetadata/v1/",
			"http://METADATA.google.internal./computeMetadata/v1/",
			"http://metadata/computeMetadata/v1/",
			"http://169.254.1.2:8080/",
			"http://[fe80::1]/",
			"http://[fe80::1%25eth0]:80/",
			"http://[::ffff:169.254.169.254]/",
			"http://[64:ff9b::a9fe:a9fe]/",
			"http://[fd20:ce::254]/computeMetadata/v1/",
			"http://[fd00:ec2::254]/latest/meta-data/",
			"http://0.0.0.0:8680/",
		} {
			start := time.Now()
			o := tl.run(context.Background(), request{Config: M{"url": u}, TimeoutS: 5})
			if o.Status != types.StatusError || o.Error == nil || o.Error.Kind != "forbidden_address" || o.Error.Retryable {
				t.Errorf("%s %s: outcome %+v, want error kind forbidden_address, not retryable", name, u, o.Error)
				continue
			}
			if !strings.Contains(o.Error.Message, "NOETL_EGRESS_ALLOW") {
				t.Errorf("%s %s: message %q does not name the knob", name, u, o.Error.Message)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("%s %s: refused after %s (a connection was attempted)", name, u, d)
			}
		}
	}
}

func cloudPolicy(t *testing.T) *egress.Policy {
	t.Helper()
	p, err := egress.New("cloud", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A redirect to a refused address is refused when the redirect is
// dialled (the URL's host was allowed).
func TestRefusedRedirect(t *testing.T) {
	var refusedHits atomic.Int32
	refused := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) { refusedHits.Add(1) }))
	defer refused.Close()
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		nethttp.Redirect(w, r, refused.URL+"/engine", nethttp.StatusFound)
	}))
	defer srv.Close()
	p, err := egress.New("cloud", []string{strings.TrimPrefix(srv.URL, "http://")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := New(Options{Egress: p}).run(context.Background(), request{Config: M{"url": srv.URL}, TimeoutS: 5})
	if o.Error == nil || o.Error.Kind != "forbidden_address" || refusedHits.Load() != 0 {
		t.Fatalf("redirect to a refused loopback address: %+v (reached %d times)", o.Error, refusedHits.Load())
	}
	// Without a policy, a redirect to the metadata server is refused too.
	md := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		nethttp.Redirect(w, r, "http://169.254.169.254/computeMetadata/v1/", nethttp.StatusFound)
	}))
	defer md.Close()
	if o := New(Options{}).run(context.Background(), request{Config: M{"url": md.URL}, TimeoutS: 5}); o.Error == nil || o.Error.Kind != "forbidden_address" {
		t.Fatalf("redirect to the metadata server: %+v", o.Error)
	}
}

// The engine's own endpoints are refused whatever the allow-list says;
// the loopback of a tool without a policy (tests) stays open.
func TestEngineEndpointsRefused(t *testing.T) {
	srv := httptest.NewServer(nethttp.HandlerFunc(echo))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	p, err := egress.New("local", []string{"127.0.0.1"}, []string{host})
	if err != nil {
		t.Fatal(err)
	}
	if o := New(Options{Egress: p}).run(context.Background(), request{Config: M{"url": srv.URL}, TimeoutS: 5}); o.Error == nil || o.Error.Kind != "forbidden_address" || !strings.Contains(o.Error.Message, "engine's own endpoints") {
		t.Fatalf("a denied engine endpoint: %+v", o.Error)
	}
	if o := New(Options{}).run(context.Background(), request{Config: M{"url": srv.URL}, TimeoutS: 5}); o.Status != types.StatusOK {
		t.Fatalf("loopback without a policy: %+v", o.Error)
	}
}

// Options.AllowLinkLocal (NOETL_HTTP_ALLOW_LINK_LOCAL, wired by
// shared/wiring and the runner) admits
// link-local destinations: shown by the tool's policy decision.
func TestAllowLinkLocalSwitch(t *testing.T) {
	md := netip.MustParseAddr("169.254.169.254")
	if err := New(Options{}).policy.CheckAddr(md, 80); err == nil {
		t.Fatal("the metadata server is allowed by default")
	}
	if err := New(Options{AllowLinkLocal: true}).policy.CheckAddr(md, 80); err != nil {
		t.Errorf("Options.AllowLinkLocal: %v", err)
	}
	if err := New(Options{Egress: cloudPolicy(t), AllowLinkLocal: true}).policy.CheckAddr(md, 80); err != nil {
		t.Errorf("AllowLinkLocal over the cloud policy: %v", err)
	}
}
