package api

import (
	"fmt"
	"strings"
	"unicode"
)

// attachment is a Content-Disposition that downloads as name, made safe
// to save under (safeFilename). The plain filename carries it as
// upstream does; a name with non-ASCII characters also gets RFC 6266's
// filename*, which browsers prefer, in UTF-8.
func attachment(name string) string {
	safe := safeFilename(name)
	h := `attachment; filename="` + safe + `"`
	for _, r := range safe {
		if r > unicode.MaxASCII {
			return h + "; filename*=UTF-8''" + encodeExtValue(safe)
		}
	}
	return h
}

// safeFilename is name as a file name that stays where the browser
// saves it and keeps the header well-formed: path separators become "_"
// (a collection named "../../x" downloads as "_.._x"), control
// characters and double quotes go, and leading dots and spaces (hidden
// files, "..") too. Nothing left is "download".
func safeFilename(name string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\':
			return '_'
		case r == '"' || unicode.IsControl(r):
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, "_"))
	safe = strings.TrimLeft(safe, ". ")
	if safe == "" {
		return "download"
	}
	return safe
}

// encodeExtValue %-encodes s for an RFC 8187 ext-value: every byte but
// the attr-chars.
func encodeExtValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
