package api

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/store"
)

// Enumerations of RawCrawlConfig fields.
var (
	scopeTypes = []string{"page", "page-spa", "prefix", "host", "domain", "any", "custom"}
	jobTypes   = []string{"url-list", "seed-crawl", "custom"}
)

// defaultBehaviors is upstream's default of config.behaviors.
const defaultBehaviors = "autoscroll,autoplay,autofetch,siteSpecific"

// patternsIn is include/exclude: a string, a list of strings or null.
type patternsIn struct{ store.Patterns }

func (p *patternsIn) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		p.Patterns = store.Patterns{}
		return nil
	}
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		p.Patterns = store.Patterns{Values: []string{one}, Single: true, Set: true}
		return nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[[]string]()}
	}
	p.Patterns = store.Patterns{Values: append([]string{}, list...), Set: list != nil}
	return nil
}

// sitemapIn is a seed's sitemap: a boolean or a sitemap URL.
type sitemapIn struct{ value any }

func (s *sitemapIn) UnmarshalJSON(data []byte) error {
	var b bool
	if err := json.Unmarshal(data, &b); err == nil {
		s.value = b
		return nil
	}
	var u string
	if err := json.Unmarshal(data, &u); err != nil {
		return &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[bool]()}
	}
	s.value = u
	return nil
}

// url is the sitemap URL, when one was given instead of a boolean.
func (s *sitemapIn) url() (string, bool) {
	if s == nil {
		return "", false
	}
	u, ok := s.value.(string)
	return u, ok
}

// seedIn is one seed as sent by clients (a bare string is a 422).
type seedIn struct {
	URL       *string    `json:"url"`
	ScopeType *string    `json:"scopeType"`
	Include   patternsIn `json:"include"`
	Exclude   patternsIn `json:"exclude"`
	Sitemap   *sitemapIn `json:"sitemap"`
	AllowHash *bool      `json:"allowHash"`
	Depth     *int       `json:"depth"`
	ExtraHops *int       `json:"extraHops"`
}

// rawConfigIn is RawCrawlConfig as sent by clients; nulls mean defaults.
type rawConfigIn struct {
	Seeds           []seedIn   `json:"seeds"`
	ScopeType       *string    `json:"scopeType"`
	Include         patternsIn `json:"include"`
	Exclude         patternsIn `json:"exclude"`
	Depth           *int       `json:"depth"`
	Limit           *int       `json:"limit"`
	ExtraHops       *int       `json:"extraHops"`
	Lang            *string    `json:"lang"`
	BlockAds        *bool      `json:"blockAds"`
	BehaviorTimeout *int       `json:"behaviorTimeout"`
	PageLoadTimeout *int       `json:"pageLoadTimeout"`
	PageExtraDelay  *int       `json:"pageExtraDelay"`
	Workers         *int       `json:"workers"`
	Headless        *bool      `json:"headless"`
	GenerateWACZ    *bool      `json:"generateWACZ"`
	CombineWARC     *bool      `json:"combineWARC"`
	UseSitemap      *bool      `json:"useSitemap"`
	Logging         *string    `json:"logging"`
	Behaviors       *string    `json:"behaviors"`
	// SeedFileID names a seed file of the org to crawl instead of seeds.
	SeedFileID *string `json:"seedFileId"`
}

// validate checks the config; loc is its path in the body. Regexes are
// checked with the crawler's own rules (JavaScript), so a config the
// crawler would exit on is refused here; so are seeds at internal
// addresses outside allowed.
func (in *rawConfigIn) validate(v *validator, allowed netpolicy.AllowList, loc ...any) {
	if in.Seeds == nil && in.SeedFileID == nil {
		v.missing(at(loc, "seeds")...)
	}
	if in.SeedFileID != nil {
		if _, err := uuid.Parse(*in.SeedFileID); err != nil {
			v.add("value is not a valid uuid", "type_error.uuid", at(loc, "seedFileId")...)
		}
	}
	v.maxItems(len(in.Seeds), maxSeeds, at(loc, "seeds")...)
	for i, sd := range in.Seeds {
		sl := at(loc, "seeds", i)
		switch {
		case sd.URL == nil:
			v.missing(at(sl, "url")...)
		case utf8.RuneCountInString(*sd.URL) > maxURLLen:
			v.maxLen(*sd.URL, maxURLLen, at(sl, "url")...)
		case !isHTTPURL(*sd.URL):
			v.add("invalid or missing URL scheme", "value_error.url.scheme", at(sl, "url")...)
		default:
			v.internalHost(*sd.URL, allowed, "crawls", at(sl, "url")...)
		}
		if sd.ScopeType != nil {
			v.oneOf(*sd.ScopeType, scopeTypes, at(sl, "scopeType")...)
		}
		v.patterns(sd.Include.Values, at(sl, "include")...)
		v.patterns(sd.Exclude.Values, at(sl, "exclude")...)
		if s, ok := sd.Sitemap.url(); ok {
			v.maxLen(s, maxURLLen, at(sl, "sitemap")...)
			v.internalHost(s, allowed, "crawls", at(sl, "sitemap")...)
		}
		v.nonNegative(sd.ExtraHops, at(sl, "extraHops")...)
		v.atLeast(sd.Depth, -1, at(sl, "depth")...)
	}
	if in.ScopeType != nil {
		v.oneOf(*in.ScopeType, scopeTypes, at(loc, "scopeType")...)
	}
	v.patterns(in.Include.Values, at(loc, "include")...)
	v.patterns(in.Exclude.Values, at(loc, "exclude")...)
	v.atLeast(in.Depth, -1, at(loc, "depth")...)
	for _, f := range []struct {
		name string
		n    *int
	}{{"limit", in.Limit}, {"extraHops", in.ExtraHops}, {"behaviorTimeout", in.BehaviorTimeout},
		{"pageLoadTimeout", in.PageLoadTimeout}, {"pageExtraDelay", in.PageExtraDelay}} {
		v.nonNegative(f.n, at(loc, f.name)...)
	}
	v.atLeast(in.Workers, 1, at(loc, "workers")...)
	for _, f := range []struct {
		name string
		s    *string
	}{{"lang", in.Lang}, {"logging", in.Logging}, {"behaviors", in.Behaviors}} {
		if f.s != nil {
			v.maxLen(*f.s, maxShortString, at(loc, f.name)...)
		}
	}
}

// nonNegative checks an optional count or duration.
func (v *validator) nonNegative(n *int, loc ...any) { v.atLeast(n, 0, loc...) }

// atLeast checks an optional number's lower bound.
func (v *validator) atLeast(n *int, lo int, loc ...any) {
	if n != nil && *n < lo {
		v.between(int64(*n), int64(lo), int64(*n), loc...)
	}
}

// isHTTPURL is pydantic's HttpUrl check: http(s) scheme and a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(strings.TrimSpace(s))
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// toStoreRawConfig applies upstream's defaults.
func toStoreRawConfig(in *rawConfigIn) store.RawCrawlConfig {
	deref := func(p *int, def int) int {
		if p == nil {
			return def
		}
		return *p
	}
	derefBool := func(p *bool) bool { return p != nil && *p }
	out := store.RawCrawlConfig{
		Seeds:           make([]store.Seed, len(in.Seeds)),
		ScopeType:       "prefix",
		Include:         in.Include.Patterns,
		Exclude:         in.Exclude.Patterns,
		Depth:           deref(in.Depth, -1),
		Limit:           deref(in.Limit, 0),
		ExtraHops:       deref(in.ExtraHops, 0),
		Lang:            in.Lang,
		BlockAds:        derefBool(in.BlockAds),
		BehaviorTimeout: in.BehaviorTimeout,
		PageLoadTimeout: in.PageLoadTimeout,
		PageExtraDelay:  deref(in.PageExtraDelay, 0),
		Workers:         in.Workers,
		Headless:        in.Headless,
		GenerateWACZ:    in.GenerateWACZ,
		CombineWARC:     in.CombineWARC,
		UseSitemap:      derefBool(in.UseSitemap),
		Logging:         in.Logging,
		Behaviors:       in.Behaviors,
	}
	if in.ScopeType != nil {
		out.ScopeType = *in.ScopeType
	}
	if out.Behaviors == nil {
		b := defaultBehaviors
		out.Behaviors = &b
	}
	// Every URL of a seed file is a page-scoped seed (upstream forces it).
	if in.SeedFileID != nil {
		id := uuid.MustParse(*in.SeedFileID) // checked by validate
		out.SeedFileID, out.ScopeType = &id, "page"
	}
	for i, sd := range in.Seeds {
		out.Seeds[i] = store.Seed{URL: strings.TrimSpace(deref1(sd.URL)), ScopeType: sd.ScopeType,
			Include: sd.Include.Patterns, Exclude: sd.Exclude.Patterns, AllowHash: sd.AllowHash,
			Depth: sd.Depth, ExtraHops: sd.ExtraHops}
		if sd.Sitemap != nil {
			out.Seeds[i].Sitemap = sd.Sitemap.value
		}
	}
	return out
}

func deref1(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// seedOut is a seed on the wire: every field, null when unset.
type seedOut struct {
	URL       string  `json:"url"`
	ScopeType *string `json:"scopeType"`
	Include   any     `json:"include"`
	Exclude   any     `json:"exclude"`
	Sitemap   any     `json:"sitemap"`
	AllowHash *bool   `json:"allowHash"`
	Depth     *int    `json:"depth"`
	ExtraHops *int    `json:"extraHops"`
}

// rawConfigOut is RawCrawlConfig on the wire, with nulls.
type rawConfigOut struct {
	Seeds           []seedOut `json:"seeds"`
	ScopeType       string    `json:"scopeType"`
	Include         any       `json:"include"`
	Exclude         any       `json:"exclude"`
	Depth           int       `json:"depth"`
	Limit           int       `json:"limit"`
	ExtraHops       int       `json:"extraHops"`
	Lang            *string   `json:"lang"`
	BlockAds        bool      `json:"blockAds"`
	BehaviorTimeout *int      `json:"behaviorTimeout"`
	PageLoadTimeout *int      `json:"pageLoadTimeout"`
	PageExtraDelay  int       `json:"pageExtraDelay"`
	Workers         *int      `json:"workers"`
	Headless        *bool     `json:"headless"`
	GenerateWACZ    *bool     `json:"generateWACZ"`
	CombineWARC     *bool     `json:"combineWARC"`
	UseSitemap      bool      `json:"useSitemap"`
	Logging         *string   `json:"logging"`
	Behaviors       *string   `json:"behaviors"`
	// SeedFileID is left out of configs without one, which keep their
	// 2023 shape.
	SeedFileID *uuid.UUID `json:"seedFileId,omitempty"`
}

// patternsOut echoes patterns as they were given: null, string or list.
func patternsOut(p store.Patterns) any {
	switch {
	case !p.Set:
		return nil
	case p.Single && len(p.Values) == 1:
		return p.Values[0]
	case p.Values == nil:
		return []string{}
	default:
		return p.Values
	}
}

func toRawConfigOut(c store.RawCrawlConfig) rawConfigOut {
	out := rawConfigOut{
		Seeds: make([]seedOut, len(c.Seeds)), ScopeType: c.ScopeType,
		Include: patternsOut(c.Include), Exclude: patternsOut(c.Exclude),
		Depth: c.Depth, Limit: c.Limit, ExtraHops: c.ExtraHops, Lang: c.Lang, BlockAds: c.BlockAds,
		BehaviorTimeout: c.BehaviorTimeout, PageLoadTimeout: c.PageLoadTimeout,
		PageExtraDelay: c.PageExtraDelay, Workers: c.Workers, Headless: c.Headless,
		GenerateWACZ: c.GenerateWACZ, CombineWARC: c.CombineWARC, UseSitemap: c.UseSitemap,
		Logging: c.Logging, Behaviors: c.Behaviors, SeedFileID: c.SeedFileID,
	}
	for i, sd := range c.Seeds {
		out.Seeds[i] = seedOut{URL: sd.URL, ScopeType: sd.ScopeType, Include: patternsOut(sd.Include),
			Exclude: patternsOut(sd.Exclude), Sitemap: sd.Sitemap, AllowHash: sd.AllowHash,
			Depth: sd.Depth, ExtraHops: sd.ExtraHops}
	}
	return out
}

// crawlerConfigJSON is the crawl-config.json handed to the crawler: the
// wire form without its null fields.
func crawlerConfigJSON(c store.RawCrawlConfig) ([]byte, error) { return seededConfigJSON(c, "") }

// seededConfigJSON is crawlerConfigJSON for a crawler that downloads its
// seed file by seedFile: the crawler gets the link as "seedFile", never
// the file's id (upstream-2026.md §0.4).
func seededConfigJSON(c store.RawCrawlConfig, seedFile string) ([]byte, error) {
	raw, err := json.Marshal(toRawConfigOut(c))
	if err != nil {
		return nil, err
	}
	// UseNumber keeps integers exact through the round trip.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	dropNulls(m)
	delete(m, "seedFileId")
	if seedFile != "" {
		m["seedFile"] = seedFile
	}
	return json.Marshal(m)
}

func dropNulls(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(t)
		case []any:
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					dropNulls(em)
				}
			}
		}
	}
}

// sameConfig reports whether two configs look the same on the wire, which
// is what "changed" means to a client re-sending a workflow's config.
func sameConfig(a, b store.RawCrawlConfig) bool {
	ja, errA := json.Marshal(toRawConfigOut(a))
	jb, errB := json.Marshal(toRawConfigOut(b))
	return errA == nil && errB == nil && string(ja) == string(jb)
}
