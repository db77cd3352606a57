// Package jsregex compiles and matches regular expressions the way
// browsertrix-crawler 0.11 does: `new RegExp(pattern)` in Node 18, with no
// flags, so JavaScript syntax with the web-compatibility grammar of
// ECMAScript Annex B (a lone "]" or "{" is a literal, "\8" an identity
// escape, ...), not Go's RE2. The crawler compiles a workflow's include
// and exclude patterns at startup and exits with its fatal code 17 on the
// first one it rejects, so the API checks them with Compile first.
//
// The engine is regexp2 in its ECMAScript mode. That mode still accepts
// some .NET group syntax that JavaScript rejects, so Compile adds one
// grammar check of its own (see checkGroups): after "(?" only ":", "=",
// "!", "<=", "<!" and "<name>" may follow, a group name is an identifier,
// and a name is declared once (Node 18 predates duplicate names in
// alternatives). It imports nothing of trawler's.
package jsregex

import (
	"errors"
	"fmt"
	"time"
	"unicode"

	"github.com/dlclark/regexp2/v2"
)

// MatchTimeout bounds one match of a Regexp from Compile: a backtracking
// engine can take exponential time on a hostile pattern. It is a wall-clock
// budget, so it sits far above what any sane pattern needs even while its
// goroutine waits for a CPU on a loaded machine; a caller scanning many
// strings stops at the first ErrMatchLimit, which bounds a hostile
// pattern's cost to about one budget per request.
const MatchTimeout = time.Second

// ErrMatchLimit is a match that ran out of its time budget or of
// backtracking stack: the pattern is too costly for the string, which
// only a catastrophic pattern is.
var ErrMatchLimit = errors.New("the regular expression is too costly to match")

// Regexp is a compiled JavaScript regular expression (no flags).
type Regexp struct {
	re *regexp2.Regexp
}

// Compile parses pattern as new RegExp(pattern) would; the error says why
// the crawler would reject it. Its matches are bounded by MatchTimeout,
// for patterns from users matched on a shared server.
func Compile(pattern string) (*Regexp, error) {
	r, err := CompileUnbounded(pattern)
	if err != nil {
		return nil, err
	}
	r.re.MatchTimeout = MatchTimeout
	return r, nil
}

// CompileUnbounded is Compile without the time budget: a match runs to
// its end, as in the crawler, whose scope never gives up on a link.
func CompileUnbounded(pattern string) (*Regexp, error) {
	if err := checkGroups(pattern); err != nil {
		return nil, err
	}
	re, err := regexp2.Compile(pattern, regexp2.ECMAScript)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", unwrapParse(err))
	}
	return &Regexp{re: re}, nil
}

// unwrapParse drops regexp2's "error parsing regexp: " prefix, which the
// caller's own wording replaces.
func unwrapParse(err error) error {
	const prefix = "error parsing regexp: "
	if msg := err.Error(); len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return errors.New(msg[len(prefix):])
	}
	return err
}

// Match reports whether s contains a match, or ErrMatchLimit when the
// match ran out of time or backtracking stack.
func (r *Regexp) Match(s string) (bool, error) {
	ok, err := r.re.MatchString(s)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrMatchLimit, err)
	}
	return ok, nil
}

// MatchString reports whether s contains a match; one that runs out of
// time or backtracking stack counts as none (Match tells them apart).
func (r *Regexp) MatchString(s string) bool {
	ok, err := r.Match(s)
	return err == nil && ok
}

// String is the pattern the Regexp was compiled from.
func (r *Regexp) String() string { return r.re.String() }

// checkGroups rejects the group constructs JavaScript does not have. It
// scans the pattern once, skipping escapes and character classes (where
// "(" is a literal); regexp2 checks everything else.
func checkGroups(p string) error {
	runes := []rune(p)
	names := map[string]bool{}
	inClass := false
	for i := 0; i < len(runes); i++ {
		switch c := runes[i]; {
		case c == '\\':
			i++ // the escaped character, whatever it is
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
			// In JavaScript "[]" is an empty class and "[^]" any
			// character: a "]" right after "[" or "[^" closes the class.
		case c == '(' && i+1 < len(runes) && runes[i+1] == '?':
			name, err := groupName(runes[i+2:])
			if err != nil {
				return fmt.Errorf("invalid regular expression: %w at offset %d", err, i)
			}
			if name != "" {
				if names[name] {
					return fmt.Errorf("invalid regular expression: duplicate capture group name %q", name)
				}
				names[name] = true
			}
		}
	}
	return nil
}

// groupName checks what follows "(?" and returns the name of a named
// group ("" for the other kinds).
func groupName(rest []rune) (string, error) {
	if len(rest) == 0 {
		return "", errors.New("invalid group")
	}
	switch rest[0] {
	case ':', '=', '!':
		return "", nil
	case '<':
		if len(rest) > 1 && (rest[1] == '=' || rest[1] == '!') {
			return "", nil
		}
		for j := 1; j < len(rest); j++ {
			if rest[j] == '>' {
				name := string(rest[1:j])
				if !isIdentifier(rest[1:j]) {
					return "", fmt.Errorf("invalid capture group name %q", name)
				}
				return name, nil
			}
		}
		return "", errors.New("unterminated capture group name")
	}
	return "", fmt.Errorf("invalid group (?%c", rest[0])
}

// isIdentifier reports an ECMAScript IdentifierName (without escapes).
func isIdentifier(name []rune) bool {
	if len(name) == 0 {
		return false
	}
	for i, r := range name {
		start := unicode.IsLetter(r) || r == '$' || r == '_'
		part := unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) ||
			unicode.Is(unicode.Pc, r) || r == '\u200c' || r == '\u200d'
		if !start && (i == 0 || !part) {
			return false
		}
	}
	return true
}
