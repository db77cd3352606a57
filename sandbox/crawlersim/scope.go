package crawlersim

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/trawlerhq/trawler/jsregex"
)

// noDepthLimit stands for depth -1 ("unlimited"), as a large number so
// comparisons stay simple.
const noDepthLimit = 99999

// seedSpec is one seed as configured: a plain URL or an object from the
// config file, with the global scope options filled in.
type seedSpec struct {
	url       string
	scopeType string
	include   []string
	exclude   []string
	depth     int
	extraHops int
	allowHash bool
}

// scopedSeed is a seed with its scope rules compiled, plus the synthetic
// site that hangs off it.
type scopedSeed struct {
	url          string
	scopeType    string
	include      []*jsregex.Regexp
	exclude      []*jsregex.Regexp
	maxDepth     int
	maxExtraHops int
	allowHash    bool
	site         siteKnobs
}

// newScopedSeed normalises the seed URL and derives the include rules of
// its scope type, placed before the user's own include rules.
func newScopedSeed(spec seedSpec) (*scopedSeed, error) {
	u, err := normalizeURL(spec.url, spec.allowHash)
	if err != nil {
		return nil, err
	}
	s := &scopedSeed{url: u, scopeType: spec.scopeType, maxExtraHops: spec.extraHops, allowHash: spec.allowHash}
	s.maxDepth = spec.depth
	if s.maxDepth < 0 {
		s.maxDepth = noDepthLimit
	}
	user, err := compileAll(spec.include)
	if err != nil {
		return nil, err
	}
	if s.exclude, err = compileAll(spec.exclude); err != nil {
		return nil, err
	}
	if s.scopeType == "" {
		s.scopeType = "prefix"
		if len(user) > 0 {
			s.scopeType = "custom"
		}
	}
	typed, err := scopeRules(s.scopeType, u)
	if err != nil {
		return nil, err
	}
	s.include = append(typed, user...)
	return s, nil
}

// scopeRules returns the include regexes a scope type implies for a seed.
func scopeRules(scopeType, seed string) ([]*jsregex.Regexp, error) {
	u, err := url.Parse(seed)
	if err != nil {
		return nil, fmt.Errorf("invalid seed %q: %w", seed, err)
	}
	origin := u.Scheme + "://"
	var rx string
	switch scopeType {
	case "page", "custom":
		return nil, nil
	case "page-spa":
		noHash, _, _ := strings.Cut(seed, "#")
		rx = "^" + regexp.QuoteMeta(noHash) + "#.+"
	case "prefix":
		rx = "^" + regexp.QuoteMeta(seed[:strings.LastIndex(seed, "/")+1])
	case "host":
		rx = "^" + regexp.QuoteMeta(origin+u.Host+"/")
	case "domain":
		host := strings.TrimPrefix(u.Host, "www.")
		rx = "^" + regexp.QuoteMeta(origin) + `([^/]+\.)*` + regexp.QuoteMeta(host+"/")
	case "any":
		rx = ".*"
	default:
		return nil, fmt.Errorf("invalid scope type %q", scopeType)
	}
	re, err := jsregex.CompileUnbounded(rx)
	if err != nil {
		return nil, fmt.Errorf("scope of seed %q: %w", seed, err)
	}
	return []*jsregex.Regexp{re}, nil
}

// included decides whether a link found at depth-1 may be queued at depth
// with the given extra-hop count (the count it would have if out of scope).
// It returns the normalised URL and whether it is an out-of-scope hop.
func (s *scopedSeed) included(link string, depth, extraHops int) (string, bool, bool) {
	if depth > s.maxDepth {
		return "", false, false
	}
	u, err := normalizeURL(link, s.allowHash)
	if err != nil {
		return "", false, false
	}
	inScope := false
	for _, rx := range s.include {
		if rx.MatchString(u) {
			inScope = true
			break
		}
	}
	oos := false
	if !inScope {
		if s.maxExtraHops == 0 || extraHops > s.maxExtraHops {
			return "", false, false
		}
		oos = true
	}
	for _, rx := range s.exclude {
		if rx.MatchString(u) {
			return "", false, false
		}
	}
	return u, oos, true
}

// normalizeURL accepts only absolute http(s) URLs and writes them the way
// a browser's URL parser would for the cases the simulator produces:
// lower-case scheme and host, "/" for an empty path, no fragment unless
// hashes are allowed.
func normalizeURL(raw string, allowHash bool) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("invalid URL %q: %w", raw, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("invalid URL %q: not an absolute http(s) URL", raw)
	}
	u.Host = strings.ToLower(u.Host)
	if u.Path == "" && u.Opaque == "" {
		u.Path = "/"
	}
	if !allowHash {
		u.Fragment, u.RawFragment = "", ""
	}
	return u.String(), nil
}

// compileAll compiles the user's patterns as the crawler does: as
// JavaScript regexes, the first invalid one being fatal, with no time
// budget (a link is never out of scope because a match was slow).
func compileAll(rxs []string) ([]*jsregex.Regexp, error) {
	out := make([]*jsregex.Regexp, 0, len(rxs))
	for _, s := range rxs {
		rx, err := jsregex.CompileUnbounded(s)
		if err != nil {
			return nil, fmt.Errorf("invalid regex %q: %w", s, err)
		}
		out = append(out, rx)
	}
	return out, nil
}
