// Command local serves every Cloud Function of the engine in one process
// for the local emulator stack, each at its own path, the way they are
// reached in the cloud (HTTP triggers and Eventarc Pub/Sub push):
//
//	/api/...      api (HTTP)
//	/emit         emit (HTTP)
//	/execute      execute (HTTP, the Cloud Tasks target)
//	/route        route (CloudEvents)
//	/materialize  materialize (CloudEvents)
//	/dispatch     dispatch (CloudEvents)
//
// It listens on 127.0.0.1:$NOETL_FUNCTIONS_PORT (default 8680).
package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"

	"github.com/noetl/gcpengine/functions/api"
	"github.com/noetl/gcpengine/functions/dispatch"
	"github.com/noetl/gcpengine/functions/emit"
	"github.com/noetl/gcpengine/functions/execute"
	"github.com/noetl/gcpengine/functions/materialize"
	"github.com/noetl/gcpengine/functions/route"
	"github.com/noetl/gcpengine/shared/runtime"
)

func ceHandler(fn func(context.Context, cloudevents.Event) error) http.Handler {
	p, err := cloudevents.NewHTTP()
	if err != nil {
		log.Fatal(err)
	}
	h, err := cloudevents.NewHTTPReceiveHandler(context.Background(), p, fn)
	if err != nil {
		log.Fatal(err)
	}
	return h
}

func main() {
	port := os.Getenv("NOETL_FUNCTIONS_PORT")
	if port == "" {
		port = "8680"
	}
	if _, err := runtime.Get(context.Background()); err != nil {
		log.Fatalf("functions: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", api.API)
	mux.HandleFunc("/emit", emit.Emit)
	mux.HandleFunc("/execute", execute.Execute)
	mux.Handle("/route", ceHandler(route.Route))
	mux.Handle("/materialize", ceHandler(materialize.Materialize))
	mux.Handle("/dispatch", ceHandler(dispatch.Dispatch))
	srv := &http.Server{Addr: "127.0.0.1:" + port, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
