package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// TestPagesStore: a batch added twice is stored once; the list filters
// and sorts on the server; a page is found only in its org and item; the
// counters count files, errors and distinct URLs; deleting the crawl and
// ending it failed leave no pages.
func TestPagesStore(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	oid := uuid.New()
	if err := m.CreateOrg(ctx, &store.Org{ID: oid, Name: "pages"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, id := range []string{"c1", "c2"} {
		if err := m.AddCrawl(ctx, &store.Crawl{ID: id, OID: oid, State: store.StateRunning, Started: now}); err != nil {
			t.Fatal(err)
		}
	}
	recs := []string{
		`{"url":"https://a/","title":"Home","loadState":4,"ts":"2026-01-01T00:00:02Z","depth":0,"seed":true}`,
		`{"url":"https://a/x.pdf","loadState":2,"mime":"application/pdf","ts":"2026-01-01T00:00:01Z","depth":1}`,
		`{"url":"https://a/gone","title":"Gone","loadState":0,"ts":"2026-01-01T00:00:03Z","depth":1}`,
		`{"url":"https://a/","title":"Home again","loadState":4,"ts":"2026-01-01T00:00:04Z","depth":1}`,
	}
	var pages []store.Page
	for _, r := range recs {
		p, ok := store.PageFromRecord([]byte(r), store.PageSource{OID: oid, CrawlID: "c1"}, now)
		if !ok {
			t.Fatal(r)
		}
		pages = append(pages, p)
	}
	if n, err := m.AddPages(ctx, pages); err != nil || n != 4 {
		t.Fatalf("AddPages: %d, %v", n, err)
	}
	if n, err := m.AddPages(ctx, pages); err != nil || n != 0 {
		t.Fatalf("AddPages again: %d, %v", n, err)
	}
	other, _ := store.PageFromRecord([]byte(recs[0]), store.PageSource{OID: oid, CrawlID: "c2", Key: "other"}, now)
	if _, err := m.AddPages(ctx, []store.Page{other}); err != nil {
		t.Fatal(err)
	}

	list := func(q store.PageQuery) []string {
		t.Helper()
		q.OID, q.CrawlIDs = &oid, []string{"c1"}
		items, total, err := m.ListPages(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if total != int64(len(items)) && q.PageSize == 0 {
			t.Errorf("total %d for %d items", total, len(items))
		}
		urls := make([]string, len(items))
		for i, p := range items {
			urls[i] = p.URL + "@" + p.TS.Format("05")
		}
		return urls
	}
	no, one := false, 1
	for name, tc := range map[string]struct {
		q    store.PageQuery
		want string
	}{
		"default order": {store.PageQuery{}, "[https://a/@02 https://a/x.pdf@01 https://a/gone@03 https://a/@04]"},
		"not seeds, depth 1 by url": {store.PageQuery{IsSeed: &no, Depth: &one, SortBy: "url", SortDirection: 1},
			"[https://a/@04 https://a/gone@03 https://a/x.pdf@01]"},
		"title words":     {store.PageQuery{Search: "HOME"}, "[https://a/@02 https://a/@04]"},
		"url lower bound": {store.PageQuery{Search: "https://a/h"}, "[https://a/x.pdf@01]"},
		"second page":     {store.PageQuery{Paging: store.Paging{Page: 2, PageSize: 3}}, "[https://a/@04]"},
	} {
		if got := list(tc.q); fmtList(got) != tc.want {
			t.Errorf("%s: %v, want %s", name, got, tc.want)
		}
	}
	if _, err := m.GetPage(ctx, oid, "c1", pages[0].ID); err != nil {
		t.Error(err)
	}
	for _, miss := range []struct {
		oid uuid.UUID
		id  string
	}{{oid, "c2"}, {uuid.New(), "c1"}} {
		if _, err := m.GetPage(ctx, miss.oid, miss.id, pages[0].ID); store.Detail(err) != "page_not_found" {
			t.Errorf("page of c1 as %v: %v", miss, err)
		}
	}
	if _, _, err := m.ListPages(ctx, store.PageQuery{CrawlIDs: []string{"c1"}, SortBy: "bogus"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bogus sort: %v", err)
	}

	pc, err := m.RecountPages(ctx, "c1")
	if err != nil || pc != (store.PageCounts{PageCount: 4, UniquePageCount: 3, FilePageCount: 1, ErrorPageCount: 1}) {
		t.Errorf("counts %+v, %v", pc, err)
	}
	if c, _ := m.GetCrawlByID(ctx, "c1"); c.PageCounts != pc {
		t.Errorf("stored counts %+v", c.PageCounts)
	}

	if _, err := m.DeleteCrawls(ctx, oid, []string{"c1"}); err != nil {
		t.Fatal(err)
	}
	if got := list(store.PageQuery{}); len(got) != 0 {
		t.Errorf("pages of a deleted crawl: %v", got)
	}
	finished := now
	if _, _, err := m.SetCrawlState(ctx, "c2", store.StateFailed, nil, store.CrawlStateExtra{Finished: &finished}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RunPostCrawlTasks(ctx, "c2"); err != nil {
		t.Fatal(err)
	}
	if items, _, _ := m.ListPages(ctx, store.PageQuery{CrawlIDs: []string{"c2"}}); len(items) != 0 {
		t.Errorf("a failed crawl kept %d pages", len(items))
	}
}

func fmtList(s []string) string {
	out := "["
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out + "]"
}
