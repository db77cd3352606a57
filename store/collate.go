package store

import (
	"encoding/hex"
	"sync"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"
)

// English collation order for the sorts upstream does with MongoDB's "en"
// collation. FerretDB v1 has no collations, so the store writes a sort
// key next to the value: the collation key in hex, whose byte order (and
// so plain string order) is the collation order.
var (
	collatorMu sync.Mutex // a Collator is not safe for concurrent use
	collator   = collate.New(language.English)
	keyBuf     collate.Buffer
)

// sortKey is the English collation sort key of s.
func sortKey(s string) string {
	collatorMu.Lock()
	defer collatorMu.Unlock()
	key := hex.EncodeToString(collator.KeyFromString(&keyBuf, s))
	keyBuf.Reset()
	return key
}

// sortKeyPtr is sortKey of *s, or nil (which sorts first) for nil.
func sortKeyPtr(s *string) *string {
	if s == nil {
		return nil
	}
	k := sortKey(*s)
	return &k
}
