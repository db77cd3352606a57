package api

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// Text that is not UTF-8 is refused where it enters, with a 422 naming
// where it is: Go would carry it on as bytes that a MongoDB regex or
// string rejects (a 500 then), and encoding/json would quietly turn it
// into U+FFFD and store that.

// msgNotUTF8 is the 422 message for text that is not UTF-8.
const msgNotUTF8 = "value is not valid UTF-8"

// refuseInvalidUTF8 refuses a request whose path or query (as decoded
// from their %-escapes) is not UTF-8, before any handler reads them.
func refuseInvalidUTF8(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		var v validator
		for i, name := range c.ParamNames() {
			if i < len(c.ParamValues()) && !utf8.ValidString(c.ParamValues()[i]) {
				v.add(msgNotUTF8, "value_error.unicode", "path", name)
			}
		}
		if len(v.errs) == 0 && !utf8.ValidString(c.Request().URL.Path) {
			v.add(msgNotUTF8, "value_error.unicode", "path")
		}
		for name, values := range c.QueryParams() {
			ok := utf8.ValidString(name)
			for _, val := range values {
				ok = ok && utf8.ValidString(val)
			}
			if !ok {
				v.add(msgNotUTF8, "value_error.unicode", "query", strings.ToValidUTF8(name, "\uFFFD"))
			}
		}
		if err := v.err(); err != nil {
			return err
		}
		return next(c)
	}
}

// checkJSONText refuses a JSON body that is not UTF-8, or whose \u
// escapes name half a UTF-16 surrogate pair (which decode to U+FFFD as
// well); the location is the offending byte's offset, as for syntax
// errors.
func checkJSONText(body []byte) error {
	if off := invalidUTF8At(body); off >= 0 {
		return validationError{{Loc: []any{"body", off}, Msg: "body is not valid UTF-8", Type: "value_error.unicode"}}
	}
	if off := loneSurrogate(body); off >= 0 {
		return validationError{{Loc: []any{"body", off}, Msg: "unpaired UTF-16 surrogate in a \\u escape", Type: "value_error.unicode"}}
	}
	return nil
}

// invalidUTF8At is the offset of the first byte of b that is not part of
// a UTF-8 character, or -1.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// loneSurrogate is the offset of the first \u escape in body that is half
// of a surrogate pair without its other half, or -1. Backslashes occur
// only in JSON strings, so every one starts an escape.
func loneSurrogate(body []byte) int {
	escape := func(i int) (rune, bool) { // the \uXXXX at i, if there is one
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		r, ok := escape(i)
		if !ok {
			i++ // skip the escaped character (\\, \", ...)
			continue
		}
		if utf16.IsSurrogate(r) {
			low, ok := escape(i + 6)
			if !ok || utf16.DecodeRune(r, low) == utf8.RuneError {
				return i
			}
			i += 6
		}
		i += 5
	}
	return -1
}
