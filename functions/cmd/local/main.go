// Command local serves every Cloud Function of the engine in one process for
// the local emulator stack (placeholder: answers 200 on every path until the
// functions land).
package main

import (
	"log"
	"net/http"
	"os"
)

func main() {
	port := os.Getenv("NOETL_FUNCTIONS_PORT")
	if port == "" {
		port = "8680"
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})))
}
