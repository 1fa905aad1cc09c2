package egress

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	policy "github.com/noetl/gcpengine/shared/egress"
)

// Proxy is the HTTP proxy a task's network namespace offers its programs
// (HTTP_PROXY/HTTPS_PROXY): absolute-form requests are forwarded and
// CONNECT tunnels opened only to destinations the policy admits; a
// refusal is answered 403 with the policy's reason, before anything is
// sent to the destination.
type Proxy struct {
	Policy *policy.Policy
	// Log receives one line per refusal (nil: slog.Default()).
	Log *slog.Logger
	// Conns counts the task's connections (its quota, Conns.Task): a
	// request or tunnel beyond it is answered 429 with the quota's
	// message (nil: no quota).
	Conns *TaskConns

	once sync.Once
	tr   *http.Transport
}

func (x *Proxy) log() *slog.Logger {
	if x.Log != nil {
		return x.Log
	}
	return slog.Default()
}

// hopHeaders are removed from forwarded requests and responses (RFC 9110
// §7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// ServeHTTP implements http.Handler.
func (x *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x.once.Do(func() { x.tr = x.Policy.Transport() })
	release, err := x.Conns.Acquire()
	if err != nil {
		x.log().Warn("egress: connection quota", "destination", r.Host, "error", err.Error())
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return
	}
	defer release()
	if r.Method == http.MethodConnect {
		x.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "egress proxy: only absolute http:// requests and CONNECT are proxied", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	resp, err := x.tr.RoundTrip(out)
	if err != nil {
		x.refuse(w, r.URL.Host, err)
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// refuse answers a failed connection: 403 for a refusal of the policy,
// 502 otherwise.
func (x *Proxy) refuse(w http.ResponseWriter, dest string, err error) {
	if policy.IsRefused(err) {
		x.log().Warn("egress: refused", "destination", dest, "error", err.Error())
		w.Header().Set("X-Noetl-Egress", "refused")
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	http.Error(w, "egress proxy: "+err.Error(), http.StatusBadGateway)
}

func (x *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	up, err := x.Policy.DialContext(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		x.refuse(w, r.Host, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	_, _ = down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		_, _ = up.Write(b)
	}
	Splice(down, up)
}

// Splice copies both ways between a and b until both directions end, then
// closes both.
func Splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// Forward accepts connections on l and connects each to target through
// the policy (a forwarder of a task's network namespace: the task
// connects to l, the runner to target), counting each against q while it
// is open (nil: no quota): a connection beyond the quota is answered in
// its client's protocol with the quota's message (refuseQuota) and never
// reaches target. It returns when l is closed.
func Forward(l net.Listener, target string, p *policy.Policy, log *slog.Logger, q *TaskConns) {
	for {
		c, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && log != nil {
				log.Warn("egress: forwarder stopped", "target", target, "error", err.Error())
			}
			return
		}
		release, qerr := q.Acquire()
		if qerr != nil {
			if log != nil {
				log.Warn("egress: connection quota", "destination", target, "error", qerr.Error())
			}
			go refuseQuota(c, qerr)
			continue
		}
		go func() {
			defer release()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			up, err := p.DialContext(ctx, "tcp", target)
			cancel()
			if err != nil {
				if log != nil && policy.IsRefused(err) {
					log.Warn("egress: refused", "destination", target, "error", err.Error())
				}
				c.Close()
				return
			}
			Splice(c, up)
		}()
	}
}
