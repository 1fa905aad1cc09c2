package egress

import (
	"net"
	"net/http"
	"strconv"
	"time"
)

// Transport returns an http.Transport whose every connection (redirects
// included) passes the policy. It never uses a proxy of the environment:
// the policy must see the real destination.
func (p *Policy) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           p.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// Client returns an http.Client on Transport (no client-wide timeout:
// requests carry their deadline).
func (p *Policy) Client() *http.Client { return &http.Client{Transport: p.Transport()} }

// HostPort returns host and port of a rule usable as a forwarder target
// (a single address, or a host name, with a port), and false otherwise.
func (r Rule) HostPort() (string, bool) {
	if r.Port == 0 {
		return "", false
	}
	if r.Host != "" {
		return net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port))), true
	}
	if !r.Prefix.IsSingleIP() {
		return "", false
	}
	return net.JoinHostPort(r.Prefix.Addr().String(), strconv.Itoa(int(r.Port))), true
}
