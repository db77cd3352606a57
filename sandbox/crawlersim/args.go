package crawlersim

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// crawlArgsToken matches one CRAWL_ARGS token the way the crawler splits
// them: a double-quoted run of one or more non-quote characters, or a run
// of non-whitespace. An empty "" therefore stays a literal two-character
// token, which is why `--userAgent ""` reaches the crawler as `""`.
var crawlArgsToken = regexp.MustCompile(`"[^"]+"|[^\s]+`)

// splitCrawlArgs tokenises the CRAWL_ARGS environment variable.
func splitCrawlArgs(s string) []string {
	toks := crawlArgsToken.FindAllString(s, -1)
	for i, t := range toks {
		if len(t) > 2 && t[0] == '"' && t[len(t)-1] == '"' {
			toks[i] = t[1 : len(t)-1]
		}
	}
	return toks
}

// aliases maps every accepted spelling to the option's canonical name, as
// the crawler's option table does. Keys are already camelCased.
var aliases = map[string]string{
	"id":           "crawlId",
	"limit":        "pageLimit",
	"url":          "seeds",
	"include":      "scopeIncludeRx",
	"exclude":      "scopeExcludeRx",
	"c":            "collection",
	"w":            "workers",
	"timeout":      "pageLoadTimeout",
	"delay":        "pageExtraDelay",
	"generatewacz": "generateWACZ",
	"generateWacz": "generateWACZ",
}

// booleanOptions never take the next token as their value unless it is
// "true" or "false", so `--generateWACZ --collection x` works.
var booleanOptions = map[string]bool{
	"generateWACZ": true, "logErrorsToRedis": true, "restartsOnError": true,
	"waitOnDone": true, "text": true, "headless": true, "combineWARC": true,
	"generateCDX": true, "blockAds": true, "overwrite": true, "screenshot": true,
	"allowHashUrls": true, "failOnFailedSeed": true,
	"writePagesToRedis": true, "logBehaviorsToRedis": true,
	"sim.fatalAtStart": true, "sim.redisUnreachable": true, "sim.ignoreSigterm": true,
}

// arrayOptions swallow every following token up to the next flag, like the
// crawler's array-typed options (`--seeds a b c`).
var arrayOptions = map[string]bool{"seeds": true, "scopeIncludeRx": true, "scopeExcludeRx": true}

// canonicalKey turns a flag or config key into the canonical option name:
// kebab-case becomes camelCase (per dot-separated part) and aliases resolve.
func canonicalKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		segs := strings.Split(p, "-")
		for j := 1; j < len(segs); j++ {
			if segs[j] != "" {
				segs[j] = strings.ToUpper(segs[j][:1]) + segs[j][1:]
			}
		}
		parts[i] = strings.Join(segs, "")
	}
	k = strings.Join(parts, ".")
	if a, ok := aliases[k]; ok {
		return a
	}
	return k
}

// parseArgv reads `--k v`, `--k=v`, bare booleans, `--no-k`, `--k true|false`
// and repeated flags (which become lists). Positional tokens (the command
// name "crawl" among them) and unknown flags are kept or ignored exactly as
// a non-strict parser would: unknown flags are stored but never validated.
func parseArgv(argv []string) map[string]any {
	out := map[string]any{}
	set := func(k string, v any) {
		prev, ok := out[k]
		switch {
		case !ok:
			out[k] = v
		case arrayOptions[k]:
			out[k] = append(toList(prev), toList(v)...)
		default:
			out[k] = append(toList(prev), v)
		}
	}
	isFlag := func(s string) bool { return strings.HasPrefix(s, "-") && len(s) > 1 }
	for i := 0; i < len(argv); i++ {
		tok := argv[i]
		if !isFlag(tok) {
			continue
		}
		name := strings.TrimLeft(tok, "-")
		var value *string
		if eq := strings.IndexByte(name, '='); eq >= 0 {
			v := name[eq+1:]
			name, value = name[:eq], &v
		}
		key := canonicalKey(name)
		if base := canonicalKey(strings.TrimPrefix(name, "no-")); value == nil && base != key && booleanOptions[base] {
			set(base, false)
			continue
		}
		switch {
		case value != nil:
			if booleanOptions[key] {
				set(key, *value != "false")
			} else {
				set(key, *value)
			}
		case booleanOptions[key]:
			if i+1 < len(argv) && (argv[i+1] == "true" || argv[i+1] == "false") {
				i++
				set(key, argv[i] == "true")
			} else {
				set(key, true)
			}
		case arrayOptions[key]:
			var vals []any
			for i+1 < len(argv) && !isFlag(argv[i+1]) {
				i++
				vals = append(vals, argv[i])
			}
			set(key, vals)
		case i+1 < len(argv) && !isFlag(argv[i+1]):
			i++
			set(key, argv[i])
		default:
			set(key, true)
		}
	}
	return out
}

func toList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// loadConfigFile reads the crawl config (YAML or JSON; JSON is YAML) and
// returns its options under canonical names.
func loadConfigFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", filepath.Base(path), err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parsing config %s: %w", filepath.Base(path), err)
	}
	out := make(map[string]any, len(raw))
	for k, v := range raw {
		out[canonicalKey(k)] = v
	}
	return out, nil
}

// mergeOptions applies the crawler's precedence: command line (which
// includes CRAWL_ARGS) over the config file. Defaults are applied later,
// field by field, when options are typed.
func mergeOptions(cli, file map[string]any) map[string]any {
	out := make(map[string]any, len(cli)+len(file))
	for k, v := range file {
		out[k] = v
	}
	for k, v := range cli {
		out[k] = v
	}
	return out
}
