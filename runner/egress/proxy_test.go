package egress

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	policy "github.com/noetl/gcpengine/shared/egress"
)

func mustPolicy(t *testing.T, profile string, allow, deny []string) *policy.Policy {
	t.Helper()
	p, err := policy.New(profile, allow, deny)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The proxy of a task's namespace forwards what the policy admits and
// answers 403 for the rest (absolute-form and CONNECT).
func TestProxy(t *testing.T) {
	var refusedHits atomic.Int32
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { refusedHits.Add(1) }))
	defer refused.Close()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer allowed.Close()
	au, _ := url.Parse(allowed.URL)
	p := mustPolicy(t, "local", []string{au.Host}, nil)
	px := httptest.NewServer(&Proxy{Policy: p})
	defer px.Close()
	pu, _ := url.Parse(px.URL)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	get := func(u string) (int, string) {
		resp, err := client.Get(u)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(allowed.URL); code != 200 || body != "ok" {
		t.Errorf("allowed through the proxy: %d %s", code, body)
	}
	for _, u := range []string{refused.URL, "http://169.254.169.254/computeMetadata/v1/", "http://metadata.google.internal/", "http://[fd20:ce::254]/"} {
		if code, body := get(u); code != http.StatusForbidden || !strings.Contains(body, "refused by the network policy") {
			t.Errorf("%s through the proxy: %d %s, want 403", u, code, body)
		}
	}
	// CONNECT to a refused address.
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT 169.254.169.254:443 HTTP/1.1\r\nHost: 169.254.169.254:443\r\n\r\n")
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	if !strings.Contains(string(buf[:n]), "403") {
		t.Errorf("CONNECT to the metadata server: %q", buf[:n])
	}
	if refusedHits.Load() != 0 {
		t.Errorf("the refused server was reached %d times", refusedHits.Load())
	}
}
