// Package egress is the network policy of user code (README "Security"):
// one Policy decides, for every connection a task makes — the http kind
// in the control plane, every kind of the runner (postgres, nats, gcs,
// transfer, subscription, script sources) and python and shell through
// the proxy and forwarders of their network namespace (runner/sandbox) —
// whether its destination may be reached.
//
// Refused unless an operator allows the destination (Allow):
//
//   - the cloud metadata server by name (metadata.google.internal,
//     metadata.goog, metadata) and by address (169.254.169.254,
//     fd20:ce::254, fd00:ec2::254);
//   - loopback (127.0.0.0/8, ::1), link-local (169.254.0.0/16,
//     fe80::/10), unspecified (0.0.0.0/8, ::), multicast and broadcast,
//     reserved (240.0.0.0/4) and site-local/tunnel IPv6 ranges;
//   - the IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d),
//     IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96; the local-use
//     64:ff9b:1::/48 as a whole), 6to4 (2002::/16) or Teredo (2001::/32,
//     refused as a whole) address is checked as that IPv4 address;
//   - in the cloud profile, private ranges (10.0.0.0/8, 172.16.0.0/12,
//     192.168.0.0/16, 100.64.0.0/10, 198.18.0.0/15, fc00::/7).
//
// Deny rules (the engine's own endpoints) are refused whatever Allow
// says. Names are checked before they are resolved, every resolved
// address is checked, and the connection goes to a checked address (so a
// name cannot resolve to a refused address after the check); an
// http.Client built on Dialer re-checks every redirect's connection. A
// refusal is decided before any packet is sent to the destination.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
)

// ErrForbidden is wrapped by every refusal (RefusedError). Code
// PermissionDenied: the policy refuses the destination again on a retry.
var ErrForbidden = errs.Sentinel(errs.PermissionDenied, "egress: destination refused by the network policy")

// RefusedError is a refused destination and why.
type RefusedError struct {
	// Dest is the destination as asked for (host:port) and, after a
	// name was resolved, the address it resolved to.
	Dest string
	// Reason is the address class or rule that refused it.
	Reason string
	// Allow is the rule that would admit the destination (host:port as
	// asked), "" when none can: a Deny rule, or not a network
	// destination.
	Allow string
	// Profile is the policy's profile: it picks how the error tells to
	// allow the destination (the local stack's scripts/up --allow, or the
	// deployment's setting).
	Profile Profile
	// Denied says a Deny rule refused it: no setting admits it.
	Denied bool
}

// Error implements error: the destination, why it is refused and how to
// allow it — on the local stack (the local profile) `scripts/up --allow
// HOST:PORT`, in a deployment the NOETL_EGRESS_ALLOW setting (Terraform
// runner.egress_allow) — or that nothing can (the engine's own endpoints).
func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("egress: %s is refused by the network policy (%s)", e.Dest, e.Reason)
	switch {
	case e.Denied:
		return msg + "; it cannot be allowed"
	case e.Allow == "":
		return msg
	case e.Profile == Local:
		return msg + "; to allow it on the local stack: scripts/up --allow " + e.Allow + " (or NOETL_EGRESS_ALLOW=" + e.Allow + ")"
	}
	return msg + "; an operator can allow it with the setting NOETL_EGRESS_ALLOW=" + e.Allow + " (Terraform: runner.egress_allow)"
}

// Unwrap returns ErrForbidden.
func (e *RefusedError) Unwrap() error { return ErrForbidden }

// Profile selects the treatment of private ranges.
type Profile string

// Profiles.
const (
	// Cloud refuses private ranges unless allowed (the default).
	Cloud Profile = "cloud"
	// Local allows private ranges (a developer machine's LAN).
	Local Profile = "local"
)

// Rule is one Allow or Deny entry: a host name, or an address prefix,
// with an optional port (0: every port).
type Rule struct {
	// Host is a lower-case host name without trailing dot ("" for an
	// address rule).
	Host string
	// Prefix is the address prefix of an address rule (a single address
	// is a /32 or /128).
	Prefix netip.Prefix
	// Port restricts the rule to one port (0: any).
	Port uint16
}

// String renders the rule as ParseRule reads it.
func (r Rule) String() string {
	h := r.Host
	if h == "" {
		h = r.Prefix.String()
		if r.Prefix.IsSingleIP() {
			h = r.Prefix.Addr().String()
		}
		if r.Port != 0 && r.Prefix.Addr().Is6() {
			h = "[" + h + "]"
		}
	}
	if r.Port != 0 {
		return h + ":" + strconv.Itoa(int(r.Port))
	}
	return h
}

// ParseRule reads `host`, `host:port`, an address, a CIDR prefix, either
// with `:port` (IPv6 in brackets: `[::1]:5432`, `[fc00::/7]:443`).
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Rule{}, errors.New("egress: empty rule")
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return Rule{}, fmt.Errorf("egress: rule %q: missing ]", s)
		}
		host = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return Rule{}, fmt.Errorf("egress: rule %q: junk after ]", s)
			}
			port = rest[1:]
		}
	} else if strings.Count(s, ":") == 1 {
		host, port, _ = strings.Cut(s, ":")
	}
	var r Rule
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return Rule{}, fmt.Errorf("egress: rule %q: port %q is not 1-65535", s, port)
		}
		r.Port = uint16(n)
	}
	if p, err := netip.ParsePrefix(host); err == nil {
		r.Prefix = p.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		r.Prefix = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		return r, nil
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "" || strings.ContainsAny(h, "/ ") {
		return Rule{}, fmt.Errorf("egress: rule %q is neither a host, an address nor a CIDR prefix", s)
	}
	r.Host = h
	return r, nil
}

func (r Rule) matchesAddr(a netip.Addr, port int) bool {
	return r.Host == "" && r.Prefix.Contains(a.Unmap()) && (r.Port == 0 || int(r.Port) == port)
}

func (r Rule) matchesHost(h string, port int) bool {
	return r.Host != "" && r.Host == h && (r.Port == 0 || int(r.Port) == port)
}

// denies reports whether r, a Deny rule, refuses a:port. A rule on a
// loopback address refuses its port on every loopback and unspecified
// address too (IPv4-mapped forms included): on one host 127.0.0.2, ::1
// and 0.0.0.0 reach the listeners of 127.0.0.1, so allowing any of them
// must not open the engine's own endpoints.
func (r Rule) denies(a netip.Addr, port int) bool {
	ua := a.Unmap()
	if r.matchesAddr(ua, port) {
		return true
	}
	if r.Host != "" || (r.Port != 0 && int(r.Port) != port) {
		return false
	}
	ra := r.Prefix.Addr().Unmap()
	return ra.IsLoopback() && (ua.IsLoopback() || ua.IsUnspecified())
}

// deniedAddr is the refusal of a:port by a Deny rule (nil when none
// refuses it); dest names the destination in the error.
func (p *Policy) deniedAddr(a netip.Addr, port int, dest string) error {
	for _, r := range p.Deny {
		if r.denies(a, port) {
			return &RefusedError{Dest: dest, Reason: "one of the engine's own endpoints (NOETL_EGRESS_DENY " + r.String() + ")", Profile: p.Profile, Denied: true}
		}
	}
	return nil
}

// Policy decides which destinations user code may reach. The zero value
// is the cloud profile with no rules. Safe for concurrent use once built.
type Policy struct {
	Profile Profile
	Allow   []Rule
	Deny    []Rule
	// Lookup resolves names (nil: net.DefaultResolver.LookupNetIP).
	Lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)
	// Timeout bounds one connection attempt (0: 30 s).
	Timeout time.Duration
}

// New builds a policy from the configuration's texts (NOETL_EGRESS_*).
func New(profile string, allow, deny []string) (*Policy, error) {
	p := &Policy{Profile: Profile(strings.ToLower(strings.TrimSpace(profile)))}
	switch p.Profile {
	case "":
		p.Profile = Cloud
	case Cloud, Local:
	default:
		return nil, fmt.Errorf("egress: profile %q is not cloud or local", profile)
	}
	for _, s := range allow {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		p.Allow = append(p.Allow, r)
	}
	for _, s := range deny {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		p.Deny = append(p.Deny, r)
	}
	return p, nil
}

// metadataNames are the names of cloud metadata servers (GCP's and the
// bare name its resolver answers).
var metadataNames = map[string]bool{"metadata.google.internal": true, "metadata.goog": true, "metadata": true}

var (
	metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd20:ce::254"), netip.MustParseAddr("fd00:ec2::254")}
	prefixes      = func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	privateV4   = prefixes("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "198.18.0.0/15")
	privateV6   = prefixes("fc00::/7")
	reservedV4  = prefixes("0.0.0.0/8", "240.0.0.0/4", "192.0.0.0/24")
	reservedV6  = prefixes("fec0::/10", "2001:db8::/32", "100::/64", "64:ff9b:1::/48", "2001::/32")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	v4compatLow = netip.MustParsePrefix("::/96")
)

// Class returns why an address is refused by default ("" when it is an
// ordinary public address): "metadata server", "loopback", "link-local",
// "unspecified", "multicast", "reserved", "private", naming the embedded
// IPv4 address of an IPv6 form ("NAT64 of loopback 127.0.0.1"). Private
// is reported whatever the profile; the Policy applies the profile.
func Class(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid address"
	}
	a = a.WithZone("")
	for _, m := range metadataAddrs {
		if a == m {
			return "the metadata server"
		}
	}
	if a.Is4In6() {
		if c := Class(a.Unmap()); c != "" {
			return "IPv4-mapped " + c
		}
		return ""
	}
	if a.Is6() {
		b := a.As16()
		var embedded netip.Addr
		how := ""
		switch {
		case nat64.Contains(a):
			embedded, how = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "NAT64"
		case sixToFour.Contains(a):
			embedded, how = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4"
		case v4compatLow.Contains(a) && !a.IsLoopback() && !a.IsUnspecified():
			embedded, how = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "IPv4-compatible"
		}
		if embedded.IsValid() {
			if c := Class(embedded); c != "" {
				return fmt.Sprintf("%s form of %s %s", how, c, embedded)
			}
			return ""
		}
	}
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsMulticast() || a == netip.MustParseAddr("255.255.255.255"):
		return "multicast"
	}
	res, priv := reservedV6, privateV6
	if a.Is4() {
		res, priv = reservedV4, privateV4
	}
	for _, p := range res {
		if p.Contains(a) {
			return "reserved"
		}
	}
	for _, p := range priv {
		if p.Contains(a) {
			return "private"
		}
	}
	return ""
}

// CheckAddr decides a connection to address a, port port: nil, or a
// *RefusedError.
func (p *Policy) CheckAddr(a netip.Addr, port int) error {
	a = a.WithZone("")
	dest := net.JoinHostPort(a.String(), strconv.Itoa(port))
	if err := p.deniedAddr(a, port, dest); err != nil {
		return err
	}
	for _, r := range p.Allow {
		if r.matchesAddr(a, port) {
			return nil
		}
	}
	c := Class(a)
	if c == "" || (c == "private" && p.Profile == Local) {
		return nil
	}
	if c == "private" {
		c = "private range, refused in the cloud profile"
	}
	return &RefusedError{Dest: dest, Reason: c, Allow: dest, Profile: p.Profile}
}

// CheckHost decides a destination named host (a name or an address
// literal, as in a URL) before anything is resolved: nil when it may be
// resolved and its addresses checked, nil with allowed true when a host
// rule of Allow admits the name itself (its addresses are not checked
// then), or a *RefusedError (a metadata server name, a denied name, a
// refused literal).
func (p *Policy) CheckHost(host string, port int) (allowed bool, err error) {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if a, perr := netip.ParseAddr(h); perr == nil {
		return false, p.CheckAddr(a, port)
	}
	dest := net.JoinHostPort(h, strconv.Itoa(port))
	for _, r := range p.Deny {
		if r.matchesHost(h, port) {
			return false, &RefusedError{Dest: dest, Reason: "one of the engine's own endpoints (NOETL_EGRESS_DENY " + r.String() + ")", Profile: p.Profile, Denied: true}
		}
	}
	for _, r := range p.Allow {
		if r.matchesHost(h, port) {
			return true, nil
		}
	}
	if metadataNames[h] || strings.HasSuffix(h, ".metadata.google.internal") {
		return false, &RefusedError{Dest: dest, Reason: "the metadata server", Allow: dest, Profile: p.Profile}
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return false, &RefusedError{Dest: dest, Reason: "loopback", Allow: dest, Profile: p.Profile}
	}
	return false, nil
}

func (p *Policy) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if p.Lookup != nil {
		return p.Lookup(ctx, "ip", host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// Resolve checks host:port and returns the addresses a connection may
// go to: the literal, or every address of the name that the policy
// admits (for a name Allow admits, every address no Deny rule refuses).
// A name whose every address is refused is the first refusal; a name
// that does not resolve is the resolver's error.
func (p *Policy) Resolve(ctx context.Context, host string, port int) ([]netip.Addr, error) {
	allowed, err := p.CheckHost(host, port)
	if err != nil {
		return nil, err
	}
	h := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(host), "["), "]")
	if a, perr := netip.ParseAddr(h); perr == nil {
		return []netip.Addr{a.WithZone("")}, nil
	}
	addrs, err := p.lookup(ctx, h)
	if err != nil {
		return nil, err
	}
	var ok []netip.Addr
	var first error
	for _, a := range addrs {
		check := p.CheckAddr
		if allowed {
			// An allowed name still never reaches a denied address.
			check = func(a netip.Addr, port int) error { return p.deniedAddr(a.WithZone(""), port, "") }
		}
		if err := check(a, port); err != nil {
			if first == nil {
				var re *RefusedError
				if errors.As(err, &re) {
					re.Dest = net.JoinHostPort(h, strconv.Itoa(port)) + " (" + a.String() + ")"
					if re.Allow != "" {
						re.Allow = net.JoinHostPort(h, strconv.Itoa(port))
					}
				}
				first = err
			}
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		if first == nil {
			first = fmt.Errorf("egress: %s has no address", h)
		}
		return nil, first
	}
	return ok, nil
}

// DialContext connects to addr (host:port) over network ("tcp", "tcp4",
// "tcp6"; "udp*" too; any other network, a unix socket, is refused) after
// the policy admitted it: the connection goes
// to one of the checked addresses, never to a fresh resolution.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if !strings.HasPrefix(network, "tcp") && !strings.HasPrefix(network, "udp") {
		// Unix sockets are files of the runner's host: never user code's.
		return nil, &RefusedError{Dest: network + ":" + addr, Reason: "not a network destination (" + network + " socket)"}
	}
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("egress: %q: %w", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		pn, lerr := net.DefaultResolver.LookupPort(ctx, network, ps)
		if lerr != nil {
			return nil, fmt.Errorf("egress: %q: port: %w", addr, lerr)
		}
		port = pn
	}
	addrs, err := p.Resolve(ctx, host, port)
	if err != nil {
		return nil, err
	}
	to := p.Timeout
	if to <= 0 {
		to = 30 * time.Second
	}
	d := &net.Dialer{Timeout: to, KeepAlive: 30 * time.Second}
	var last error
	for _, a := range addrs {
		if (strings.HasSuffix(network, "4") && !a.Unmap().Is4()) || (strings.HasSuffix(network, "6") && a.Unmap().Is4()) {
			continue
		}
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	if last == nil {
		last = fmt.Errorf("egress: %s has no %s address", host, network)
	}
	return nil, last
}

// Dial is DialContext without a context (for libraries that take a
// func(network, addr)).
func (p *Policy) Dial(network, addr string) (net.Conn, error) {
	return p.DialContext(context.Background(), network, addr)
}

// IsRefused reports whether err is (or wraps) a refusal of the policy.
func IsRefused(err error) bool { return errors.Is(err, ErrForbidden) }
