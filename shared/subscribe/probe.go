package subscribe

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
)

// ProbeTimeout bounds one active probe (noetl-tools spool/probe.rs: a hung
// downstream reads as down quickly).
const ProbeTimeout = 3 * time.Second

// Prober checks a downstream's health: up reports reachability, ok is
// false for a passive downstream (no active probe).
type Prober func(ctx context.Context, d dsl.Downstream) (up, ok bool)

// DefaultProber probes as NoETL does: http GETs the target (any answer
// below 500 is up, a transport error or a 5xx is down), tcp connects to
// host:port, nats connects to the host:port of its URL; passive has no
// probe.
func DefaultProber(client *http.Client) Prober {
	if client == nil {
		client = &http.Client{Timeout: ProbeTimeout}
	}
	return func(ctx context.Context, d dsl.Downstream) (bool, bool) {
		if d.Probe == "passive" || d.Target == "" {
			return false, false
		}
		ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		defer cancel()
		switch d.Probe {
		case "tcp", "nats":
			addr := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(d.Target, "nats://"), "tls://"), "/")
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err != nil {
				return false, true
			}
			c.Close()
			return true, true
		default:
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.Target, nil)
			if err != nil {
				return false, true
			}
			resp, err := client.Do(req)
			if err != nil {
				return false, true
			}
			resp.Body.Close()
			return resp.StatusCode < 500, true
		}
	}
}
