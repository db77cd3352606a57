package crawlersim

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// params are the crawler options the simulator honours, typed, with the
// crawler's defaults applied. Options it accepts but ignores (userAgent*,
// text, headless, behaviors, ...) never reach this struct.
type params struct {
	crawlID          string
	redisURL         string
	workers          int
	seeds            []*scopedSeed
	pageLimit        int   // effective limit: pageLimit and maxPageLimit combined
	sizeLimit        int64 // bytes per session, 0 = none
	timeLimit        float64
	generateWACZ     bool
	collection       string
	logErrorsToRedis bool
	// protocolV1 is set by the flags only crawler 1.x knows
	// (--writePagesToRedis, --logBehaviorsToRedis), which the operator
	// passes to 1.x channels only.
	protocolV1        bool
	writePagesToRedis bool
	restartsOnError   bool
	waitOnDone        bool
	debugLogging      bool
	maxPageTime       float64 // seconds: the pending-lock lease
	pageLoadTimeout   float64 // seconds, named in the lines of a slow page
	behaviorTimeout   float64 // seconds, named in the lines of a slow behaviour
	healthCheckPort   int
	profile           string // --profile: "@<key>" in storage, or a local file
	sim               knobs
	seedWarnings      []string // invalid seeds skipped and bad sim-* parameters
}

// validCollection is the crawler's rule for collection names.
var validCollection = regexp.MustCompile(`^[\w][\w-]*$`)

// Fixed parts of the crawler's page-time budget, in seconds: two fetch
// timeouts and two page-operation timeouts on top of load, behaviours and
// extra delay.
const (
	fetchTimeout  = 30
	pageOpTimeout = 5
)

// newParams types the merged options. An error here is the crawler's
// argument-time logger.fatal (exit 17, Redis untouched).
func newParams(opts map[string]any, env map[string]string, hostname, ts string) (*params, error) {
	p := &params{
		crawlID:           optString(opts, "crawlId", ""),
		redisURL:          optString(opts, "redisStoreUrl", "redis://localhost:6379/0"),
		workers:           int(optNumber(opts, "workers", 1)),
		sizeLimit:         int64(optNumber(opts, "sizeLimit", 0)),
		timeLimit:         optNumber(opts, "timeLimit", 0),
		generateWACZ:      optBool(opts, "generateWACZ"),
		collection:        strings.Replace(optString(opts, "collection", "crawl-@ts"), "@ts", ts, 1),
		logErrorsToRedis:  optBool(opts, "logErrorsToRedis"),
		writePagesToRedis: optBool(opts, "writePagesToRedis"),
		restartsOnError:   optBool(opts, "restartsOnError"),
		waitOnDone:        optBool(opts, "waitOnDone"),
		healthCheckPort:   int(optNumber(opts, "healthCheckPort", 0)),
		profile:           optString(opts, "profile", ""),
	}
	p.protocolV1 = p.writePagesToRedis || optBool(opts, "logBehaviorsToRedis")
	if p.crawlID == "" {
		p.crawlID = env["CRAWL_ID"]
	}
	if p.crawlID == "" {
		p.crawlID = hostname
	}
	if p.workers < 1 {
		p.workers = 1
	}
	for _, l := range optStrings(opts, "logging") {
		for _, part := range strings.Split(l, ",") {
			p.debugLogging = p.debugLogging || strings.TrimSpace(part) == "debug"
		}
	}
	p.pageLimit = effectiveLimit(int(optNumber(opts, "pageLimit", 0)), int(optNumber(opts, "maxPageLimit", 0)))
	p.pageLoadTimeout = optNumber(opts, "pageLoadTimeout", 90)
	p.behaviorTimeout = optNumber(opts, "behaviorTimeout", 90)
	p.maxPageTime = p.pageLoadTimeout + p.behaviorTimeout + 2*fetchTimeout + 2*pageOpTimeout + optNumber(opts, "pageExtraDelay", 0)
	if !validCollection.MatchString(p.collection) {
		return nil, fmt.Errorf("invalid collection name %q: only letters, digits, _ and - are allowed", p.collection)
	}
	sim, err := parseKnobs(opts)
	if err != nil {
		return nil, err
	}
	p.sim = sim
	for _, spec := range seedSpecs(opts) {
		s, err := newScopedSeed(spec)
		if err != nil {
			p.seedWarnings = append(p.seedWarnings, fmt.Sprintf("invalid seed %q skipped: %v", spec.url, err))
			continue
		}
		var bad []string
		s.site, bad = seedKnobs(sim.site, s.url)
		for _, b := range bad {
			p.seedWarnings = append(p.seedWarnings, fmt.Sprintf("seed %q: ignoring sim parameters, %s is not a usable value", s.url, b))
		}
		p.seeds = append(p.seeds, s)
	}
	if len(p.seeds) == 0 {
		return nil, fmt.Errorf("no valid seeds specified, aborting crawl")
	}
	return p, nil
}

// effectiveLimit combines --limit and --maxPageLimit: the smaller one when
// both are set, otherwise whichever is set.
func effectiveLimit(limit, maxLimit int) int {
	switch {
	case limit > 0 && maxLimit > 0:
		return min(limit, maxLimit)
	case maxLimit > 0:
		return maxLimit
	case limit > 0:
		return limit
	}
	return 0
}

// seedSpecs reads the seed list: strings or objects whose missing fields
// fall back to the global scope options.
func seedSpecs(opts map[string]any) []seedSpec {
	global := seedSpec{
		scopeType: optString(opts, "scopeType", ""),
		include:   optStrings(opts, "scopeIncludeRx"),
		exclude:   optStrings(opts, "scopeExcludeRx"),
		depth:     int(optNumber(opts, "depth", -1)),
		extraHops: int(optNumber(opts, "extraHops", 0)),
		allowHash: optBool(opts, "allowHashUrls"),
	}
	var out []seedSpec
	raw, ok := opts["seeds"]
	if !ok {
		return nil
	}
	for _, item := range toList(raw) {
		spec := global
		switch v := item.(type) {
		case map[string]any:
			obj := make(map[string]any, len(v))
			for k, val := range v {
				obj[canonicalKey(k)] = val
			}
			spec.url = optString(obj, "seeds", "") // "url" is an alias of "seeds"
			spec.scopeType = optString(obj, "scopeType", spec.scopeType)
			if _, ok := obj["scopeIncludeRx"]; ok {
				spec.include = optStrings(obj, "scopeIncludeRx")
			}
			if _, ok := obj["scopeExcludeRx"]; ok {
				spec.exclude = optStrings(obj, "scopeExcludeRx")
			}
			spec.depth = int(optNumber(obj, "depth", float64(spec.depth)))
			spec.extraHops = int(optNumber(obj, "extraHops", float64(spec.extraHops)))
			if _, ok := obj["allowHash"]; ok {
				spec.allowHash = optBool(obj, "allowHash")
			}
		default:
			spec.url = fmt.Sprint(v)
		}
		out = append(out, spec)
	}
	return out
}

// lastString is the value of a scalar option; when a flag was repeated the
// last occurrence wins.
func lastString(v any) string {
	if l, ok := v.([]any); ok && len(l) > 0 {
		v = l[len(l)-1]
	}
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

func optString(opts map[string]any, key, def string) string {
	v, ok := opts[key]
	if !ok || v == nil {
		return def
	}
	return lastString(v)
}

// optNumber parses a numeric option; values that are not numbers fall back
// to the default, as NaN would make every comparison false.
func optNumber(opts map[string]any, key string, def float64) float64 {
	v, ok := opts[key]
	if !ok || v == nil {
		return def
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(lastString(v)), 64)
	if err != nil || math.IsNaN(f) {
		return def
	}
	return f
}

func optBool(opts map[string]any, key string) bool {
	v, ok := opts[key]
	if !ok || v == nil {
		return false
	}
	switch s := lastString(v); s {
	case "false", "0", "":
		return false
	default:
		return true
	}
}

func optStrings(opts map[string]any, key string) []string {
	v, ok := opts[key]
	if !ok || v == nil {
		return nil
	}
	var out []string
	for _, item := range toList(v) {
		out = append(out, fmt.Sprint(item))
	}
	return out
}
