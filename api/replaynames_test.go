package api

import (
	"testing"

	"github.com/trawlerhq/trawler/store"
)

// TestNameResources: replay.json's pages name their WACZ as its resource
// does, or ReplayWeb.page finds no archive for them.
func TestNameResources(t *testing.T) {
	str := func(s string) *string { return &s }
	pages := []pageDocOut{{Filename: str("a-0.wacz")}, {Filename: str("gone.wacz")}, {}}
	nameResources(pages, []store.CrawlFile{{Filename: "manual-1/a-0.wacz"}, {Filename: "b.wacz"}})
	if got := *pages[0].Filename; got != "manual-1/a-0.wacz" {
		t.Errorf("page in a resource: filename %q", got)
	}
	if got := *pages[1].Filename; got != "gone.wacz" {
		t.Errorf("page in no resource: filename %q, want it as it was", got)
	}
	if pages[2].Filename != nil {
		t.Errorf("page without a filename got %q", *pages[2].Filename)
	}
}
