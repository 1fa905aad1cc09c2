// Package server is the runner's side of the runner protocol
// (shared/runnerproto): Handler serves POST /v1/run, one task attempt per
// request, after TokenVerifier has checked the caller's ID token
// (execute's service account, the runner's URL as audience). Each attempt
// runs the kind's tool from the runner's registry (runner/kinds) with
// GrantedStore, a credential store of exactly the request's credentials,
// and WithResultGrants, a results tier of exactly the objects the control
// plane granted. It links nothing of the control plane (the boundary
// test, shared/planes).
package server
