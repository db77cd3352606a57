package crawlersim

import (
	"reflect"
	"testing"
)

func TestScopeIncluded(t *testing.T) {
	const seed = "https://www.example.com/blog/index.html"
	links := []string{
		"https://www.example.com/blog/post", // under the prefix
		"https://www.example.com/about",     // same host
		"https://shop.example.com/",         // same domain
		"https://other.org/",                // elsewhere
	}
	for _, tc := range []struct {
		name string
		spec seedSpec
		want []string // the links included at depth 1, extra hops 1
		oos  []bool
	}{
		{"prefix", seedSpec{scopeType: "prefix"}, links[:1], []bool{false}},
		{"default is prefix", seedSpec{}, links[:1], []bool{false}},
		{"host", seedSpec{scopeType: "host"}, links[:2], []bool{false, false}},
		{"domain", seedSpec{scopeType: "domain"}, links[:3], []bool{false, false, false}},
		{"any", seedSpec{scopeType: "any"}, links[:4], []bool{false, false, false, false}},
		{"page", seedSpec{scopeType: "page"}, nil, nil},
		{"custom", seedSpec{scopeType: "custom", include: []string{"other"}}, links[3:4], []bool{false}},
		{"include alone means custom", seedSpec{include: []string{"/about"}}, links[1:2], []bool{false}},
		{"exclude", seedSpec{scopeType: "host", exclude: []string{"about"}}, links[:1], []bool{false}},
		{"JavaScript lookahead", seedSpec{scopeType: "host", exclude: []string{`^https://www\.example\.com/(?!blog/)`}}, links[:1], []bool{false}},
		{"page plus one extra hop", seedSpec{scopeType: "page", extraHops: 1}, links[:4],
			[]bool{true, true, true, true}},
		{"extra hop after in-scope", seedSpec{scopeType: "host", extraHops: 1}, links[:4],
			[]bool{false, false, true, true}},
		{"depth 0", seedSpec{scopeType: "any", depth: 0}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.url = seed
			if spec.depth == 0 && tc.name != "depth 0" {
				spec.depth = -1
			}
			s, err := newScopedSeed(spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var oos []bool
			for _, l := range links {
				if u, o, ok := s.included(l, 1, 1); ok {
					got, oos = append(got, u), append(oos, o)
				}
			}
			if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(oos, tc.oos) {
				t.Errorf("included %v (out of scope %v), want %v (%v)", got, oos, tc.want, tc.oos)
			}
		})
	}
}

func TestPageSPA(t *testing.T) {
	s, err := newScopedSeed(seedSpec{url: "https://example.com/app", scopeType: "page-spa", allowHash: true, depth: -1})
	if err != nil {
		t.Fatal(err)
	}
	if u, _, ok := s.included("https://example.com/app#/view/2", 1, 1); !ok || u != "https://example.com/app#/view/2" {
		t.Errorf("hash route of the page: %q %v", u, ok)
	}
	if _, _, ok := s.included("https://example.com/other", 1, 1); ok {
		t.Error("page-spa included another page")
	}
}

func TestExtraHopsLimit(t *testing.T) {
	s, err := newScopedSeed(seedSpec{url: "https://example.com/", scopeType: "prefix", depth: -1, extraHops: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := s.included("https://other.org/", 2, 2); ok {
		t.Error("a second hop out of scope was included with extraHops 1")
	}
}

func TestNormalizeURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://Example.COM", "https://example.com/"},
		{"HTTP://example.com/a?b=1&c=2#frag", "http://example.com/a?b=1&c=2"},
		{" https://example.com/x ", "https://example.com/x"},
	} {
		if got, err := normalizeURL(tc.in, false); err != nil || got != tc.want {
			t.Errorf("normalizeURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"ftp://example.com/", "example.com", "/path", "https://"} {
		if _, err := normalizeURL(bad, false); err == nil {
			t.Errorf("normalizeURL(%q) accepted", bad)
		}
	}
}

// The crawler compiles patterns as JavaScript regexes and dies on one it
// rejects, even when Go's RE2 would take it.
func TestScopeRejectsWhatTheCrawlerRejects(t *testing.T) {
	for _, rx := range []string{"(", "(?i)blog", "(?P<n>x)"} {
		if _, err := newScopedSeed(seedSpec{url: "https://example.com/", exclude: []string{rx}}); err == nil {
			t.Errorf("exclude %q accepted", rx)
		}
	}
}
