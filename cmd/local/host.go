package main

import (
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
)

// startTries bounds the attempts to start one function's server (a free
// port picked for it may be taken before funcframework binds it).
const startTries = 5

// ServeFunctions starts one functions-framework server per registered
// function name, each on a free loopback port, the way Cloud Run starts a
// gen2 function: funcframework.StartHostPort with FUNCTION_TARGET set to
// the name, so the function is served at "/" with the framework's own
// wrapping (HTTP functions as they are; CloudEvent functions accept
// CloudEvents and convert a raw Pub/Sub push body to one). funcframework
// reads FUNCTION_TARGET once, before it listens, so the servers are started
// one after the other, each once its port answers; FUNCTION_TARGET is
// unset afterwards. It returns the base URL of each function. A server
// that stops later ends the process (the supervisor restarts it).
func ServeFunctions(names []string) (map[string]string, error) {
	defer os.Unsetenv("FUNCTION_TARGET")
	out := map[string]string{}
	for _, name := range names {
		var last error
		for try := 0; try < startTries && out[name] == ""; try++ {
			addr, err := serveOne(name)
			if err != nil {
				last = err
				continue
			}
			out[name] = "http://" + addr
		}
		if out[name] == "" {
			return nil, fmt.Errorf("functions-framework server of %s: %w", name, last)
		}
	}
	return out, nil
}

// serveOne starts the server of one function and returns its address once
// it accepts connections.
func serveOne(name string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := os.Setenv("FUNCTION_TARGET", name); err != nil {
		return "", err
	}
	errc := make(chan error, 1)
	go func() { errc <- funcframework.StartHostPort("127.0.0.1", strconv.Itoa(port)) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-errc:
			return "", err
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s did not listen on %s within 10s", name, addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A port taken by someone else between freePort and the bind would
	// answer the dial while StartHostPort fails at once: give it a moment.
	select {
	case err := <-errc:
		return "", err
	case <-time.After(50 * time.Millisecond):
	}
	go func() {
		err := <-errc
		log.Fatalf("functions: the functions-framework server of %s stopped: %v", name, err)
	}()
	return addr, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Front returns the handler of the functions' URLs: /<name> and
// /<name>/... are forwarded to backends[name] with the /<name> prefix
// removed (what stands for the function's own URL in GCP), metricsPath
// (NOETL_METRICS_PATH, "" = /metrics) is served by metrics. Anything else
// is 404.
func Front(backends map[string]string, metricsPath string, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	if metricsPath == "" {
		metricsPath = "/metrics"
	}
	if metrics != nil {
		mux.Handle(metricsPath, metrics)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Cloud Tasks dispatches up to NOETL_WORK_CONCURRENCY units at once.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.DisableCompression = 1024, 512, true
	for name, base := range backends {
		target, err := url.Parse(base)
		if err != nil {
			panic(fmt.Sprintf("functions: backend URL of %s: %v", name, err))
		}
		prefix := "/" + name
		p := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				rest := strings.TrimPrefix(pr.In.URL.Path, prefix)
				if rest == "" {
					rest = "/"
				}
				pr.Out.URL.Path, pr.Out.URL.RawPath = rest, ""
				// The function is served under /<name> here, at the
				// root of its own URL in GCP: say where, so pages that
				// link to themselves (the api's console) can.
				pr.Out.Header.Set("X-Forwarded-Prefix", prefix)
			},
			Transport: tr,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				if !errors.Is(err, http.ErrAbortHandler) {
					log.Printf("functions: forwarding %s %s to %s: %v", r.Method, r.URL.Path, name, err)
				}
				http.Error(w, "function "+name+" unavailable: "+err.Error(), http.StatusBadGateway)
			},
		}
		mux.Handle(prefix, p)
		mux.Handle(prefix+"/", p)
	}
	return mux
}

// ServeMetrics serves metrics at path on addr until the listener fails
// (NOETL_METRICS_PORT: the Prometheus endpoint on a port of its own).
func ServeMetrics(addr, path string, metrics http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle(path, metrics)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}
