package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestCreateWorkflow(t *testing.T) {
	e := newEnv(t)
	body := workflowBody("wf", true)
	body["scale"], body["crawlTimeout"], body["tags"] = 2, 60, []string{"a", "b"}
	body["config"].(map[string]any)["exclude"] = "skip"
	out := e.createWorkflow(asCrawler, body)
	if out["added"] != true || out["storageQuotaReached"] != false || !strings.HasPrefix(out["run_now_job"].(string), "manual-") {
		t.Fatalf("create: %v", out)
	}
	cid, crawlID := out["id"].(string), out["run_now_job"].(string)
	if want := strings.ReplaceAll(cid, "-", "")[:12]; !strings.HasSuffix(crawlID, want) || len(crawlID) != len("manual-20230911173804-")+12 {
		t.Fatalf("crawl id %q for workflow %s", crawlID, cid)
	}

	// The launcher got the CrawlJob spec and the crawler's config.
	if len(e.launcher.launched) != 1 {
		t.Fatalf("launched %v", e.launcher.callList())
	}
	req := e.launcher.launched[0]
	sp := req.Spec
	if sp.ID != crawlID || sp.CID != cid || sp.OID != e.org.String() || sp.Scale != 2 || !sp.Manual ||
		sp.CrawlTimeout != 60 || sp.StoragePath != e.org.String()+"/" || sp.StorageName != "default" ||
		sp.StoreFilename != "@ts-@hostsuffix.wacz" || sp.ConfigMap != "crawl-config-"+crawlID || sp.UserID == "" {
		t.Fatalf("spec: %+v", sp)
	}
	var cfg map[string]any
	if err := json.Unmarshal(req.ConfigJSON, &cfg); err != nil {
		t.Fatal(err)
	}
	if _, hasNull := cfg["lang"]; hasNull || cfg["exclude"] != "skip" || cfg["depth"] != -1.0 || cfg["scopeType"] != "prefix" {
		t.Fatalf("crawl config JSON: %s", req.ConfigJSON)
	}

	// The crawl document and the workflow's stats.
	crawl := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+crawlID), nil, 200)
	if crawl["state"] != "starting" || crawl["manual"] != true || crawl["finished"] != nil || crawl["stats"] != nil ||
		crawl["cid"] != cid || crawl["firstSeed"] != "https://example.com/" || crawl["userName"] != asCrawler {
		t.Fatalf("crawl: %v", crawl)
	}
	wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid+"/"), nil, 200)
	if wf["crawlAttemptCount"] != 1.0 || wf["lastCrawlId"] != crawlID || wf["isCrawlRunning"] != true ||
		wf["createdByName"] != asCrawler || wf["lastCrawlState"] != "starting" || get(wf, "config", "lang") != nil {
		t.Fatalf("workflow: %v", wf)
	}
	if _, ok := get(wf, "config").(map[string]any)["lang"]; !ok {
		t.Fatal("workflow config omits null fields")
	}
}

func TestCreateWorkflowForcesOrgPageLimit(t *testing.T) {
	e := newEnv(t)
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"maxPagesPerCrawl": 7}, 200)
	body := workflowBody("limited", false)
	body["config"].(map[string]any)["limit"] = 3
	cid := e.createWorkflow(asCrawler, body)["id"].(string)
	wf := e.mustJSON(asCrawler, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200)
	if get(wf, "config", "limit") != 7.0 {
		t.Fatalf("limit %v, want the org's 7", get(wf, "config", "limit"))
	}
}

func TestCreateWorkflowValidation(t *testing.T) {
	e := newEnv(t)
	for name, tc := range map[string]struct {
		body string
		loc  string
	}{
		"BareStringSeed": {`{"name":"x","config":{"seeds":["https://example.com/"]}}`, `"loc":["body","config","seeds"]`},
		"MissingName":    {`{"config":{"seeds":[{"url":"https://example.com/"}]}}`, `"loc":["body","name"]`},
		"MissingConfig":  {`{"name":"x"}`, `"loc":["body","config"]`},
		"BadURL":         {`{"name":"x","config":{"seeds":[{"url":"example.com"}]}}`, `"loc":["body","config","seeds",0,"url"]`},
		"ScaleZero":      {`{"name":"x","scale":0,"config":{"seeds":[{"url":"https://e.com/"}]}}`, `"loc":["body","scale"]`},
		"ScaleTooBig":    {`{"name":"x","scale":4,"config":{"seeds":[{"url":"https://e.com/"}]}}`, `"loc":["body","scale"]`},
		"BadScope":       {`{"name":"x","config":{"scopeType":"galaxy","seeds":[{"url":"https://e.com/"}]}}`, `"loc":["body","config","scopeType"]`},
		"BadSchedule":    {`{"name":"x","schedule":"every day","config":{"seeds":[{"url":"https://e.com/"}]}}`, `"loc":["body","schedule"]`},
		"WrongType":      {`{"name":"x","tags":"a","config":{"seeds":[{"url":"https://e.com/"}]}}`, `"loc":["body","tags"]`},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), tc.body)
			if r.Code != 422 || !strings.Contains(string(r.Body), tc.loc) {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
		})
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"),
		`{"name":"x","profileid":"9b3f8d5e-0000-4000-8000-000000000000","config":{"seeds":[{"url":"https://e.com/"}]}}`),
		400, "invalid_profile_id")
}

func TestListWorkflows(t *testing.T) {
	e := newEnv(t)
	for i, name := range []string{"b", "a", "c"} {
		body := workflowBody(name, false)
		body["tags"] = []string{"all", name}
		if i == 0 {
			body["schedule"] = "0 0 * * *"
		}
		e.createWorkflow(asCrawler, body)
	}
	e.createWorkflow(asOwner, workflowBody("d", false))
	names := func(path string) []string {
		t.Helper()
		out := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs"+path), nil, 200)
		var ns []string
		for _, it := range out["items"].([]any) {
			ns = append(ns, get(it, "name").(string))
		}
		if int(out["total"].(float64)) < len(ns) {
			t.Fatalf("total %v < items", out["total"])
		}
		return ns
	}
	for path, want := range map[string][]string{
		"?sortBy=name&sortDirection=1":   {"a", "b", "c", "d"},
		"?sortBy=name":                   {"d", "c", "b", "a"},
		"?tag=all&tag=a":                 {"a"},
		"?schedule=true":                 {"b"},
		"?name=c":                        {"c"},
		"?sortBy=name&pageSize=2&page=2": {"b", "a"},
	} {
		if got := names(path); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
	if got := names("?schedule=false"); len(got) != 3 {
		t.Errorf("unscheduled: %v", got)
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/crawlconfigs?sortBy=colour"), nil), 400, "invalid_sort_by")
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/crawlconfigs?sortBy=name&sortDirection=2"), nil), 400, "invalid_sort_direction")

	tags := e.do(asViewer, "GET", e.orgPath("/crawlconfigs/tags"), nil)
	if strings.TrimSpace(string(tags.Body)) != `["a","all","b","c"]` {
		t.Errorf("tags: %s", tags.Body)
	}
	sv := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/search-values"), nil, 200)
	if len(sv["names"].([]any)) != 4 || len(sv["workflowIds"].([]any)) != 4 || len(sv["firstSeeds"].([]any)) != 1 {
		t.Errorf("search values: %v", sv)
	}
}

func TestGetWorkflowNotFound(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"9b3f8d5e-0000-4000-8000-000000000000", "nope"} {
		e.wantDetail(e.do(asViewer, "GET", e.orgPath("/crawlconfigs/"+id), nil), 404, "Crawl Config '"+id+"' not found")
	}
}

func TestPatchWorkflow(t *testing.T) {
	e := newEnv(t)
	body := workflowBody("wf", false)
	body["tags"] = []string{"x"}
	cid := e.createWorkflow(asCrawler, body)["id"].(string)
	path := e.orgPath("/crawlconfigs/" + cid + "/")
	wf := e.mustJSON(asCrawler, "GET", path, nil, 200)

	patch := func(body any) map[string]any { return e.mustJSON(asCrawler, "PATCH", path, body, 200) }
	same := patch(map[string]any{"config": wf["config"], "name": "wf"})
	if same["settings_changed"] != false || same["metadata_changed"] != false || same["updated"] != true {
		t.Fatalf("identical config: %v", same)
	}
	meta := patch(map[string]any{"name": nil, "tags": []string{}})
	if meta["metadata_changed"] != true || meta["settings_changed"] != false {
		t.Fatalf("metadata: %v", meta)
	}
	wf = e.mustJSON(asCrawler, "GET", path, nil, 200)
	if wf["name"] != nil || len(wf["tags"].([]any)) != 0 || wf["rev"] != 1.0 {
		t.Fatalf("after null name: %v %v rev %v", wf["name"], wf["tags"], wf["rev"])
	}
	cfg := wf["config"].(map[string]any)
	cfg["depth"] = 2
	set := patch(map[string]any{"config": cfg, "scale": 3, "schedule": "*/5 * * * *"})
	if set["settings_changed"] != true || set["metadata_changed"] != false {
		t.Fatalf("settings: %v", set)
	}
	wf = e.mustJSON(asCrawler, "GET", path, nil, 200)
	if wf["scale"] != 3.0 || get(wf, "config", "depth") != 2.0 || wf["schedule"] != "*/5 * * * *" || wf["modifiedByName"] != asCrawler {
		t.Fatalf("after settings change: %v", wf)
	}
	revs := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid+"/revs"), nil, 200)
	if revs["total"] != 1.0 || get(revs["items"].([]any)[0], "scale") != 1.0 || get(revs["items"].([]any)[0], "cid") != cid {
		t.Fatalf("revisions: %v", revs)
	}
	if r := e.do(asCrawler, "PATCH", path, map[string]any{"scale": 9}); r.Code != 422 {
		t.Fatalf("scale 9: %d %s", r.Code, r.Body)
	}
	e.wantDetail(e.do(asCrawler, "PATCH", e.orgPath("/crawlconfigs/9b3f8d5e-0000-4000-8000-000000000000"), map[string]any{"name": "x"}),
		404, "Crawl Config '9b3f8d5e-0000-4000-8000-000000000000' not found")
}

func TestDeleteWorkflow(t *testing.T) {
	e := newEnv(t)
	never := e.createWorkflow(asCrawler, workflowBody("never ran", false))["id"].(string)
	out := e.mustJSON(asCrawler, "DELETE", e.orgPath("/crawlconfigs/"+never), nil, 200)
	if out["success"] != true || out["status"] != "deleted" {
		t.Fatalf("delete: %v", out)
	}
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/crawlconfigs/"+never), nil), 404, "Crawl Config '"+never+"' not found")

	cid, crawlID := e.startCrawl(asCrawler, "ran")
	e.wantDetail(e.do(asCrawler, "DELETE", e.orgPath("/crawlconfigs/"+cid), nil), 400, "crawl_running_cant_deactivate")
	e.setState(crawlID, "complete")
	out = e.mustJSON(asCrawler, "DELETE", e.orgPath("/crawlconfigs/"+cid), nil, 200)
	if out["status"] != "deactivated" {
		t.Fatalf("delete after a crawl: %v", out)
	}
	wf := e.mustJSON(asCrawler, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200)
	if wf["inactive"] != true {
		t.Fatalf("not inactive: %v", wf)
	}
	list := e.mustJSON(asCrawler, "GET", e.orgPath("/crawlconfigs"), nil, 200)
	if list["total"] != 0.0 {
		t.Fatalf("inactive workflow listed: %v", list)
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"+cid+"/run"), nil), 404, "Crawl Config '"+cid+"' not found")
	e.wantDetail(e.do(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+cid), map[string]any{"name": "new"}), 400, "config_not_found")
}

func TestRunWorkflow(t *testing.T) {
	e := newEnv(t)
	cid := e.createWorkflow(asCrawler, workflowBody("wf", false))["id"].(string)
	run := e.orgPath("/crawlconfigs/" + cid + "/run")
	started := e.mustJSON(asCrawler, "POST", run, nil, 200)["started"].(string)
	e.wantDetail(e.do(asCrawler, "POST", run, nil), 400, "crawl_already_running")
	e.setState(started, "complete")
	wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200)
	if wf["crawlCount"] != 1.0 || wf["crawlSuccessfulCount"] != 1.0 || wf["lastCrawlState"] != "complete" || wf["isCrawlRunning"] != false {
		t.Fatalf("stats after a successful crawl: %v", wf)
	}

	// A second start in the same second gets a distinct id, never a 500.
	again := e.mustJSON(asCrawler, "POST", run, nil, 200)["started"].(string)
	if again == started {
		t.Fatalf("same id twice: %s", again)
	}
	e.setState(again, "failed")
	wf = e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200)
	if wf["crawlSuccessfulCount"] != 1.0 || wf["crawlCount"] != 2.0 {
		t.Fatalf("a failed crawl counted as successful: %v", wf)
	}

	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"storageQuota": 1}, 200)
	if _, err := e.store.Raw().Collection("organizations").UpdateByID(t.Context(), e.org, map[string]any{"$set": map[string]any{"bytesStored": 5}}); err != nil {
		t.Fatal(err)
	}
	e.wantDetail(e.do(asCrawler, "POST", run, nil), 403, "storage_quota_reached")
	out := e.createWorkflow(asCrawler, workflowBody("full", true))
	if out["storageQuotaReached"] != true || out["run_now_job"] != nil {
		t.Fatalf("runNow with a full org: %v", out)
	}
}

func TestLaunchFailureMarksCrawlFailed(t *testing.T) {
	e := newEnv(t)
	cid := e.createWorkflow(asCrawler, workflowBody("wf", false))["id"].(string)
	e.launcher.fail = errTest
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"+cid+"/run"), nil), 500, "Error starting crawl")
	e.launcher.fail = nil
	list := e.mustJSON(asCrawler, "GET", e.orgPath("/crawls?cid="+cid), nil, 200)
	if list["total"] != 1.0 || get(list["items"].([]any)[0], "state") != "failed" {
		t.Fatalf("crawl after a failed launch: %v", list)
	}
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawlconfigs/"+cid+"/run"), nil, 200)
}

// TestWorkflowShowsEndedCrawlBeforeItsStats: between a crawl's end and
// the post-crawl tasks that fold it into its workflow's stats, the
// workflow shows the ended crawl (never the copy written at its start),
// with exactly the last-crawl fields those tasks then store.
func TestWorkflowShowsEndedCrawlBeforeItsStats(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	cid, id := e.startCrawl(asCrawler, "wf")
	e.setState(id, "running")
	if _, err := e.store.RecordCrawlProgress(ctx, id, &store.CrawlStats{Found: 9, Done: 3, Size: 700}, nil); err != nil {
		t.Fatal(err)
	}
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/stop"), nil, 200)
	lastCrawl := func(from string) map[string]any {
		t.Helper()
		var wf map[string]any
		if from == "list" {
			wf = e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs"), nil, 200)["items"].([]any)[0].(map[string]any)
		} else {
			wf = e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200)
		}
		got := map[string]any{}
		for _, k := range []string{"lastCrawlId", "lastCrawlStartTime", "lastStartedBy", "lastCrawlTime", "lastCrawlState",
			"lastCrawlSize", "lastRun", "isCrawlRunning", "lastCrawlStopping", "crawlCount"} {
			got[k] = wf[k]
		}
		return got
	}
	running := lastCrawl("get")
	if running["lastCrawlState"] != "running" || running["lastCrawlSize"] != 700.0 || running["lastCrawlStopping"] != true ||
		running["isCrawlRunning"] != true || running["lastCrawlTime"] != nil {
		t.Fatalf("running crawl: %v", running)
	}

	if _, err := e.store.AddCrawlFile(ctx, id, store.CrawlFile{Filename: "a.wacz", Size: 1234}); err != nil {
		t.Fatal(err)
	}
	finished := time.Now().UTC().Truncate(time.Second)
	if _, _, err := e.store.SetCrawlState(ctx, id, "partial_complete", store.ActiveStates,
		store.CrawlStateExtra{Finished: &finished}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"lastCrawlId": id, "lastCrawlStartTime": running["lastCrawlStartTime"], "lastStartedBy": running["lastStartedBy"],
		"lastCrawlTime": finished.Format("2006-01-02T15:04:05"), "lastCrawlState": "partial_complete",
		"lastCrawlSize": 1234.0, "lastRun": finished.Format("2006-01-02T15:04:05"),
		"isCrawlRunning": false, "lastCrawlStopping": false, "crawlCount": 0.0,
	}
	for _, from := range []string{"get", "list"} {
		if diff := cmp.Diff(want, lastCrawl(from)); diff != "" {
			t.Fatalf("%s: ended crawl before its post-crawl tasks (-want +got):\n%s", from, diff)
		}
	}
	if _, err := e.store.RunPostCrawlTasks(ctx, id); err != nil {
		t.Fatal(err)
	}
	want["crawlCount"] = 1.0
	if diff := cmp.Diff(want, lastCrawl("get")); diff != "" {
		t.Fatalf("after the post-crawl tasks (-want +got):\n%s", diff)
	}
}

// bothChecked is a Store whose ActiveCrawls waits until every replica
// sharing the gate has checked, so two starts of a workflow both find it
// idle: the race that only a store-level guard settles.
type bothChecked struct {
	Store
	gate *sync.WaitGroup
}

func (s bothChecked) ActiveCrawls(ctx context.Context, oid, cid uuid.UUID) ([]store.Crawl, error) {
	active, err := s.Store.ActiveCrawls(ctx, oid, cid)
	s.gate.Done()
	s.gate.Wait()
	return active, err
}

// TestTwoReplicasStartAWorkflowOnce runs a workflow through two API
// replicas (each with its own database client, as two processes) at the
// same moment, after both have found it idle: one crawl starts, the other
// request is a 400 crawl_already_running.
func TestTwoReplicasStartAWorkflowOnce(t *testing.T) {
	var gate sync.WaitGroup
	e := newEnvWith(t, func(_ *Config, d *Deps) { d.Store = bothChecked{Store: d.Store, gate: &gate} })
	other, err := store.Open(context.Background(), mongotest.URI(t), e.store.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })
	launcherB := &fakeLauncher{}
	replicaB := New(testConfig(), Deps{Store: bothChecked{Store: other, gate: &gate}, Launcher: launcherB, RedisDialer: dialRedis(t)})
	t.Cleanup(replicaB.WaitForBackground)

	cid := e.createWorkflow(asCrawler, workflowBody("wf", false))["id"].(string)
	run := e.orgPath("/crawlconfigs/" + cid + "/run")
	for round := range 3 {
		gate.Add(2)
		codes := make([]int, 2)
		var started []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, h := range []http.Handler{e.srv.Handler(), replicaB.Handler()} {
			wg.Go(func() {
				req := httptest.NewRequest("POST", run, nil)
				req.Header.Set("Authorization", "Bearer "+e.tokens[asCrawler])
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				codes[i] = rec.Code
				if rec.Code == 200 {
					var out struct{ Started string }
					_ = json.Unmarshal(rec.Body.Bytes(), &out)
					mu.Lock()
					started = append(started, out.Started)
					mu.Unlock()
				} else if !strings.Contains(rec.Body.String(), "crawl_already_running") {
					t.Errorf("round %d replica %d: %d %s", round, i, rec.Code, rec.Body)
				}
			})
		}
		wg.Wait()
		if len(started) != 1 {
			t.Fatalf("round %d: %d crawls started (status codes %v)", round, len(started), codes)
		}
		if n := len(e.launcher.callList()) + len(launcherB.callList()); n != round+1 {
			t.Fatalf("round %d: %d launches in all", round, n)
		}
		e.setState(started[0], "complete")
	}
}
