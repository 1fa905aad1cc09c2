//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	enforce "github.com/noetl/gcpengine/runner/egress"
	"github.com/noetl/gcpengine/shared/egress"
)

// taskNet is the network namespace of one isolated command: only a
// loopback interface, on which the runner listens for the command —
// a forwarder per single destination the policy allows (the same address
// and port inside as outside: `psycopg.connect(host="127.0.0.1",
// port=5432)` reaches the allowed PostgreSQL), and an HTTP(S) proxy that
// admits what the policy admits (HTTP_PROXY, HTTPS_PROXY). Nothing else
// leaves the namespace: a direct connection to any other address finds
// no route, so no packet reaches it.
type taskNet struct {
	fd        *os.File
	listeners []net.Listener
	proxy     *http.Server
	proxyAddr string
	hosts     string // /etc/hosts of the command
}

// Close stops the forwarders and the proxy and releases the namespace
// (the kernel frees it when the command's processes are gone).
func (n *taskNet) Close() {
	if n == nil {
		return
	}
	for _, l := range n.listeners {
		_ = l.Close()
	}
	if n.proxy != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = n.proxy.Shutdown(ctx)
		cancel()
	}
	if n.fd != nil {
		_ = n.fd.Close()
	}
}

// ProxyEnv returns the proxy variables of the command's environment.
func (n *taskNet) ProxyEnv() []string {
	u := "http://" + n.proxyAddr
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u, "NO_PROXY=", "no_proxy="}
}

// forward is one forwarder: listen on addr inside, connect to target.
type forward struct {
	listen netip.AddrPort
	target string
	name   string // the allowed host name, for /etc/hosts ("" for an address)
}

// forwards lists the forwarders of p: every Allow rule naming a single
// IPv4 address or a host name with a port (a name is resolved now; each
// of its IPv4 addresses gets a forwarder and an /etc/hosts line). IPv6
// and CIDR rules are reached through the proxy only.
func forwards(ctx context.Context, p *egress.Policy) []forward {
	var out []forward
	for _, r := range p.Allow {
		if r.Port == 0 {
			continue
		}
		if r.Host == "" {
			if r.Prefix.IsSingleIP() && r.Prefix.Addr().Unmap().Is4() {
				a := r.Prefix.Addr().Unmap()
				out = append(out, forward{listen: netip.AddrPortFrom(a, r.Port), target: netip.AddrPortFrom(a, r.Port).String()})
			}
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip4", r.Host)
		cancel()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			out = append(out, forward{listen: netip.AddrPortFrom(a.Unmap(), r.Port), target: net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port))), name: r.Host})
		}
	}
	return out
}

// netRequest asks the namespace factory for a namespace with forwarders.
type netRequest struct {
	fw    []forward
	reply chan netResult
}

type netResult struct {
	n   *taskNet
	err error
}

var (
	factoryOnce sync.Once
	factory     chan netRequest
)

// netFactory serves every namespace creation from one goroutine locked to
// its OS thread for the life of the process: unshare(CLONE_NEWNET) moves
// that thread into each new namespace, so the thread must never serve
// other goroutines again — and must never exit either, because a process
// forked from a thread that exits gets its parent-death signal (the
// sandbox's commands are started with PDEATHSIG: a thread that died under
// them would kill them).
func netFactory() chan netRequest {
	factoryOnce.Do(func() {
		factory = make(chan netRequest)
		go func() {
			runtime.LockOSThread() // never unlocked, never exits
			for r := range factory {
				n, err := setupNet(r.fw)
				r.reply <- netResult{n, err}
			}
		}()
	})
	return factory
}

// newTaskNet creates a network namespace (on the factory's thread),
// brings up its loopback, adds the forwarders' addresses, creates their
// listeners and the proxy's, and keeps a descriptor of the namespace for
// the helper to join (setns). The forwarders and the proxy count the
// command's connections against q (its task's quota; nil: none). The runner needs CAP_SYS_ADMIN over its
// user namespace (it is that namespace's root).
func newTaskNet(p *egress.Policy, log *slog.Logger, q *enforce.TaskConns) (*taskNet, error) {
	fw := forwards(context.Background(), p)
	reply := make(chan netResult, 1)
	netFactory() <- netRequest{fw: fw, reply: reply}
	r := <-reply
	if r.err != nil {
		return nil, r.err
	}
	n := r.n
	for i, f := range fw {
		go enforce.Forward(n.listeners[i], f.target, p, log, q)
	}
	n.proxy = &http.Server{Handler: &enforce.Proxy{Policy: p, Log: log, Conns: q}, ReadHeaderTimeout: 30 * time.Second}
	go func(l net.Listener) { _ = n.proxy.Serve(l) }(n.listeners[len(n.listeners)-1])
	return n, nil
}

// setupNet runs on the factory's thread: unshare, loopback up, addresses,
// listeners, namespace descriptor.
func setupNet(fw []forward) (n *taskNet, err error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("sandbox: network namespace: %w", err)
	}
	n = &taskNet{}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	sock, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: network namespace socket: %w", err)
	}
	defer unix.Close(sock)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlIfreq(sock, unix.SIOCGIFFLAGS, ifr); err != nil {
		return nil, fmt.Errorf("sandbox: loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(sock, unix.SIOCSIFFLAGS, ifr); err != nil {
		return nil, fmt.Errorf("sandbox: loopback up: %w", err)
	}
	alias := 0
	added := map[netip.Addr]bool{}
	var hosts strings.Builder
	hosts.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for _, f := range fw {
		a := f.listen.Addr()
		if !a.IsLoopback() && !added[a] {
			// An IPv4 alias of lo (lo:N): the address exists only here.
			alias++
			ar, err := unix.NewIfreq("lo:" + strconv.Itoa(alias))
			if err != nil {
				return nil, err
			}
			if err := ar.SetInet4Addr(a.AsSlice()); err != nil {
				return nil, err
			}
			if err := unix.IoctlIfreq(sock, unix.SIOCSIFADDR, ar); err != nil {
				return nil, fmt.Errorf("sandbox: address %s on loopback: %w", a, err)
			}
			added[a] = true
		}
		if f.name != "" {
			fmt.Fprintf(&hosts, "%s\t%s\n", a, f.name)
		}
		l, err := net.Listen("tcp4", f.listen.String())
		if err != nil {
			return nil, fmt.Errorf("sandbox: forwarder %s: %w", f.listen, err)
		}
		n.listeners = append(n.listeners, l)
	}
	pl, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sandbox: proxy listener: %w", err)
	}
	n.listeners = append(n.listeners, pl)
	n.proxyAddr = pl.Addr().String()
	n.hosts = hosts.String()
	fd, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("sandbox: network namespace descriptor: %w", err)
	}
	n.fd = fd
	return n, nil
}

// joinNet is the helper's side: enter the namespace of fd (its thread is
// locked: execve follows on the same thread).
func joinNet(fd int) error {
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("join the task's network namespace: %w", err)
	}
	return unix.Close(fd)
}
