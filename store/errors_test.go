package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/trawlerhq/trawler/store"
)

// The sentinels callers branch on keep the kind the API maps to a status
// and the detail users see, also when wrapped with context.
func TestSentinelsKeepKindAndDetail(t *testing.T) {
	for _, tt := range []struct {
		err    error
		kind   error
		detail string
	}{
		{store.ErrCrawlExists, store.ErrConflict, "crawl_exists"},
		{store.ErrCrawlAlreadyRunning, store.ErrConflict, "crawl_already_running"},
		{store.ErrNoSuchOrgUser, store.ErrNotFound, "no_such_org_user"},
		{store.ErrLastOwner, store.ErrConflict, "last_owner"},
	} {
		wrapped := fmt.Errorf("doing something: %w", tt.err)
		if !errors.Is(wrapped, tt.err) || !errors.Is(wrapped, tt.kind) || store.Detail(wrapped) != tt.detail {
			t.Errorf("%v: is itself %v, is %v %v, detail %q; want %q",
				tt.err, errors.Is(wrapped, tt.err), tt.kind, errors.Is(wrapped, tt.kind), store.Detail(wrapped), tt.detail)
		}
	}
}
