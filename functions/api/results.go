package api

// The result tier's read routes (NoETL result storage RFC §4: a logical
// URI resolves from the URI alone, through the deployment's cell map):
//
//	GET /cells          the cell map (cells and placement epochs)
//	GET /results/{urn}  a stored result by its logical URI
//	                    noetl://<tenant>/<project>/results/<execution>/<step>/<frame>/<row>/<attempt>[@version],
//	                    in the path without its scheme (HTTP muxes fold the "//"
//	                    of a path: /results/<tenant>/<project>/results/...) or
//	                    whole as ?urn=: {"urn", "ref", "value"}; ?ref=1 answers
//	                    the reference alone (no object read)
//
// A result is served to whoever may read its execution (owned: the
// creator, an operator or an admin; another's is 404 as a missing one)
// and read on that execution's behalf (results.WithReader), so the
// tier's own ownership check applies as for a unit of work.

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/results"
)

func cells(w http.ResponseWriter, r *http.Request) {
	d, ok := opened(r.Context(), w, deps)
	if !ok {
		return
	}
	m := d.Results.Cells
	if m == nil {
		bucket := ""
		if bn, ok := d.Results.Backend.(results.BucketNamer); ok {
			bucket = bn.Bucket()
		}
		m = results.SingleCell(d.Results.HomeCell(), d.Results.Locator.Region, bucket)
	}
	writeJSON(w, http.StatusOK, m.View())
}

func resultByURN(w http.ResponseWriter, r *http.Request) {
	urn := r.URL.Query().Get("urn")
	if urn == "" {
		raw := strings.TrimPrefix(strings.TrimPrefix(r.URL.EscapedPath(), "/api"), "/results/")
		u, err := url.PathUnescape(raw)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "results: the URN is not path-escaped: " + err.Error()})
			return
		}
		urn = u
		if !strings.HasPrefix(urn, results.URIScheme+":") {
			urn = results.URIScheme + "://" + urn
		}
	}
	c, err := results.ParseLogicalURI(urn)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	d, rec, ok := executionOf(w, r, c.ExecutionID)
	if !ok {
		return
	}
	ctx := results.WithReader(r.Context(), results.Reader{Execution: rec.State.ExecutionID})
	ref, err := d.Results.ResolveURN(ctx, urn)
	if err != nil {
		writeResultError(w, urn, err)
		return
	}
	out := map[string]any{"urn": urn, "ref": ref[results.RefKey]}
	if r.URL.Query().Get("ref") == "" {
		v, err := d.Results.Resolve(ctx, ref)
		if err != nil {
			writeResultError(w, urn, err)
			return
		}
		out["value"] = v
	}
	writeJSON(w, http.StatusOK, out)
}

// writeResultError answers a tier error by its code: NotFound 404 (a
// result no cell holds, or a lost object), InvalidArgument 400 (too large
// for a whole read: ask for ?ref=1 and stream it), PermissionDenied 404
// (as a missing one), anything else 503.
func writeResultError(w http.ResponseWriter, urn string, err error) {
	switch {
	case errs.Is(err, errs.NotFound), errors.Is(err, results.ErrForbidden):
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "result " + urn + " not found"})
	case errs.Is(err, errs.InvalidArgument):
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
	default:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
	}
}
