package server

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Trusted reverse proxies (api.trusted_proxies). Behind a proxy every
// request comes from the proxy's address, so the sign-in throttle, the
// audit trail and the logs would see one client. When a request comes
// from a trusted proxy, its client is read from X-Forwarded-For: walking
// the list from the right (the hop nearest to us), the first address that
// is not itself a trusted proxy. From any other peer the header is
// ignored — a client cannot name itself someone else.

// parseTrustedProxies reads api.trusted_proxies: addresses or CIDR
// prefixes. An IPv4 address or prefix may be written IPv4-mapped
// (::ffff:10.0.0.0/104), as clients are compared unmapped; an address
// with a zone (fe80::1%eth0) is refused, as peers are compared without
// theirs.
func parseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or a CIDR prefix", s)
		}
		if a.Zone() != "" {
			// Trusting one interface's fe80::1 only cannot be said: peers
			// are compared without their zone. Refused rather than
			// widened to every interface behind the operator's back.
			return nil, fmt.Errorf("%q names a zone: write the address without it (it is then trusted on every interface)", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

func trusted(a netip.Addr, nets []netip.Prefix) bool {
	a = a.Unmap().WithZone("") // a prefix never contains a zoned address
	for _, p := range nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr is r's client: its peer, or for a trusted proxy the address
// X-Forwarded-For names (above).
func clientAddr(r *http.Request, nets []netip.Prefix) (netip.Addr, bool) {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !trusted(peer.Addr(), nets) {
		return netip.Addr{}, false
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client, found := peer.Addr(), false
	for i := len(hops) - 1; i >= 0; i-- {
		h := strings.TrimSpace(hops[i])
		a, err := netip.ParseAddr(h)
		if err != nil {
			ap, perr := netip.ParseAddrPort(h)
			if perr != nil {
				break // not an address: trust nothing further left
			}
			a = ap.Addr()
		}
		client, found = a.Unmap(), true
		if !trusted(a, nets) {
			break
		}
	}
	return client, found
}

// withTrustedProxies makes r.RemoteAddr the client's for requests from a
// trusted proxy (nets empty: h as it is).
func withTrustedProxies(h http.Handler, nets []netip.Prefix) http.Handler {
	if len(nets) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, ok := clientAddr(r, nets); ok {
			r.RemoteAddr = netip.AddrPortFrom(a, 0).String()
		}
		h.ServeHTTP(w, r)
	})
}
