package api

import (
	"crypto/rand"
	"strings"
	"unicode"
)

// uploadSuffixChars are the characters of the random part of a stored
// upload's name (base32, lower case).
const uploadSuffixChars = "abcdefghijklmnopqrstuvwxyz234567"

// uploadFilename is the name an uploaded file is stored under, as
// upstream makes it: the last path element of the client's name, without
// the characters file names may not hold, with "-" and 8 random
// characters after its first dot-separated part ("my.site.wacz" becomes
// "my-k3j5x2ab.site.wacz"), so uploads never overwrite each other.
func uploadFilename(client string) string {
	if i := strings.LastIndexAny(client, `/\`); i >= 0 {
		client = client[i+1:]
	}
	clean := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || strings.ContainsRune(`"*:<>?|`, r) {
			return -1
		}
		return r
	}, client)
	clean = strings.TrimRight(clean, " ")
	first, rest, dotted := strings.Cut(clean, ".")
	name := first + "-" + randomSuffix(8)
	if dotted {
		name += "." + rest
	}
	return name
}

func randomSuffix(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	for i := range b {
		b[i] = uploadSuffixChars[int(b[i])%len(uploadSuffixChars)]
	}
	return string(b)
}
