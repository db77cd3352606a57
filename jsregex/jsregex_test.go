package jsregex

import (
	"errors"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
)

// The verdicts below are V8's (Node 18, `new RegExp(p)`): the patterns are
// ones archivists write for Browsertrix scopes and exclusions, plus the
// mistakes the crawler turns into its fatal exit.
func TestCompileAcceptsWhatTheCrawlerAccepts(t *testing.T) {
	for _, p := range []string{
		``,
		`.*`,
		`https?://(www\.)?example\.com/.*`,
		`^https://example\.com/blog/`,
		`\?.*replytocom=`,
		`[?&](utm_[a-z]+|fbclid)=`,
		`/(tag|category|author)/`,
		`\.(pdf|zip|mp4)$`,
		`^https://example\.com/(?!private/)`,
		`(?<=/)page/\d+`,
		`(?<!\.)png$`,
		`(?:calendar|events)/\d{4}-\d{2}`,
		`(?<year>\d{4})/\k<year>`,
		`/\d+/?$`,
		`\/wp-json\/`,
		`[\w-.]+@`,
		`\u00e9t\u00e9`,
		`\cA`,
		`x{0}`,
		// Annex B: literals and identity escapes the web-compatible
		// grammar allows.
		`]`, `{`, `a{`, `a{,5}`, `}`, `\8`, `\5`, `\k`, `\p{L}`, `\-`, `[]`, `[^]`, `[[]`, `(?=a)*`,
		`[a-\d]`, `\c1`, `\xZ`, `\u12`,
	} {
		if _, err := Compile(p); err != nil {
			t.Errorf("Compile(%q): %v; the crawler accepts it", p, err)
		}
	}
}

func TestCompileRejectsWhatTheCrawlerRejects(t *testing.T) {
	for _, p := range []string{
		`(`,              // Unterminated group
		`)`,              // Unmatched ')'
		`[`,              // Unterminated character class
		`[a-`,            // Unterminated character class
		`*`,              // Nothing to repeat
		`+foo`,           // Nothing to repeat
		`a**`,            // Nothing to repeat
		`x{1}{2}`,        // Nothing to repeat
		`{1}`,            // Nothing to repeat
		`^*`,             // Nothing to repeat
		`\b+`,            // Nothing to repeat
		`(?<=a)*`,        // Invalid quantifier (lookbehind)
		`\`,              // \ at end of pattern
		`a{2,1}`,         // numbers out of order in {} quantifier
		`[z-a]`,          // Range out of order in character class
		`(?P<name>x)`,    // Invalid group: Python's syntax
		`(?i)foo`,        // Invalid group: inline flags (not in Node 18)
		`(?s).`,          // Invalid group
		`(?-i:a)`,        // Invalid group: modifiers (not in Node 18)
		`(?#comment)`,    // Invalid group: .NET/PCRE comment
		`(?>atomic)`,     // Invalid group: .NET atomic group
		`(?'n'x)`,        // Invalid group: .NET named group
		`(?(a)b|c)`,      // Invalid group: .NET conditional
		`(?`,             // Invalid group
		`(?<1a>x)`,       // Invalid capture group name
		`(?<a-b>x)`,      // Invalid capture group name (.NET balancing group)
		`(?<a`,           // Invalid capture group name
		`(?<a>x)(?<a>y)`, // Duplicate capture group name
		`(?<a>x)|(?<a>y)`,
		`(?<a>x)\k<b>`, // Invalid named capture referenced
		`(?<a>x)\k`,    // Invalid named reference
		`a++`,          // Nothing to repeat (no possessive quantifiers)
	} {
		if _, err := Compile(p); err == nil {
			t.Errorf("Compile(%q) succeeded; the crawler exits 17 on it", p)
		}
	}
}

// A "(" inside a class or after a backslash opens no group, so the group
// check must not look at it.
func TestGroupCheckSkipsClassesAndEscapes(t *testing.T) {
	for _, p := range []string{`[(?i)]`, `\(?i\)`, `[\]](?:x)`, `[]](?:x)`, `[^](?<n>x)`} {
		if _, err := Compile(p); err != nil {
			t.Errorf("Compile(%q): %v", p, err)
		}
	}
}

// Matching follows JavaScript, not RE2 or .NET: no flags, "\p{L}" is the
// literal "p{L}" without the u flag, "[]" matches nothing, "$" only at the
// very end.
func TestMatchStringIsJavaScriptMatching(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{`^https://example\.com/(?!private/)`, "https://example.com/public/", true},
		{`^https://example\.com/(?!private/)`, "https://example.com/private/x", false},
		{`\p{L}`, "p{L}", true},
		{`\p{L}`, "x", false},
		{`[]a]`, "a]", false},
		{`[^]`, "\n", true},
		{`^a.c$`, "a\nc", false},
		{`example`, "EXAMPLE", false},
		{`a$`, "a\n", false},
		{`(?<=/)page/\d+`, "https://x/page/2", true},
	} {
		re, err := Compile(c.pattern)
		if err != nil {
			t.Fatalf("Compile(%q): %v", c.pattern, err)
		}
		if got := re.MatchString(c.s); got != c.want {
			t.Errorf("%q.MatchString(%q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

// A catastrophic pattern ends at the match budget, reported as such by
// Match and as no match by MatchString, instead of holding its caller.
func TestHostilePatternHitsTheLimit(t *testing.T) {
	re, err := Compile(`^(a+)+$`)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Repeat("a", 40) + "!"
	if ok, err := re.Match(s); ok || !errors.Is(err, ErrMatchLimit) {
		t.Fatalf("Match = %v, %v; want false, ErrMatchLimit", ok, err)
	}
	if re.MatchString(s) {
		t.Fatal("matched")
	}
}

// The crawler's own scope checks have no clock: an unbounded Regexp never
// gives up because its goroutine waited for a CPU, which a bounded one's
// wall-clock budget cannot promise.
func TestUnboundedHasNoBudget(t *testing.T) {
	bounded, err := Compile(`^https?://example\.com/`)
	if err != nil {
		t.Fatal(err)
	}
	unbounded, err := CompileUnbounded(`^https?://example\.com/`)
	if err != nil {
		t.Fatal(err)
	}
	if bounded.re.MatchTimeout != MatchTimeout || unbounded.re.MatchTimeout != regexp2.DefaultMatchTimeout {
		t.Fatalf("budgets %v and %v, want %v and none", bounded.re.MatchTimeout, unbounded.re.MatchTimeout, MatchTimeout)
	}
	if ok, err := unbounded.Match("https://example.com/a"); !ok || err != nil {
		t.Fatalf("Match = %v, %v; want a match", ok, err)
	}
	if _, err := CompileUnbounded(`(?P<a>x)`); err == nil {
		t.Fatal("CompileUnbounded accepted .NET group syntax")
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{`(`, `(?<a>x)\k<a>`, `[]]`, `(?i)`, `\`, `a{2,1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if re, err := Compile(p); err == nil {
			re.MatchString(p)
		}
	})
}
