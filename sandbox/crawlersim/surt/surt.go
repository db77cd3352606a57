// Package surt computes the SURT keys that CDXJ indexes sort on, exactly
// as Python's surt library (surt.surt with its defaults) does for http
// and https URLs. The crawler's WACZ tool (py-wacz through cdxj-indexer)
// keys its index that way, and replay tools binary-search the index with
// the same keys, so a key that differs from Python's by one character
// (a kept "www.", an unsorted query, a trailing slash) is a capture
// that cannot be found.
//
// Not ported: IDNA encoding of non-ASCII host names (browsers send
// punycode, so captured URLs never have them; here their bytes are
// %-escaped), and the schemes other than http and https, whose URLs come
// back unchanged (Python also returns dns:, mailto: and the like as they
// are, but would key ftp: and whois: URLs).
package surt

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Key returns the SURT of rawURL, e.g. "http://www.Example.com/a/?b=2&a=1"
// gives "com,example)/a?a=1&b=2". Canonicalisation follows surt's
// GoogleURLCanonicalizer then IAURLCanonicalizer: no fragment, user info
// or default port; the host lower-cased, without "www<digits>." and
// reversed; the path and query unescaped and minimally re-escaped, dot
// segments and empty segments resolved, lower-cased, without session ids
// or a trailing slash; the query's arguments sorted.
func Key(rawURL string) string {
	if rawURL == "" {
		return "-"
	}
	u, ok := split(rawURL)
	if !ok {
		return rawURL
	}
	host, ok := canonicalHost(u.host)
	if !ok {
		return rawURL
	}
	key := host
	if u.port != "" && u.port != defaultPort[u.scheme] {
		key += ":" + u.port
	}
	key += ")" + canonicalPath(u.path)
	if q := canonicalQuery(u.query); q != "" {
		key += "?" + q
	}
	return key
}

// defaultPort is the port left out of the key per scheme.
var defaultPort = map[string]string{"http": "80", "https": "443"}

// parts are what Python's urlsplit finds in a URL, as surt uses them.
type parts struct{ scheme, host, port, path, query string }

var hasScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+\-.]*:`)

// split takes a URL apart the way surt's handyurl.parse does: trimmed,
// tabs and line breaks removed, "http://" put in front when there is no
// scheme, then urlsplit. It fails for schemes other than http(s) and for
// URLs without a host.
func split(raw string) (parts, bool) {
	raw = strings.Trim(raw, " \t\n\r\v\f")
	raw = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(raw)
	if !hasScheme.MatchString(raw) {
		raw = "http://" + raw
	}
	scheme, rest, _ := strings.Cut(raw, ":")
	var u parts
	u.scheme = strings.ToLower(scheme)
	if (u.scheme != "http" && u.scheme != "https") || !strings.HasPrefix(rest, "//") {
		return u, false
	}
	rest = rest[2:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	netloc := strings.TrimSuffix(rest[:end], ":")
	rest, _, _ = strings.Cut(rest[end:], "#")
	u.path, u.query, _ = strings.Cut(rest, "?")
	if i := strings.LastIndex(netloc, "@"); i >= 0 {
		netloc = netloc[i+1:]
	}
	var port string
	if strings.HasPrefix(netloc, "[") { // an IPv6 address
		host, after, ok := strings.Cut(netloc[1:], "]")
		if !ok || (after != "" && after[0] != ':') {
			return u, false
		}
		u.host, port = host, strings.TrimPrefix(after, ":")
	} else {
		u.host, port, _ = strings.Cut(netloc, ":")
	}
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return u, false // Python raises on a port that is not a number
		}
		u.port = strconv.FormatUint(n, 10)
	}
	u.host = strings.ToLower(u.host)
	return u, u.host != ""
}

var wwwPrefix = regexp.MustCompile(`^www\d*\.`)

// canonicalHost unescapes the host, drops doubled and outer dots, writes
// a host that is one decimal number as the IPv4 address it stands for,
// lower-cases and escapes it, drops a "www<digits>." prefix, and reverses
// its labels: "www.a.example.com" gives "com,example,a", "3279880203"
// gives "11,0,127,195". (Python also rewrites dotted quads with leading
// zeros, as octal; not ported.)
func canonicalHost(host string) (string, bool) {
	host = strings.Trim(strings.ReplaceAll(unescapeRepeatedly(host), "..", "."), ".")
	if host != "" && strings.Trim(host, "0123456789") == "" {
		host = dottedQuad(host)
	} else {
		host = escapeOnce(strings.ToLower(host))
	}
	host = wwwPrefix.ReplaceAllString(host, "")
	if host == "" {
		return "", false
	}
	labels := strings.Split(host, ".")
	slices.Reverse(labels)
	return strings.Join(labels, ","), true
}

// dottedQuad writes a decimal number, masked to 32 bits as surt does, as
// an IPv4 address.
func dottedQuad(digits string) string {
	var n uint32
	for _, d := range []byte(digits) {
		n = n*10 + uint32(d-'0') // wraps modulo 2^32, which is the mask
	}
	return fmt.Sprintf("%d.%d.%d.%d", n>>24, n>>16&255, n>>8&255, n&255)
}

// canonicalPath resolves, escapes and lower-cases the path, strips ASP.NET
// session ids, and drops a trailing slash unless the path is "/".
func canonicalPath(path string) string {
	path = strings.ToLower(escapeOnce(normalizePath(unescapeRepeatedly(path))))
	for _, rx := range pathSessionIDs {
		if m := rx.FindStringSubmatch(path); m != nil {
			path = m[1] + m[3]
		}
	}
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	return path
}

var pathSessionIDs = []*regexp.Regexp{
	regexp.MustCompile(`(?i)^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^\?]+\.aspx.*)$`),
	regexp.MustCompile(`(?i)^(.*/)(\([0-9a-z]{24}\)/)([^\?]+\.aspx.*)$`),
}

// normalizePath resolves "." and ".." segments and drops empty ones, but
// keeps a trailing slash: "/a//b/../c/" gives "/a/c/". A ".." above the
// root stays.
func normalizePath(path string) string {
	if path == "" {
		return "/"
	}
	var kept []string
	for _, seg := range strings.Split(path, "/")[1:] {
		switch {
		case seg == ".":
		case seg == ".." && len(kept) > 0:
			kept = kept[:len(kept)-1]
		default:
			kept = append(kept, seg)
		}
	}
	out := "/"
	for i, seg := range kept {
		if i == len(kept)-1 {
			out += seg
		} else if seg != "" {
			out += seg + "/"
		}
	}
	return out
}

var querySessionIDs = []*regexp.Regexp{
	regexp.MustCompile(`(?i)^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
	regexp.MustCompile(`(?i)^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
	regexp.MustCompile(`(?i)^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
	regexp.MustCompile(`(?i)^(.*)(?:aspsessionid[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$`),
	regexp.MustCompile(`(?i)^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$`),
}

// canonicalQuery minimally escapes the query, strips session ids,
// lower-cases it and sorts its arguments (by name, then value; an
// argument without "=" before one with it).
func canonicalQuery(query string) string {
	if query == "" {
		return ""
	}
	query = escapeOnce(unescapeRepeatedly(query))
	for _, rx := range querySessionIDs {
		if m := rx.FindStringSubmatch(query); m != nil {
			query = m[1] + m[2]
		}
	}
	args := strings.Split(strings.ToLower(query), "&")
	slices.SortFunc(args, func(a, b string) int {
		an, av, aHas := strings.Cut(a, "=")
		bn, bv, bHas := strings.Cut(b, "=")
		switch {
		case an != bn:
			return strings.Compare(an, bn)
		case aHas != bHas: // Python compares the tuples (n,) < (n, v)
			if aHas {
				return 1
			}
			return -1
		}
		return strings.Compare(av, bv)
	})
	return strings.Join(args, "&")
}

// unescapeRepeatedly decodes %XX escapes until none is left; a "%" that
// starts no valid escape stays.
func unescapeRepeatedly(s string) string {
	for {
		un := unescape(s)
		if un == s {
			return s
		}
		s = un
	}
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// escapeOnce escapes what is not printable ASCII, and space, "#" and "%"
// (Python's quote with every other printable character safe).
func escapeOnce(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == '#' || c == '%' || c >= 0x7f {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
