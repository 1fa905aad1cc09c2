package api

import (
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/store"
)

// playbooks serves the playbook catalog:
//
//	POST /playbooks             body: playbook YAML, or JSON {"playbook": "<yaml>", "path": "..."}
//	                            → 201 {"path", "version", "name"}; 400 {"problems": [...]} when invalid
//	GET  /playbooks             → 200 {"playbooks": [{path, name, latest, updated_at}]}
//	GET  /playbooks/{path}      → 200 {path, name, version, source, created_at} (?version=N, default latest)
//
// The path is the playbook's metadata.path (or its name) unless the JSON
// body names one. Registering the latest version's exact source again
// returns that version.
func playbooks(w http.ResponseWriter, r *http.Request, rest string) {
	ctx := r.Context()
	d, ok := opened(ctx, w, deps)
	if !ok {
		return
	}
	rest = strings.TrimPrefix(rest, "/")
	switch {
	case rest == "" && r.Method == http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			return
		}
		src, path := body, ""
		if strings.HasPrefix(strings.TrimSpace(string(body)), "{") {
			var req struct {
				Playbook string `json:"playbook"`
				Path     string `json:"path"`
			}
			if !decodeJSON(w, body, &req) {
				return
			}
			src, path = []byte(req.Playbook), req.Path
		}
		pb, err := dsl.Load(src, "playbook")
		if err != nil {
			if !invalidDocument(w, err, "invalid playbook") {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			}
			return
		}
		if path == "" {
			path = pb.Metadata.Path
		}
		if path == "" {
			path = pb.Metadata.Name
		}
		v, err := d.Store.PlaybookPut(ctx, store.PlaybookPutParams{Path: path, Name: pb.Metadata.Name, Source: string(src)})
		if err != nil {
			unavailable(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"path": path, "name": pb.Metadata.Name, "version": v})
	case rest == "" && r.Method == http.MethodGet:
		list, err := d.Store.PlaybookList(ctx)
		if err != nil {
			unavailable(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"playbooks": list})
	case rest != "" && r.Method == http.MethodGet:
		path, err := url.PathUnescape(rest)
		if err != nil {
			path = rest
		}
		version, err := store.ParseVersion(r.URL.Query().Get("version"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			return
		}
		v, err := d.Store.PlaybookGet(ctx, path, version)
		if !found(w, err, store.ErrNotFound, "playbook "+path+" not in the catalog", unavailable) {
			return
		}
		writeJSON(w, http.StatusOK, v)
	default:
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": r.Method + " not allowed on /playbooks" + rest})
	}
}
