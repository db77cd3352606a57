package crawlersim

import (
	"hash/fnv"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The synthetic web. Every seed owns a site of site.pages pages under its
// prefix (the seed URL up to its last "/"): page 0 is the seed itself and
// page k>0 is <prefix>sim/<k>. Page k links to its children k*L+1 … k*L+L
// (L = site.links, only those < pages), back to the seed (a duplicate the
// queue must drop), and to sim.outlinks pages outside the prefix. The
// outside links cycle through three kinds so every scope type has something
// to include or leave out:
//
//	same host, outside the prefix  <origin>/sim-up/<k>/<j>  (not for seeds at "/")
//	subdomain of the seed's host   <scheme>://sim-sub.<host>/<k>/<j>
//	another site                   https://sim-ext.invalid/<k>/<j>
//
// Pages outside the site are leaves. Everything, including which pages fail,
// which answer with an HTTP error, which log a non-fatal line and how long
// each takes, is a pure function of the URL and the seed's knobs: the same
// seed always gives the same web.

// simPage is what "loading" a URL yields.
type simPage struct {
	links    []string
	duration time.Duration // unscaled
	fails    bool
	hangs    bool
	bytes    int64
	status   int // the HTTP error status the page answers with, 0 for 200 OK
	noise    int // the index in noiseLines of the line the page logs, -1 for none
}

// load returns the synthetic page at u, found through this seed.
func (s *scopedSeed) load(u string, k *knobs) simPage {
	p := simPage{
		duration: time.Duration(s.site.pageMs * (1 + k.pageJitter*(2*urlFraction("jitter", u)-1)) * float64(time.Millisecond)),
		fails:    urlFraction("fail", u) < s.site.fail || (k.failURL != nil && k.failURL.MatchString(u)),
		hangs:    k.hangURL != nil && k.hangURL.MatchString(u),
		bytes:    s.site.bytes,
		noise:    -1,
	}
	switch {
	case s.site.statusURL != nil && s.site.statusURL.MatchString(u):
		p.status = s.site.urlStatus
	case urlFraction("http-error", u) < s.site.httpError:
		p.status = s.site.httpStatus
	}
	if urlFraction("noise", u) < s.site.noise {
		p.noise = int(urlFraction("noise-line", u) * float64(len(noiseLines)))
	}
	idx := s.pageIndex(u)
	if idx < 0 {
		return p
	}
	prefix := s.prefix()
	L := s.site.links
	for c := idx*L + 1; c <= idx*L+L && c < s.site.pages; c++ {
		p.links = append(p.links, prefix+"sim/"+strconv.Itoa(c))
	}
	if idx > 0 {
		p.links = append(p.links, s.url)
	}
	seed, err := url.Parse(s.url)
	if err != nil {
		return p
	}
	for j := range k.outlinks {
		tail := "/" + strconv.Itoa(idx) + "/" + strconv.Itoa(j)
		switch (idx + j) % 3 {
		case 0:
			if strings.Count(prefix, "/") > 3 { // the prefix is below the host root
				p.links = append(p.links, seed.Scheme+"://"+seed.Host+"/sim-up"+tail)
			}
		case 1:
			p.links = append(p.links, seed.Scheme+"://sim-sub."+seed.Host+tail)
		case 2:
			p.links = append(p.links, "https://sim-ext.invalid"+tail)
		}
	}
	return p
}

// prefix is the seed URL up to and including its last "/", the same cut
// the prefix scope uses.
func (s *scopedSeed) prefix() string { return s.url[:strings.LastIndex(s.url, "/")+1] }

// pageIndex returns k for a page of this seed's site, or -1 for any other
// URL.
func (s *scopedSeed) pageIndex(u string) int {
	if u == s.url {
		return 0
	}
	rest, ok := strings.CutPrefix(u, s.prefix()+"sim/")
	if !ok {
		return -1
	}
	k, err := strconv.Atoi(rest)
	if err != nil || k < 1 || k >= s.site.pages || strconv.Itoa(k) != rest {
		return -1
	}
	return k
}

// urlFraction maps a URL to a stable number in [0, 1), independently per
// purpose.
func urlFraction(purpose, u string) float64 {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	h.Write([]byte(u))
	// FNV alone spreads URLs that differ in their last characters badly
	// over the high bits; a murmur3 finaliser mixes them.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return float64(x>>11) / float64(1<<53)
}
