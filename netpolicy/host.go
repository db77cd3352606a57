package netpolicy

import (
	"net/netip"
	"strconv"
	"strings"
)

var loopback = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// HostAddr returns the address a URL host names without DNS, as a browser
// reads it, and false for a host name that needs resolving. Besides
// dotted and IPv6 literals (brackets optional) it reads the IPv4 forms
// the WHATWG URL standard keeps from inet_aton, which Chromium-based
// crawlers follow: http://127.1/, http://0x7f.0.0.1/, http://2130706433/.
// "localhost" and names under it are loopback, as Chromium resolves them
// itself.
func HostAddr(host string) (netip.Addr, bool) {
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.WithZone(""), true
	}
	name := strings.TrimSuffix(host, ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return loopback, true
	}
	return parseIPv4(host)
}

// parseIPv4 is the WHATWG IPv4 parser: one to four dot-separated numbers,
// each decimal, octal (leading 0) or hexadecimal (0x), the last filling
// the bytes the others leave.
func parseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseIPv4Number(p string) (uint64, bool) {
	base := 10
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
	case len(p) >= 2 && p[0] == '0':
		p, base = p[1:], 8
	}
	if p == "" {
		// "0x" alone is zero in the standard.
		return 0, base == 16
	}
	n, err := strconv.ParseUint(p, base, 64)
	return n, err == nil
}
