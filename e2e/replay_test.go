package e2e

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trawlerhq/trawler/e2e/e2etest"
)

// replaySite is a simulated site of about 20 pages, each with an image
// and a stylesheet, crawled by two instances.
const replaySite = "https://example.com/?sim-pages=20&sim-page-ms=50&sim-links=4"

// archivedPage is a page as pages.jsonl lists it.
type archivedPage struct {
	URL   string `json:"url"`
	Title string `json:"title"`
}

// TestReplayInTheDashboard opens the dashboard's Replay view of a finished
// two-instance crawl, of an uploaded WACZ and of a collection, as a person
// would, and checks inside ReplayWeb.page's frames that archived pages
// show their title, image and stylesheet, with no failed request and no
// console error anywhere on the way.
func TestReplayInTheDashboard(t *testing.T) {
	needStack(t)
	c := e2etest.LoginAs(t, stack.url, nil, stack.user, stack.password)
	oid := c.OrgID()
	crawlID := c.StartCrawl(oid, replaySite, 2)
	replay := c.WaitCrawl(oid, crawlID, 4*time.Minute)
	if len(replay.Resources) < 2 {
		t.Fatalf("a 2-instance crawl has %d files, want one per instance", len(replay.Resources))
	}
	var pages []archivedPage
	var first []byte
	for i, r := range replay.Resources {
		if !strings.HasPrefix(r.Path, "/data/") {
			t.Fatalf("file %s is linked at %s, not on the dashboard's origin under /data/", r.Name, r.Path)
		}
		data := e2etest.Download(t, stack.url, r.Path)
		if i == 0 {
			first = data
		}
		pages = append(pages, pagesOf(t, r.Name, data)...)
	}
	if len(pages) < 15 {
		t.Fatalf("the crawl archived %d pages, want about 20", len(pages))
	}

	tb := newTab(t)
	// ReplayWeb.page asks its own service worker about a collection before
	// the worker has loaded it; the worker answers 404 and the viewer
	// asks again. That is the viewer's business, not trawler's.
	tb.tolerate("/replay/w/api/c/")
	tb.do("logging in", 60*time.Second,
		chromedp.Navigate(stack.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#login input[name=username]`)),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=username]`), stack.user),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=password]`), stack.password),
		chromedp.Click(chromedp.CSS(`#login button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#crawl-list`)))

	// Five pages spread over the crawl, so that both instances' WACZ
	// files are read.
	for i := 0; i < 5; i++ {
		tb.replays("crawls", crawlID, pages[i*(len(pages)-1)/4])
	}
	tb.screenshot("crawl-replay")
	tb.audit("replay view")
	tb.downloadsOneWACZ(crawlID)

	uploadID := upload(c, oid, "replayed-upload.wacz", first)
	tb.replays("uploads", uploadID, pagesOf(t, "upload", first)[0])

	var coll struct {
		ID string `json:"id"`
	}
	c.JSON("POST", "/api/orgs/"+oid+"/collections", map[string]any{
		"name": "Replayed collection", "crawlIds": []string{crawlID, uploadID},
	}, http.StatusOK, &coll)
	tb.replays("collections", coll.ID, pages[len(pages)-1])
	tb.screenshot("collection-replay")
}

// replays opens the Replay view of an item at one archived page and waits
// until the archived page, inside ReplayWeb.page's frames, has its title,
// its image drawn and its stylesheet applied.
func (tb *tab) replays(kind, id string, p archivedPage) {
	tb.t.Helper()
	hash := fmt.Sprintf("#/%s/%s/replay?url=%s", kind, id, url.QueryEscape(p.URL))
	eval[bool](tb, fmt.Sprintf(`(location.hash = %q, true)`, hash))
	tb.do("opening the replay of "+p.URL, 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`replay-web-page`)))
	var last archivedView
	deadline := time.Now().Add(90 * time.Second)
	for {
		last = eval[archivedView](tb, archivedPageJS)
		if last.Title == p.Title && last.Image && last.Styled {
			tb.t.Logf("%s %s: replayed %q from %s", kind, id, last.Title, last.URL)
			return
		}
		if time.Now().After(deadline) {
			tb.screenshot("failed-replay")
			tb.t.Fatalf("%s %s: the archived page %s (%q) did not replay within 90 s; last seen: %+v",
				kind, id, p.URL, p.Title, last)
		}
		time.Sleep(200 * time.Millisecond) // polling the page's frames, which send no event
	}
}

// downloadsOneWACZ follows the view's download link, as a browser would
// (the token is in the link), and checks it gives the item as one WACZ.
func (tb *tab) downloadsOneWACZ(id string) {
	tb.t.Helper()
	href := eval[string](tb, `document.getElementById("replay-download").href`)
	data := e2etest.Download(tb.t, stack.url, href)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		tb.t.Fatalf("the download of %s is not a zip: %v", id, err)
	}
	if _, err := zr.Open("datapackage.json"); err != nil {
		tb.t.Fatalf("the download of %s has no datapackage.json: %v", id, err)
	}
}

// archivedView is what the archived page's document shows.
type archivedView struct {
	Found  bool   `json:"found"`
	URL    string `json:"url"`
	Title  string `json:"title"`
	Image  bool   `json:"image"`
	Styled bool   `json:"styled"`
}

// archivedPageJS finds the archived page's document: the innermost
// same-origin frame whose src is a replay URL (".../mp_/<url>"),
// searching shadow roots too, since ReplayWeb.page's elements use them.
const archivedPageJS = `(() => {
  const find = (root) => {
    for (const f of root.querySelectorAll("iframe")) {
      let d = null;
      try { d = f.contentDocument; } catch (e) { continue; }
      if (!d) continue;
      const inner = find(d);
      if (inner) return inner;
      // The archived page's own URL is rewritten to the original; the
      // frame's address is the replay URL.
      if (/mp_\//.test(f.src)) return d;
    }
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) {
        const inner = find(el.shadowRoot);
        if (inner) return inner;
      }
    }
    return null;
  };
  const d = find(document);
  if (!d || d.readyState !== "complete") return { found: !!d };
  const img = d.querySelector("img");
  const sheets = [...d.styleSheets].filter((s) => { try { return s.href && s.cssRules.length > 0; } catch (e) { return false; } });
  return {
    found: true, url: d.URL, title: d.title,
    image: !!img && img.complete && img.naturalWidth > 0,
    styled: sheets.length > 0,
  };
})()`

// upload adds a WACZ as an upload and returns its id.
func upload(c *e2etest.Client, oid, filename string, data []byte) string {
	c.T.Helper()
	q := url.Values{"filename": {filename}, "name": {"Replayed upload"}}
	var out struct {
		ID string `json:"id"`
	}
	c.Do("PUT", "/api/orgs/"+oid+"/uploads/stream?"+q.Encode(), bytes.NewReader(data), "application/octet-stream", http.StatusOK, &out)
	if out.ID == "" {
		c.T.Fatal("the upload has no id")
	}
	return out.ID
}

// pagesOf reads a WACZ's pages/pages.jsonl.
func pagesOf(t *testing.T, name string, wacz []byte) []archivedPage {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(wacz), int64(len(wacz)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	f, err := zr.Open("pages/pages.jsonl")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer f.Close()
	var pages []archivedPage
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p archivedPage
		if json.Unmarshal(sc.Bytes(), &p) == nil && p.URL != "" {
			pages = append(pages, p)
		}
	}
	if len(pages) == 0 {
		t.Fatalf("%s: pages.jsonl lists no page", name)
	}
	return pages
}
