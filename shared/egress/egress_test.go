package egress

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// Every refusal below is the policy's decision, taken before a
// connection is attempted: no test sends a packet to the metadata
// server, a link-local or a private address.

func TestClass(t *testing.T) {
	for addr, want := range map[string]string{
		"169.254.169.254":          "the metadata server",
		"fd20:ce::254":             "the metadata server",
		"fd00:ec2::254":            "the metadata server",
		"::ffff:169.254.169.254":   "IPv4-mapped the metadata server",
		"64:ff9b::a9fe:a9fe":       "NAT64 form of the metadata server 169.254.169.254",
		"64:ff9b::7f00:1":          "NAT64 form of loopback 127.0.0.1",
		"64:ff9b:1::1":             "reserved",
		"2002:a9fe:a9fe::1":        "6to4 form of the metadata server 169.254.169.254",
		"2002:7f00:1::":            "6to4 form of loopback 127.0.0.1",
		"::a9fe:a9fe":              "IPv4-compatible form of the metadata server 169.254.169.254",
		"2001:0:4136:e378::1":      "reserved", // Teredo
		"127.0.0.1":                "loopback",
		"127.255.0.9":              "loopback",
		"::1":                      "loopback",
		"::ffff:127.0.0.1":         "IPv4-mapped loopback",
		"169.254.1.1":              "link-local",
		"fe80::1":                  "link-local",
		"0.0.0.0":                  "unspecified",
		"::":                       "unspecified",
		"0.1.2.3":                  "reserved",
		"239.1.2.3":                "multicast",
		"255.255.255.255":          "multicast",
		"ff02::1":                  "link-local",
		"10.1.2.3":                 "private",
		"172.16.0.1":               "private",
		"192.168.1.1":              "private",
		"100.64.0.1":               "private",
		"fd12:3456::1":             "private",
		"::ffff:10.0.0.1":          "IPv4-mapped private",
		"8.8.8.8":                  "",
		"2606:4700:4700::1111":     "",
		"::ffff:8.8.8.8":           "",
		"64:ff9b::808:808":         "",
		"142.250.1.1":              "",
		"2a00:1450:4001:81b::200e": "",
	} {
		if got := Class(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Class(%s) = %q, want %q", addr, got, want)
		}
	}
}

func TestParseRule(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:5432":     "127.0.0.1:5432",
		"10.0.0.0/8":         "10.0.0.0/8",
		"10.1.2.3/8:443":     "10.0.0.0/8:443",
		"[::1]:5432":         "[::1]:5432",
		"[fc00::/7]:443":     "[fc00::/7]:443",
		"DB.Example.COM.":    "db.example.com",
		"db.example.com:443": "db.example.com:443",
		"::ffff:10.0.0.1":    "10.0.0.1",
	} {
		r, err := ParseRule(in)
		if err != nil || r.String() != want {
			t.Errorf("ParseRule(%q) = %v, %v; want %s", in, r, err, want)
		}
	}
	for _, bad := range []string{"", "host:0", "host:99999", "[::1", "[::1]x", "a b", "1.2.3.4/99"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
}

func mustPolicy(t *testing.T, profile string, allow, deny []string) *Policy {
	t.Helper()
	p, err := New(profile, allow, deny)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckAddr(t *testing.T) {
	cloud := mustPolicy(t, "cloud", []string{"127.0.0.1:5432", "10.9.0.0/16", "169.254.169.254:80"}, []string{"127.0.0.1:8680", "10.9.9.9"})
	local := mustPolicy(t, "local", []string{"127.0.0.1:5432"}, nil)
	for _, c := range []struct {
		p     *Policy
		addr  string
		port  int
		allow bool
	}{
		{cloud, "127.0.0.1", 5432, true},         // allowed exactly
		{cloud, "::ffff:127.0.0.1", 5432, true},  // its mapped form
		{cloud, "127.0.0.1", 5433, false},        // another port
		{cloud, "127.0.0.1", 8680, false},        // denied (engine)
		{cloud, "10.9.1.1", 22, true},            // allowed range
		{cloud, "10.9.9.9", 22, false},           // denied inside an allowed range
		{cloud, "10.8.1.1", 22, false},           // private in the cloud profile
		{cloud, "169.254.169.254", 80, true},     // an operator's explicit choice
		{cloud, "169.254.169.254", 8080, false},  // not that port
		{cloud, "64:ff9b::a9fe:a9fe", 80, false}, // NAT64 form is not the allowed address
		{cloud, "8.8.8.8", 53, true},
		{local, "10.8.1.1", 22, true}, // private allowed locally
		{local, "127.0.0.2", 5432, false},
		{local, "169.254.169.254", 80, false},
		{local, "fe80::1", 80, false},
	} {
		err := c.p.CheckAddr(netip.MustParseAddr(c.addr), c.port)
		if (err == nil) != c.allow {
			t.Errorf("%s CheckAddr(%s, %d) = %v, want allowed %v", c.p.Profile, c.addr, c.port, err, c.allow)
		}
		if err == nil {
			continue
		}
		var re *RefusedError
		if !errors.Is(err, ErrForbidden) || !errors.As(err, &re) {
			t.Errorf("refusal %v does not wrap ErrForbidden", err)
			continue
		}
		// A denied destination says it cannot be allowed; any other
		// names the setting that allows it.
		if re.Denied != strings.Contains(err.Error(), "it cannot be allowed") || re.Denied == strings.Contains(err.Error(), "NOETL_EGRESS_ALLOW") {
			t.Errorf("refusal %v: denied %v, but the message says otherwise", err, re.Denied)
		}
	}
}

// The engine's own endpoints stay refused whatever is allowed: an allowed
// name resolving to them, an allowed prefix or address holding them, and
// the other loopback and unspecified addresses that reach a 127.0.0.1
// listener on the same port.
func TestDenyWinsOverAllow(t *testing.T) {
	p := mustPolicy(t, "local", []string{"127.0.0.0/8", "localhost", "0.0.0.0", "::1", "dev.example", "[::ffff:127.0.0.1]:8680"},
		[]string{"127.0.0.1:8680", "127.0.0.1:8682"})
	p.Lookup = func(_ context.Context, _, host string) ([]netip.Addr, error) {
		switch host {
		case "localhost":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, nil
		case "dev.example":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	ctx := context.Background()
	for _, c := range []struct {
		host  string
		port  int
		allow bool
	}{
		{"127.0.0.1", 9000, true}, // what the developer allowed
		{"localhost", 9000, true},
		{"dev.example", 9000, true},
		{"127.0.0.1", 8680, false},
		{"127.0.0.2", 8680, false},
		{"0.0.0.0", 8680, false},
		{"::1", 8680, false},
		{"::ffff:127.0.0.1", 8680, false},
		{"::ffff:0.0.0.0", 8682, false},
		{"localhost", 8680, false},
		{"dev.example", 8682, false},
	} {
		_, err := p.Resolve(ctx, c.host, c.port)
		if (err == nil) != c.allow {
			t.Errorf("Resolve(%s, %d) = %v, want allowed %v", c.host, c.port, err, c.allow)
		}
		var re *RefusedError
		if err != nil && (!errors.As(err, &re) || !re.Denied || !strings.Contains(err.Error(), "it cannot be allowed")) {
			t.Errorf("Resolve(%s, %d): %v is not a deny refusal", c.host, c.port, err)
		}
	}
}

// A refusal tells how to allow the destination: on the local stack
// scripts/up --allow with the destination as asked, in a deployment the
// setting; a name resolving to a refused address suggests the name.
func TestRefusalSaysHowToAllow(t *testing.T) {
	local := mustPolicy(t, "local", nil, nil)
	local.Lookup = func(context.Context, string, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	cloud := mustPolicy(t, "cloud", nil, nil)
	for _, c := range []struct {
		p    *Policy
		host string
		want string
	}{
		{local, "127.0.0.1", "egress: 127.0.0.1:9000 is refused by the network policy (loopback); to allow it on the local stack: scripts/up --allow 127.0.0.1:9000 (or NOETL_EGRESS_ALLOW=127.0.0.1:9000)"},
		{local, "localhost", "scripts/up --allow localhost:9000 "},
		{local, "dev.example", "egress: dev.example:9000 (127.0.0.1) is refused by the network policy (loopback); to allow it on the local stack: scripts/up --allow dev.example:9000 "},
		{cloud, "10.0.0.5", "egress: 10.0.0.5:9000 is refused by the network policy (private range, refused in the cloud profile); an operator can allow it with the setting NOETL_EGRESS_ALLOW=10.0.0.5:9000 (Terraform: runner.egress_allow)"},
	} {
		_, err := c.p.Resolve(context.Background(), c.host, 9000)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.p.Profile, c.host, err, c.want)
		}
	}
}

// Names are decided before they are resolved, and a name's addresses are
// all checked: a name that resolves to a refused address (DNS rebinding)
// is refused, and only admitted addresses are dialled.
func TestResolve(t *testing.T) {
	var lookups atomic.Int32
	dns := map[string][]string{
		"rebind.example":   {"169.254.169.254"},
		"mixed.example":    {"10.0.0.1", "93.184.216.34"},
		"db.internal":      {"10.1.1.1"},
		"loopback.example": {"127.0.0.1"},
	}
	p := mustPolicy(t, "cloud", []string{"db.internal:5432"}, []string{"api.noetl.example"})
	p.Lookup = func(_ context.Context, _, host string) ([]netip.Addr, error) {
		lookups.Add(1)
		var out []netip.Addr
		for _, a := range dns[host] {
			out = append(out, netip.MustParseAddr(a))
		}
		if out == nil {
			return nil, errors.New("no such host")
		}
		return out, nil
	}
	ctx := context.Background()
	for _, c := range []struct {
		host string
		port int
		want string // "" refused
	}{
		{"metadata.google.internal", 80, ""},
		{"METADATA.google.internal.", 80, ""},
		{"metadata", 80, ""},
		{"localhost", 8680, ""},
		{"api.noetl.example", 443, ""},
		{"rebind.example", 80, ""},
		{"loopback.example", 80, ""},
		{"mixed.example", 443, "93.184.216.34"},
		{"db.internal", 5432, "10.1.1.1"},
		{"db.internal", 5433, ""},
		{"[::1]", 80, ""},
		{"8.8.8.8", 53, "8.8.8.8"},
	} {
		before := lookups.Load()
		addrs, err := p.Resolve(ctx, c.host, c.port)
		got := ""
		if err == nil {
			var s []string
			for _, a := range addrs {
				s = append(s, a.String())
			}
			got = strings.Join(s, ",")
		} else if !IsRefused(err) {
			t.Errorf("Resolve(%s): %v is not a refusal", c.host, err)
		}
		if got != c.want {
			t.Errorf("Resolve(%s:%d) = %q (%v), want %q", c.host, c.port, got, err, c.want)
		}
		if strings.Contains(c.host, "metadata") || c.host == "localhost" || c.host == "api.noetl.example" {
			if lookups.Load() != before {
				t.Errorf("%s was resolved before it was refused", c.host)
			}
		}
	}
}

// A refused destination is never connected to; an allowed one is; an
// http client built on the policy re-checks every redirect.
func TestDialAndRedirects(t *testing.T) {
	var refusedHits atomic.Int32
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { refusedHits.Add(1) }))
	defer refused.Close()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, refused.URL+"/x", http.StatusFound)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer allowed.Close()
	au, _ := url.Parse(allowed.URL)
	p := mustPolicy(t, "local", []string{au.Host}, nil)
	if _, err := p.DialContext(context.Background(), "tcp", strings.TrimPrefix(refused.URL, "http://")); !IsRefused(err) {
		t.Fatalf("dial of a refused loopback address: %v", err)
	}
	resp, err := p.Client().Get(allowed.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("allowed: %q", b)
	}
	if _, err := p.Client().Get(allowed.URL + "/redirect"); err == nil || !IsRefused(err) {
		t.Fatalf("redirect to a refused address: %v", err)
	}
	if refusedHits.Load() != 0 {
		t.Fatalf("the refused server was reached %d times", refusedHits.Load())
	}
}
