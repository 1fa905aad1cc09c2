// Package egress is the runner's enforcement of the network policy
// (shared/egress, the policy itself, which the control plane's http kind
// uses too): the HTTP proxy and the TCP forwarders a task's network
// namespace reaches the outside through (Proxy, Forward: every
// destination is checked by the policy before anything is sent), and the
// per-task and per-execution connection quotas (Conns, TaskConns) that
// bound what one execution may hold of the shared services.
package egress
