// Command local serves every Cloud Function of the engine for the local
// emulator stack the way Cloud Functions (gen2) runs them: each function is
// served by functions-framework-go (funcframework.StartHostPort with
// FUNCTION_TARGET naming it, as the Go buildpack's generated main does on
// its own Cloud Run service: HTTP functions as HTTP, route, materialize
// and dispatch as CloudEvent functions fed by push subscriptions), on a
// loopback port of its own. The functions are registered by importing the
// module's root package, like the buildpack. A front server on
// 127.0.0.1:$NOETL_FUNCTIONS_PORT (default 8680) stands in for the
// functions' URLs and forwards by path prefix, the prefix removed (each
// function sees the paths it sees in GCP):
//
//	/api/...              → api         (/executions, /healthz, ...)
//	/emit                 → emit
//	/execute              → execute     (the Cloud Tasks target)
//	/route/projects/P/topics/T        → route        (push endpoint: a raw
//	/materialize/projects/P/topics/T  → materialize   Pub/Sub push body that
//	/dispatch/projects/P/topics/T     → dispatch      funcframework converts)
//	/subscribe/push/NAME, /subscribe/tick → subscribe (HTTP: pushes of
//	                      registered subscriptions, the stack's ticker)
//	/metrics              → the process's Prometheus metrics (telemetry;
//	                        NOETL_METRICS_PATH, also on NOETL_METRICS_PORT when set)
//
// All functions share the process's dependencies (shared/wiring), as
// one instance of each would.
package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	_ "github.com/noetl/gcpengine" // registers the six functions (functions-framework)

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/deploy"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/wiring"
)

func main() {
	port := os.Getenv("NOETL_FUNCTIONS_PORT")
	if port == "" {
		port = "8680"
	}
	names := make([]string, 0, len(deploy.Functions))
	for _, f := range deploy.Functions {
		names = append(names, f.Name)
	}
	backends, err := ServeFunctions(names)
	if err != nil {
		log.Fatalf("functions: %v", err)
	}
	d, err := wiring.Get(context.Background(), 0)
	if err != nil {
		log.Fatalf("functions: %v", err)
	}
	metrics := d.Cfg.Metrics
	srv := &http.Server{Addr: "127.0.0.1:" + port, Handler: Front(backends, metrics.Path, telemetry.MetricsHandler()), ReadHeaderTimeout: 10 * time.Second}
	if addr := metricsAddr(d.Cfg); addr != "" {
		// NOETL_METRICS_PORT: the Prometheus endpoint on a port of its own too.
		go func() {
			if err := ServeMetrics(addr, metrics.Path, telemetry.MetricsHandler()); err != nil {
				log.Printf("functions: metrics listener on port %d: %v", metrics.Port, err)
			}
		}()
	}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = telemetry.Shutdown(ctx)
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

// metricsAddr is the loopback address of the Prometheus endpoint's own
// listener (NOETL_METRICS_PORT; "" when 0: only the functions' port
// serves it).
func metricsAddr(cfg config.Config) string {
	if cfg.Metrics.Port <= 0 {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(cfg.Metrics.Port)
}
