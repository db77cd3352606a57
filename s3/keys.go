package s3

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidKey is wrapped by every error about an object key that the
// layer refuses: one that could leave its folder ("..", a leading "/"),
// holds control characters, or lies outside the org it is used for.
var ErrInvalidKey = errors.New("invalid object key")

// KeyError explains why a key was refused; errors.Is(err, ErrInvalidKey)
// holds for it.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string { return fmt.Sprintf("object key %q: %s", e.Key, e.Reason) }

// Unwrap makes errors.Is(err, ErrInvalidKey) true.
func (e *KeyError) Unwrap() error { return ErrInvalidKey }

// maxKeyBytes is S3's limit on the length of a key.
const maxKeyBytes = 1024

// ValidateKey checks that key is a plain relative object key: not empty,
// at most 1024 bytes, valid UTF-8, no control characters or backslashes,
// no leading "/", and no empty, "." or ".." segment. S3 itself would take
// most of these, but file-backed servers and proxies resolve them as paths,
// so a key that names another folder could reach another org's files.
func ValidateKey(key string) error {
	bad := func(reason string) error { return &KeyError{Key: key, Reason: reason} }
	switch {
	case key == "":
		return bad("empty")
	case len(key) > maxKeyBytes:
		return bad(fmt.Sprintf("longer than %d bytes", maxKeyBytes))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.HasPrefix(key, "/"):
		return bad("starts with /")
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return bad("contains a control character")
		}
		if r == '\\' {
			return bad("contains a backslash")
		}
	}
	segments := strings.Split(key, "/")
	for i, seg := range segments {
		switch {
		case seg == "..":
			return bad(`contains a ".." segment`)
		case seg == ".":
			return bad(`contains a "." segment`)
		case seg == "" && i < len(segments)-1:
			return bad("contains an empty segment (//)")
		}
	}
	return nil
}

// OrgPrefix is the folder of an org's files in a shared storage: "<oid>/",
// what the crawler gets as STORE_PATH.
func OrgPrefix(oid string) string { return oid + "/" }

// OrgKey builds the key of an org's object from a name relative to the
// org's folder, e.g. OrgKey(oid, "uploads/<id>/x.wacz"). The result is
// refused (ErrInvalidKey) unless it stays inside that folder.
func OrgKey(oid, name string) (string, error) {
	if err := validateOrgID(oid); err != nil {
		return "", err
	}
	key := OrgPrefix(oid) + name
	if err := ValidateKey(name); err != nil {
		return "", &KeyError{Key: key, Reason: err.(*KeyError).Reason}
	}
	return key, ValidateKey(key)
}

// InOrg checks that key (relative to a shared storage's bucket prefix, as
// recorded in a crawl's files) is a valid key inside org oid's folder.
func InOrg(oid, key string) error {
	if err := validateOrgID(oid); err != nil {
		return err
	}
	if err := ValidateKey(key); err != nil {
		return err
	}
	if !strings.HasPrefix(key, OrgPrefix(oid)) || len(key) == len(OrgPrefix(oid)) {
		return &KeyError{Key: key, Reason: "outside the folder of org " + oid}
	}
	return nil
}

// validateOrgID refuses org ids that would not make a single plain
// folder name.
func validateOrgID(oid string) error {
	if oid == "" || strings.Contains(oid, "/") || ValidateKey(oid) != nil {
		return &KeyError{Key: oid, Reason: "not a usable org folder name"}
	}
	return nil
}
