package api

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// want422 checks a 422 whose body names loc and contains msg.
func (e *env) want422(r resp, loc, msg string) {
	e.t.Helper()
	if r.Code != 422 || !strings.Contains(string(r.Body), loc) || !strings.Contains(string(r.Body), msg) {
		e.t.Fatalf("got %d %s, want 422 with %s and %q", r.Code, r.Body, loc, msg)
	}
}

// workflowCount is how many workflows the default org has.
func (e *env) workflowCount() int {
	e.t.Helper()
	return int(e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs"), nil, 200)["total"].(float64))
}

// A crawler-role user could set a WACZ name template that leaves the
// org's folder and so write over or delete another org's files on a
// shared bucket. Such templates are a 422 naming the field, on create and
// on update, and a template stored before the check launches under the
// default name.
func TestFilenameTemplateStaysInTheOrgsFolder(t *testing.T) {
	e := newEnv(t)
	bad := map[string]string{
		"../../OTHER-ORG/@ts.wacz": `must not contain \"..\"`,
		"crawls/../../x.wacz":      `must not contain \"..\"`,
		"/abs/@ts.wacz":            `must not start with \"/\"`,
		`..\other\@ts.wacz`:        `must not contain \"..\"`,
		`a\b.wacz`:                 `must not contain \"\\\"`,
		"@ts\n.wacz":               "must not contain control characters",
		"@ts\x00.wacz":             "must not contain control characters",
		strings.Repeat("a", 257):   "at most 256 characters",
	}
	cid := e.createWorkflow(asCrawler, workflowBody("ok", false))["id"].(string)
	for template, msg := range bad {
		body := workflowBody("traversal", true)
		body["crawlFilenameTemplate"] = template
		e.want422(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body), `"loc":["body","crawlFilenameTemplate"]`, msg)
		e.want422(e.do(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+cid), map[string]any{"crawlFilenameTemplate": template}),
			`"loc":["body","crawlFilenameTemplate"]`, msg)
	}
	if n := e.workflowCount(); n != 1 {
		t.Fatalf("%d workflows, want only the valid one", n)
	}
	if calls := e.launcher.callList(); len(calls) != 0 {
		t.Fatalf("launcher called: %v", calls)
	}

	good := workflowBody("subfolder", true)
	good["crawlFilenameTemplate"] = "crawls/@ts-@hostsuffix.wacz"
	e.createWorkflow(asCrawler, good)

	// A bad template written before the check existed.
	_, err := e.store.Raw().Collection("crawl_configs").UpdateOne(context.Background(),
		bson.M{"_id": uuid.MustParse(cid)}, bson.M{"$set": bson.M{"crawlFilenameTemplate": "../../OTHER-ORG/@ts.wacz"}})
	if err != nil {
		t.Fatal(err)
	}
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawlconfigs/"+cid+"/run"), nil, 200)
	names := []string{}
	for _, l := range e.launcher.launched {
		names = append(names, l.Spec.StoreFilename)
	}
	if want := []string{"crawls/@ts-@hostsuffix.wacz", "@ts-@hostsuffix.wacz"}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("launched with file names %q, want %q", names, want)
	}
}

// The crawler compiles include and exclude patterns as JavaScript
// regexes and exits 17 on one it rejects, crash-looping forever; such a
// pattern is a 422 wherever it can be given.
func TestRegexesAreCheckedWithTheCrawlersRules(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		loc    string
		config map[string]any
	}{
		{`"loc":["body","config","exclude",0]`, map[string]any{"exclude": []string{"("}}},
		{`"loc":["body","config","include",1]`, map[string]any{"include": []string{`\.html$`, "[a-"}}},
		{`"loc":["body","config","exclude",0]`, map[string]any{"exclude": "(?i)private"}}, // a string is a list of one
		{`"loc":["body","config","seeds",0,"exclude",0]`, map[string]any{"seeds": []any{map[string]any{"url": "https://e.com/", "exclude": "*.pdf"}}}},
		{`"loc":["body","config","seeds",0,"include",0]`, map[string]any{"seeds": []any{map[string]any{"url": "https://e.com/", "include": []string{`(?P<n>x)`}}}}},
	} {
		body := workflowBody("rx", true)
		cfg := body["config"].(map[string]any)
		for k, v := range tc.config {
			cfg[k] = v
		}
		e.want422(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body), tc.loc, "invalid regular expression")
	}
	if n := e.workflowCount(); n != 0 {
		t.Fatalf("%d workflows created from invalid patterns", n)
	}

	// JavaScript syntax that RE2 lacks is what the crawler takes.
	body := workflowBody("lookahead", false)
	body["config"].(map[string]any)["exclude"] = []string{`^https://e\.com/(?!keep/)`, `(?<=/)page/\d+`}
	cid := e.createWorkflow(asCrawler, body)["id"].(string)
	e.want422(e.do(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+cid),
		map[string]any{"config": map[string]any{"seeds": []any{map[string]any{"url": "https://e.com/"}}, "exclude": "a**"}}),
		`"loc":["body","config","exclude",0]`, "invalid regular expression")

	// Live exclusions of a running crawl.
	_, crawlID := e.startCrawl(asCrawler, "live")
	e.setState(crawlID, "running")
	path := e.orgPath("/crawls/" + crawlID + "/exclusions?regex=")
	e.want422(e.do(asCrawler, "POST", path+url.QueryEscape("("), nil), `"loc":["query","regex"]`, "invalid regular expression")
	e.mustJSON(asCrawler, "POST", path+url.QueryEscape(`/(?!keep)`), nil, 200)
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/crawls/"+crawlID+"/queue?offset=0&count=10&regex=("), nil), 400, "invalid_regex")
}

// "@every 1s" started 11 crawls in 45 s. Schedules are five-field cron,
// at most once a minute; a schedule stored before the check is skipped.
func TestSchedulesRunAtMostOnceAMinute(t *testing.T) {
	e := newEnv(t)
	for _, sched := range []string{"@every 1s", "@every 1m", "@EVERY 5m", "* * * * * *", "*/10 * * * * *", "TZ=UTC 0 * * * *", "every day"} {
		body := workflowBody("sched", false)
		body["schedule"] = sched
		e.want422(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body), `"loc":["body","schedule"]`, "invalid cron schedule")
	}
	cids := map[string]string{}
	for _, sched := range []string{"", "*/5 * * * *", "0 3 * * 1-5", "@hourly", "@daily"} {
		body := workflowBody("sched "+sched, false)
		body["schedule"] = sched
		cids[sched] = e.createWorkflow(asCrawler, body)["id"].(string)
	}
	e.want422(e.do(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+cids["@hourly"]), map[string]any{"schedule": "@every 1s"}),
		`"loc":["body","schedule"]`, "@every is not supported")

	_, err := e.store.Raw().Collection("crawl_configs").UpdateOne(context.Background(),
		bson.M{"_id": uuid.MustParse(cids["@daily"])}, bson.M{"$set": bson.M{"schedule": "@every 1s"}})
	if err != nil {
		t.Fatal(err)
	}
	sc := e.srv.Scheduler()
	if err := sc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sc.Stop()
	sc.mu.Lock()
	_, daily := sc.entries[uuid.MustParse(cids["@daily"])]
	n := len(sc.entries)
	sc.mu.Unlock()
	if daily || n != 3 {
		t.Fatalf("scheduled %d workflows (the @every one: %v), want the 3 valid schedules", n, daily)
	}
}

// page=2^62 overflowed the skip into a 500; page and pageSize are bounded
// so that the skip stays within a billion.
func TestPaginationIsBounded(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/crawlconfigs", "/crawls", "/all-crawls"} {
		for q, want := range map[string]string{
			"?page=4611686018427387904":   `"loc":["query","page"],"msg":"ensure this value is less than or equal to 1000001"`,
			"?page=1000002":               `"loc":["query","page"],"msg":"ensure this value is less than or equal to 1000001"`,
			"?page=3&pageSize=1000000000": `"loc":["query","pageSize"],"msg":"ensure this value is less than or equal to 10000"`,
			"?pageSize=0":                 `"loc":["query","pageSize"],"msg":"ensure this value is greater than or equal to 1"`,
			"?page=0":                     `"loc":["query","page"],"msg":"ensure this value is greater than or equal to 1"`,
			"?page=99999999999999999999":  `"loc":["query","page"],"msg":"value is not a valid integer"`,
			"?page=100000002&pageSize=10": `"loc":["query","page"],"msg":"ensure this value is less than or equal to 100000001"`,
		} {
			e.want422(e.do(asViewer, "GET", e.orgPath(path+q), nil), want, "")
		}
		out := e.mustJSON(asViewer, "GET", e.orgPath(path+"?page=100001&pageSize=10000"), nil, 200)
		if out["page"] != 100001.0 || len(out["items"].([]any)) != 0 {
			t.Fatalf("%s last page: %v", path, out)
		}
	}
	_, crawlID := e.startCrawl(asCrawler, "q")
	e.want422(e.do(asCrawler, "GET", e.orgPath("/crawls/"+crawlID+"/queue?offset=0&count=10001"), nil),
		`"loc":["query","count"]`, "less than or equal to 10000")
}

// A 1 MB seed URL with runNow answered 500 after creating the workflow
// (its ConfigMap was over 1 MiB), so a retry made a duplicate. Names,
// tags, seeds and URLs are bounded, and a config that could not launch is
// refused before anything is stored.
func TestSizesAreBoundedBeforeAnythingIsStored(t *testing.T) {
	e := newEnv(t)
	seed := func(u string) map[string]any { return map[string]any{"url": u} }
	long := "https://e.com/" + strings.Repeat("a", maxURLLen)
	big := make([]any, 0, maxSeeds)
	for i := range maxSeeds {
		big = append(big, seed(fmt.Sprintf("https://e.com/%04d/%s", i, strings.Repeat("x", 1500))))
	}
	manyTags := make([]string, maxTags+1)
	for i := range manyTags {
		manyTags[i] = fmt.Sprint(i)
	}
	for name, tc := range map[string]struct {
		change   func(body map[string]any)
		loc, msg string
	}{
		"1MBSeed": {func(b map[string]any) {
			b["config"].(map[string]any)["seeds"] = []any{seed("https://e.com/" + strings.Repeat("a", 1<<20))}
		},
			`"loc":["body","config","seeds",0,"url"]`, "at most 2048 characters"},
		"LongURL": {func(b map[string]any) { b["config"].(map[string]any)["seeds"] = []any{seed(long)} },
			`"loc":["body","config","seeds",0,"url"]`, "at most 2048 characters"},
		"TooManySeeds": {func(b map[string]any) {
			b["config"].(map[string]any)["seeds"] = append(big, seed("https://e.com/one-more"))
		}, `"loc":["body","config","seeds"]`, "at most 1000 items"},
		"ConfigMapSize": {func(b map[string]any) { b["config"].(map[string]any)["seeds"] = big },
			`"loc":["body","config"]`, "more than the 1048576 bytes a Kubernetes ConfigMap holds"},
		"LongName": {func(b map[string]any) { b["name"] = strings.Repeat("n", maxNameLen+1) },
			`"loc":["body","name"]`, "at most 256 characters"},
		"LongDescription": {func(b map[string]any) { b["description"] = strings.Repeat("d", maxDescriptionLen+1) },
			`"loc":["body","description"]`, "at most 10000 characters"},
		"TooManyTags": {func(b map[string]any) { b["tags"] = manyTags },
			`"loc":["body","tags"]`, "at most 100 items"},
		"LongTag": {func(b map[string]any) { b["tags"] = []string{"ok", strings.Repeat("t", maxTagLen+1)} },
			`"loc":["body","tags",1]`, "at most 128 characters"},
		"CrawlTimeout": {func(b map[string]any) { b["crawlTimeout"] = int64(1) << 62 },
			`"loc":["body","crawlTimeout"]`, "less than or equal to 31536000"},
		"NegativeLimit": {func(b map[string]any) { b["config"].(map[string]any)["limit"] = -1 },
			`"loc":["body","config","limit"]`, "greater than or equal to 0"},
		"ManyPatterns": {func(b map[string]any) { b["config"].(map[string]any)["exclude"] = manyTags },
			`"loc":["body","config","exclude"]`, "at most 100 items"},
	} {
		t.Run(name, func(t *testing.T) {
			body := workflowBody("big", true)
			tc.change(body)
			e.want422(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body), tc.loc, tc.msg)
		})
	}
	if n := e.workflowCount(); n != 0 {
		t.Fatalf("%d workflows left behind by refused requests", n)
	}
	if calls := e.launcher.callList(); len(calls) != 0 {
		t.Fatalf("launcher called: %v", calls)
	}

	// The same bounds hold for updates of workflows and crawls.
	cid, crawlID := e.startCrawl(asCrawler, "small")
	e.want422(e.do(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+cid),
		map[string]any{"config": map[string]any{"seeds": big}}), `"loc":["body","config"]`, "ConfigMap")
	e.want422(e.do(asCrawler, "PATCH", e.orgPath("/crawls/"+crawlID),
		map[string]any{"name": strings.Repeat("n", maxNameLen+1)}), `"loc":["body","name"]`, "at most 256 characters")
	e.want422(e.do(asCrawler, "PATCH", e.orgPath("/crawls/"+crawlID),
		map[string]any{"tags": manyTags}), `"loc":["body","tags"]`, "at most 100 items")
}

// Collections, profiles and uploads (issue 12) take the same bounds as
// workflows and crawls: names, descriptions, tags, id lists and URLs.
func TestCollectionsProfilesAndUploadsAreBounded(t *testing.T) {
	e := newEnv(t)
	longName, longDesc := strings.Repeat("n", maxNameLen+1), strings.Repeat("d", maxDescriptionLen+1)
	ids := make([]string, maxIDList+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("crawl-%d", i)
	}
	e.want422(e.do(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": longName}),
		`"loc":["body","name"]`, "at most 256 characters")
	e.want422(e.do(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "c", "description": longDesc}),
		`"loc":["body","description"]`, "at most 10000 characters")
	e.want422(e.do(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "c", "crawlIds": ids}),
		`"loc":["body","crawlIds"]`, "at most 1000 items")
	coll := e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "c"}, 200)["id"].(string)
	e.want422(e.do(asCrawler, "PATCH", e.orgPath("/collections/"+coll), map[string]any{"name": longName}),
		`"loc":["body","name"]`, "at most 256 characters")
	e.want422(e.do(asCrawler, "POST", e.orgPath("/collections/"+coll+"/add"), map[string]any{"crawlIds": ids}),
		`"loc":["body","crawlIds"]`, "at most 1000 items")

	e.want422(e.do(asCrawler, "POST", e.orgPath("/profiles/browser"),
		map[string]any{"url": "https://example.com/" + strings.Repeat("a", maxURLLen)}), `"loc":["body","url"]`, "at most 2048 characters")
	e.want422(e.do(asCrawler, "PATCH", e.orgPath("/profiles/"+uuid.NewString()), map[string]any{"name": longName}),
		`"loc":["body","name"]`, "at most 256 characters")

	file := typedBody{"application/octet-stream", []byte("x")}
	e.want422(e.do(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=a.wacz&name="+longName), file),
		`"loc":["query","name"]`, "at most 256 characters")
	e.want422(e.do(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=a.wacz&tags="+strings.Repeat("t,", maxTags+1)), file),
		`"loc":["query","tags"]`, "at most 100 items")
}
