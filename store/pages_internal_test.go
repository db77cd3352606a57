package store

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestPageFilterAndSort(t *testing.T) {
	oid := uuid.New()
	yes, two := true, 2
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	seedsFirst := bson.D{{Key: "isSeed", Value: -1}, {Key: "ts", Value: 1}, {Key: "_id", Value: 1}}
	byURL := bson.D{{Key: "url", Value: 1}, {Key: "_id", Value: 1}}
	tests := []struct {
		name       string
		q          PageQuery
		wantFilter bson.M
		wantSort   bson.D
		wantErr    error
	}{
		{"default: seeds first, then ts", PageQuery{CrawlIDs: []string{"c"}},
			bson.M{"crawl_id": "c"}, seedsFirst, nil},
		{"org and several items", PageQuery{OID: &oid, CrawlIDs: []string{"a", "b"}},
			bson.M{"crawl_id": bson.M{"$in": []string{"a", "b"}}, "oid": oid}, seedsFirst, nil},
		{"url search is a lower bound in url order", PageQuery{CrawlIDs: []string{"c"}, Search: "https://x/"},
			bson.M{"crawl_id": "c", "url": bson.M{"$gte": "https://x/"}}, byURL, nil},
		{"word search matches titles", PageQuery{CrawlIDs: []string{"c"}, Search: "a.b"},
			bson.M{"crawl_id": "c", "title": bson.M{"$regex": `a\.b`, "$options": "i"}}, seedsFirst, nil},
		{"url is exact; urlPrefix ignored", PageQuery{CrawlIDs: []string{"c"}, URL: "https://x/", URLPrefix: "https://"},
			bson.M{"crawl_id": "c", "url": "https://x/"}, seedsFirst, nil},
		{"urlPrefix is a lower bound", PageQuery{CrawlIDs: []string{"c"}, URLPrefix: "https://"},
			bson.M{"crawl_id": "c", "url": bson.M{"$gte": "https://"}}, byURL, nil},
		{"ts, isSeed, depth are equalities", PageQuery{CrawlIDs: []string{"c"}, TS: &ts, IsSeed: &yes, Depth: &two},
			bson.M{"crawl_id": "c", "ts": ts, "isSeed": true, "depth": 2}, seedsFirst, nil},
		{"sortBy with default direction -1", PageQuery{CrawlIDs: []string{"c"}, SortBy: "title"},
			bson.M{"crawl_id": "c"}, bson.D{{Key: "title", Value: -1}, {Key: "_id", Value: 1}}, nil},
		{"sortBy ascending", PageQuery{CrawlIDs: []string{"c"}, SortBy: "url", SortDirection: 1},
			bson.M{"crawl_id": "c"}, bson.D{{Key: "url", Value: 1}, {Key: "_id", Value: 1}}, nil},
		{"unknown sort key", PageQuery{CrawlIDs: []string{"c"}, SortBy: "bogus"}, nil, nil, errInvalidPageSort},
		{"QA sort key needs QA", PageQuery{CrawlIDs: []string{"c"}, SortBy: "textMatch"}, nil, nil, errInvalidPageSort},
		{"bad direction", PageQuery{CrawlIDs: []string{"c"}, SortBy: "url", SortDirection: 2}, nil, nil, errInvalidPageOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, s, err := pageFilterAndSort(tt.q)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				if Detail(err) == "" {
					t.Fatalf("no detail in %v", err)
				}
				return
			}
			if !reflect.DeepEqual(f, tt.wantFilter) {
				t.Errorf("filter %v, want %v", f, tt.wantFilter)
			}
			if !reflect.DeepEqual(s, tt.wantSort) {
				t.Errorf("sort %v, want %v", s, tt.wantSort)
			}
		})
	}
}

func TestPageFromRecord(t *testing.T) {
	oid := uuid.New()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	crawlerID := "5f0c6b8e-4f7d-4c55-9c4e-5d1f3a0b2c11"
	src := PageSource{OID: oid, CrawlID: "crawl-1"}
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	tests := []struct {
		name string
		raw  string
		src  PageSource
		ok   bool
		want func(p *Page) Page
	}{
		{"full record from redis", `{"id":"` + crawlerID + `","url":"https://a/","title":"A","loadState":4,"ts":"2026-01-02T03:04:05.123Z","mime":"text/html","status":200,"depth":0,"favIconUrl":"https://a/f.ico","seed":true,"filename":"x.wacz"}`,
			src, true, func(*Page) Page {
				return Page{ID: uuid.MustParse(crawlerID), OID: oid, CrawlID: "crawl-1", URL: "https://a/", Title: str("A"),
					TS: time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC), LoadState: num(4), Status: num(200), Mime: str("text/html"),
					Filename: str("x.wacz"), Depth: num(0), FavIconURL: str("https://a/f.ico"), IsSeed: true}
			}},
		{"defaults: mime text/html, status 200, ts now, derived id", `{"id":"p1","url":"https://b/","loadState":2,"title":"B"}`,
			src, true, func(p *Page) Page {
				return Page{ID: p.ID, OID: oid, CrawlID: "crawl-1", URL: "https://b/", Title: str("B"), TS: now,
					LoadState: num(2), Status: num(200), Mime: str("text/html")}
			}},
		{"a file: loadState 2 and not html", `{"url":"https://c/x.pdf","loadState":2,"mime":"application/pdf","status":200}`,
			src, true, func(p *Page) Page {
				return Page{ID: p.ID, OID: oid, CrawlID: "crawl-1", URL: "https://c/x.pdf", TS: now, LoadState: num(2),
					Status: num(200), Mime: str("application/pdf"), IsFile: true}
			}},
		{"a file: loadState 2, no title, status 200", `{"url":"https://c/y","loadState":2,"mime":null}`,
			src, true, func(p *Page) Page {
				return Page{ID: p.ID, OID: oid, CrawlID: "crawl-1", URL: "https://c/y", TS: now, LoadState: num(2),
					Status: num(200), IsFile: true}
			}},
		{"an error: loadState 0 keeps no status", `{"url":"https://d/","loadState":0,"title":"D"}`,
			src, true, func(p *Page) Page {
				return Page{ID: p.ID, OID: oid, CrawlID: "crawl-1", URL: "https://d/", Title: str("D"), TS: now, LoadState: num(0),
					Mime: str("text/html"), IsError: true}
			}},
		{"wacz line: file name and seed from the member", `{"id":"` + crawlerID + `","url":"https://e/","title":"E","filename":"other.wacz"}`,
			PageSource{OID: oid, CrawlID: "crawl-1", Filename: "f.wacz", Seed: true, Key: "k"}, true, func(*Page) Page {
				return Page{ID: uuid.MustParse(crawlerID), OID: oid, CrawlID: "crawl-1", URL: "https://e/", Title: str("E"), TS: now,
					Mime: str("text/html"), Filename: str("f.wacz"), IsSeed: true}
			}},
		{"header line", `{"format":"json-pages-1.0","id":"pages","title":"All Pages"}`, src, false, nil},
		{"not json", `{"url":`, src, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := PageFromRecord([]byte(tt.raw), tt.src, now)
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if want := tt.want(&p); !reflect.DeepEqual(p, want) {
				t.Errorf("got  %+v\nwant %+v", p, want)
			}
		})
	}
}

func TestPageIDs(t *testing.T) {
	crawlerID := "5f0c6b8e-4f7d-4c55-9c4e-5d1f3a0b2c11"
	raw := []byte(`{"id":"` + crawlerID + `","url":"https://a/"}`)
	now := time.Now()
	up := PageSource{CrawlID: "upload-1", NewIDs: true, Key: "f.wacz:pages/pages.jsonl:1"}
	a, _ := PageFromRecord(raw, up, now)
	b, _ := PageFromRecord(raw, up, now)
	if a.ID == uuid.MustParse(crawlerID) || a.ID != b.ID {
		t.Errorf("upload page ids %v, %v: want a new id, the same on each read", a.ID, b.ID)
	}
	up.Key = "f.wacz:pages/pages.jsonl:2"
	if c, _ := PageFromRecord(raw, up, now); c.ID == a.ID {
		t.Error("two lines of an upload got one id")
	}
}
