package api

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/trawlerhq/trawler/jsregex"
	"github.com/trawlerhq/trawler/k8s"
)

// Bounds of request inputs. Upstream (ad9bca2) checks none of these; the
// values are generous for real use and keep every request, stored
// document and crawl config far from a size or number that breaks
// something later. Each violation is a 422 that names the field and the
// limit.
const (
	maxNameLen        = 256    // workflow, crawl, org and user names
	maxDescriptionLen = 10_000 // workflow and crawl descriptions
	maxTags           = 100
	maxTagLen         = 128
	maxSeeds          = 1_000
	// maxURLLen is the sitemaps protocol's limit, which crawled sites
	// themselves live with.
	maxURLLen      = 2_048
	maxPatterns    = 100   // include or exclude patterns in one list
	maxPatternLen  = 1_000 // one regex
	maxShortString = 256   // lang, logging, behaviors, e-mail addresses
	maxIDList      = 1_000 // collection ids, crawl ids to delete
	// maxFilenameTemplateLen keeps the expanded WACZ key (org folder,
	// template, timestamp and host name) well under S3's 1024 bytes.
	maxFilenameTemplateLen = 256
	// maxCrawlTimeout is a year of seconds; time.Duration overflows at
	// 292 years, which would end the crawl at once.
	maxCrawlTimeout = 365 * 24 * 3600
	maxPageSize     = 10_000
	// maxSkip bounds (page-1)*pageSize, which must fit an int64 skip.
	maxSkip = 1_000_000_000
)

// maxLen checks a string's length in characters, as pydantic counts,
// and tells whether it is within the limit.
func (v *validator) maxLen(s string, limit int, loc ...any) bool {
	if utf8.RuneCountInString(s) > limit {
		v.add(fmt.Sprintf("ensure this value has at most %d characters", limit), "value_error.any_str.max_length", loc...)
		return false
	}
	return true
}

// maxItems checks a list's length.
func (v *validator) maxItems(n, limit int, loc ...any) {
	if n > limit {
		v.add(fmt.Sprintf("ensure this value has at most %d items", limit), "value_error.list.max_items", loc...)
	}
}

// at is loc extended by more, without aliasing loc's array.
func at(loc []any, more ...any) []any { return append(append([]any{}, loc...), more...) }

// tags checks a tag list's count and each tag's length.
func (v *validator) tags(tags []string, loc ...any) {
	v.maxItems(len(tags), maxTags, loc...)
	for i, t := range tags {
		v.maxLen(t, maxTagLen, at(loc, i)...)
	}
}

// patterns checks include or exclude regexes with the crawler's rules:
// JavaScript RegExp syntax, which the crawler compiles at startup and
// exits on (fatal code 17) if one is invalid.
func (v *validator) patterns(values []string, loc ...any) {
	v.maxItems(len(values), maxPatterns, loc...)
	for i, p := range values {
		v.regex(p, at(loc, i)...)
	}
}

// regex checks one JavaScript regex and its length.
func (v *validator) regex(p string, loc ...any) {
	if !v.maxLen(p, maxPatternLen, loc...) {
		return
	}
	if _, err := jsregex.Compile(p); err != nil {
		v.add(err.Error(), "value_error.regex", loc...)
	}
}

// storageName checks a name that becomes part of an object key in the
// org's storage folder (the WACZ filename template, file names): it must
// stay inside that folder, so no "..", no leading "/" or "\" and no
// control characters.
func (v *validator) storageName(s string, limit int, loc ...any) {
	if !v.maxLen(s, limit, loc...) {
		return
	}
	if reason := storageNameProblem(s); reason != "" {
		v.add(reason, "value_error.storage_path", loc...)
	}
}

// storageNameProblem says why s cannot be used in an object key ("" if
// it can).
func storageNameProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case strings.Contains(s, ".."):
		return `must not contain ".."`
	case strings.HasPrefix(s, "/"):
		return `must not start with "/"`
	case strings.Contains(s, `\`):
		return `must not contain "\"`
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return "must not contain control characters"
		}
	}
	return ""
}

// configSize checks that a crawl config fits the ConfigMap a launch
// creates: a config that cannot launch is refused when it is saved, not
// when a crawl of it starts.
func (v *validator) configSize(configJSON []byte, loc ...any) {
	if err := k8s.CheckCrawlConfigSize(configJSON); err != nil {
		v.add(err.Error(), "value_error.config.max_size", loc...)
	}
}
