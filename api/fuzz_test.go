package api

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/jsregex"
)

// The fuzz targets send arbitrary bodies through the real handlers and
// store: any input may be refused, but never with a 5xx or a panic.
// Seeds live in testdata/fuzz/<target>/.

func FuzzCreateWorkflow(f *testing.F) {
	f.Add([]byte(`{"name":"x","runNow":true,"config":{"seeds":[{"url":"https://example.com/"}]}}`))
	e := newEnv(f)
	path := e.orgPath("/crawlconfigs/")
	f.Fuzz(func(t *testing.T, body []byte) {
		if r, _ := e.request(asCrawler, "POST", path, body); r.Code >= 500 {
			t.Fatalf("%d for %q: %s", r.Code, body, r.Body)
		}
	})
}

func FuzzPatchWorkflow(f *testing.F) {
	f.Add([]byte(`{"name":null,"tags":[]}`))
	e := newEnv(f)
	cid := e.createWorkflow(asCrawler, workflowBody("fuzzed", false))["id"].(string)
	path := e.orgPath("/crawlconfigs/" + cid)
	f.Fuzz(func(t *testing.T, body []byte) {
		if r, _ := e.request(asCrawler, "PATCH", path, body); r.Code >= 500 {
			t.Fatalf("%d for %q: %s", r.Code, body, r.Body)
		}
	})
}

func FuzzLogin(f *testing.F) {
	f.Add("username=admin%40example.com&password=PASSW0RD%21&grant_type=password", "application/x-www-form-urlencoded")
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body, contentType string) {
		req := httptest.NewRequest("POST", "/api/auth/jwt/login", strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q (%s): %s", rec.Code, body, contentType, rec.Body)
		}
	})
}

// asSentInJSON is s as a JSON body carries it: encoding/json replaces
// each byte that is not UTF-8 with U+FFFD, so the server never sees it.
func asSentInJSON(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// FuzzFilenameTemplate: any WACZ name template is refused or stays inside
// the org's storage folder, on create and on update.
func FuzzFilenameTemplate(f *testing.F) {
	for _, s := range []string{"@ts-@hostsuffix.wacz", "../../OTHER-ORG/@ts.wacz", "/abs.wacz", "a/./b.wacz", "x\x00y", "crawls/@id.wacz"} {
		f.Add(s)
	}
	e := newEnv(f)
	cid := e.createWorkflow(asCrawler, workflowBody("fuzzed", false))["id"].(string)
	f.Fuzz(func(t *testing.T, template string) {
		body := workflowBody("template", false)
		body["crawlFilenameTemplate"] = template
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{"POST", e.orgPath("/crawlconfigs/"), body},
			{"PATCH", e.orgPath("/crawlconfigs/" + cid), map[string]any{"crawlFilenameTemplate": template}},
		} {
			r, err := e.request(asCrawler, req.method, req.path, req.body)
			if err != nil {
				t.Skip(err) // not JSON-encodable
			}
			if r.Code >= 500 || r.Code == 200 && storageNameProblem(asSentInJSON(template)) != "" {
				t.Fatalf("%s %q: %d %s", req.method, template, r.Code, r.Body)
			}
		}
	})
}

// FuzzRegex: an include or exclude pattern is refused, or it is one the
// crawler compiles; the queue and exclusion routes never fail on one.
func FuzzRegex(f *testing.F) {
	for _, s := range []string{"(", `\.pdf$`, "(?i)x", "(?<n>a)\\k<n>", "[]", "a{2,1}", "^https?://(www\\.)?e\\.com/(?!x)"} {
		f.Add(s)
	}
	e := newEnv(f)
	_, crawlID := e.startCrawl(asCrawler, "fuzzed")
	e.setState(crawlID, "running")
	f.Fuzz(func(t *testing.T, pattern string) {
		body := workflowBody("regex", false)
		body["config"].(map[string]any)["exclude"] = []string{pattern}
		r, err := e.request(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body)
		if err != nil {
			t.Skip(err)
		}
		if _, cerr := jsregex.Compile(asSentInJSON(pattern)); r.Code >= 500 || r.Code == 200 && cerr != nil {
			t.Fatalf("exclude %q: %d %s", pattern, r.Code, r.Body)
		}
		q := url.QueryEscape(pattern)
		for _, call := range []struct{ method, path string }{
			{"GET", "/crawls/" + crawlID + "/queue?offset=0&count=5&regex=" + q},
			{"GET", "/crawls/" + crawlID + "/queueMatchAll?regex=" + q},
			{"POST", "/crawls/" + crawlID + "/exclusions?regex=" + q},
			{"DELETE", "/crawls/" + crawlID + "/exclusions?regex=" + q},
		} {
			if r, _ := e.request(asCrawler, call.method, e.orgPath(call.path), nil); r.Code >= 500 {
				t.Fatalf("%s %s: %d %s", call.method, call.path, r.Code, r.Body)
			}
		}
	})
}

// FuzzSchedule: a schedule is refused, or it is five-field cron whose
// runs are at least a minute apart.
func FuzzSchedule(f *testing.F) {
	for _, s := range []string{"@every 1s", "* * * * *", "*/5 * * * *", "@hourly", "0 0 31 2 *", "* * * * * *", "TZ=UTC * * * * *"} {
		f.Add(s)
	}
	e := newEnv(f)
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, schedule string) {
		body := workflowBody("schedule", false)
		body["schedule"] = schedule
		r, err := e.request(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body)
		if err != nil {
			t.Skip(err)
		}
		if r.Code >= 500 {
			t.Fatalf("%q: %d %s", schedule, r.Code, r.Body)
		}
		if r.Code != 200 || strings.TrimSpace(schedule) == "" {
			return
		}
		sched, err := parseSchedule(asSentInJSON(schedule))
		if err != nil {
			t.Fatalf("%q accepted but does not parse: %v", schedule, err)
		}
		first := sched.Next(from)
		if second := sched.Next(first); !second.IsZero() && second.Sub(first) < time.Minute {
			t.Fatalf("%q runs at %v and %v", schedule, first, second)
		}
	})
}

// FuzzPagination: any page, pageSize, offset or count is refused or
// served, never a 5xx.
func FuzzPagination(f *testing.F) {
	for _, s := range [][2]string{{"4611686018427387904", "1000"}, {"1", "0"}, {"-1", "10"}, {"2", "9999999999999"}, {"", ""}, {"1e3", "x"}} {
		f.Add(s[0], s[1])
	}
	e := newEnv(f)
	_, crawlID := e.startCrawl(asCrawler, "paged")
	f.Fuzz(func(t *testing.T, page, size string) {
		p, s := url.QueryEscape(page), url.QueryEscape(size)
		for _, path := range []string{
			"/crawlconfigs?page=" + p + "&pageSize=" + s,
			"/crawls?page=" + p + "&pageSize=" + s,
			"/all-crawls?page=" + p + "&pageSize=" + s,
			"/crawls/" + crawlID + "/errors?page=" + p + "&pageSize=" + s,
			"/crawls/" + crawlID + "/queue?offset=" + p + "&count=" + s,
		} {
			if r, _ := e.request(asCrawler, "GET", e.orgPath(path), nil); r.Code >= 500 {
				t.Fatalf("GET %s: %d %s", path, r.Code, r.Body)
			}
		}
	})
}

// listFilters are the query parameters of the GET routes that take no
// path parameter but the org: every list and its filters (the
// superuser's over all orgs too), as the routes table declares them.
func listFilters(e *env) []string {
	var out []string
	for _, r := range e.srv.routes() {
		path := strings.Replace(r.path, ":oid", e.org.String(), 1)
		if r.method != "GET" || strings.Contains(path, ":") {
			continue
		}
		for _, q := range r.query {
			out = append(out, path+"?"+q+"=")
		}
	}
	return out
}

// FuzzListFilters: any value of any list filter (a name prefix that is
// not UTF-8, a NUL, regex syntax, a bad id or number) is refused or
// served, never a 5xx. `GET /collections?namePrefix=%FF` was a 500.
func FuzzListFilters(f *testing.F) {
	e := newEnv(f)
	e.startCrawl(asCrawler, "filtered")
	e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "a collection"}, 200)
	filters := listFilters(e)
	values := []string{"\xff", "a\x00b", "(", "a", "-1", "\u00e9", "\xed\xa0\x80"}
	for i := range filters { // one seed each, so the fuzzing starts soon
		f.Add(uint16(i), values[i%len(values)])
	}
	f.Fuzz(func(t *testing.T, which uint16, value string) {
		path := filters[int(which)%len(filters)] + url.QueryEscape(value)
		if r, _ := e.request(asAdmin, "GET", path, nil); r.Code >= 500 {
			t.Fatalf("GET %s: %d %s", path, r.Code, r.Body)
		}
	})
}
