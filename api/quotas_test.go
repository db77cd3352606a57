package api

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

func (f *fakeLauncher) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.launched)
}

// setOrgFields writes org fields as the operator's charges would.
func (e *env) setOrgFields(set map[string]any) {
	e.t.Helper()
	if _, err := e.store.Raw().Collection("organizations").UpdateByID(e.t.Context(), e.org,
		map[string]any{"$set": set}); err != nil {
		e.t.Fatal(err)
	}
}

// TestExecQuotaUpdates: POST /quotas with the execution-time fields
// (upstream-2026 §6.2, §8.6 items 1 and 5): superusers only, bad values
// 422 naming the field, absent or null fields left alone, the history
// kept, and the available gifted and extra seconds following their
// totals.
func TestExecQuotaUpdates(t *testing.T) {
	e := newEnv(t)
	for _, as := range []string{asOwner, asCrawler} {
		e.wantDetail(e.do(as, "POST", e.orgPath("/quotas"), map[string]any{"maxExecMinutesPerMonth": 1}), 403, "Not Allowed")
	}
	for _, tc := range []struct {
		body map[string]any
		loc  string
	}{
		{map[string]any{"maxExecMinutesPerMonth": -1}, "maxExecMinutesPerMonth"},
		{map[string]any{"giftedExecMinutes": -5}, "giftedExecMinutes"},
		{map[string]any{"extraExecMinutes": 1.5}, "extraExecMinutes"},
		{map[string]any{"maxExecMinutesPerMonth": "lots"}, "maxExecMinutesPerMonth"},
	} {
		r := e.do(asAdmin, "POST", e.orgPath("/quotas"), tc.body)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"`+tc.loc+`"`) {
			t.Fatalf("%v: %d %s, want 422 naming %s", tc.body, r.Code, r.Body, tc.loc)
		}
	}
	if o := e.mustJSON(asAdmin, "GET", e.orgPath(""), nil, 200); len(o["quotaUpdates"].([]any)) != 0 {
		t.Fatalf("refused updates recorded: %v", o["quotaUpdates"])
	}

	// Some seconds were used this month before any quota was set.
	month := time.Now().UTC().Format("2006-01")
	e.setOrgFields(map[string]any{"crawlExecSeconds." + month: 90})

	up := e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"maxExecMinutesPerMonth": 1}, 200)
	if up["updated"] != true {
		t.Fatal(up)
	}
	// Null and absent leave the exec quotas alone; 0 is applied.
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{
		"maxExecMinutesPerMonth": nil, "giftedExecMinutes": 1, "extraExecMinutes": 2}, 200)
	o := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200)
	q := o["quotas"]
	if get(q, "maxExecMinutesPerMonth") != 1.0 || get(q, "giftedExecMinutes") != 1.0 || get(q, "extraExecMinutes") != 2.0 {
		t.Fatalf("quotas: %v", q)
	}
	if o["giftedExecSecondsAvailable"] != 60.0 || o["extraExecSecondsAvailable"] != 120.0 {
		t.Fatalf("available: gifted %v, extra %v", o["giftedExecSecondsAvailable"], o["extraExecSecondsAvailable"])
	}
	if len(get(o, "giftedExecSeconds").(map[string]any)) != 0 || len(get(o, "extraExecSeconds").(map[string]any)) != 0 {
		t.Fatalf("charged without a crawl: %v", o)
	}
	ups := o["quotaUpdates"].([]any)
	if len(ups) != 2 || get(ups[0], "modified") == nil || get(ups[0], "update", "maxExecMinutesPerMonth") != 1.0 ||
		get(ups[1], "update", "giftedExecMinutes") != 1.0 || get(ups[1], "update", "maxExecMinutesPerMonth") != nil {
		t.Fatalf("quotaUpdates: %v", ups)
	}
	if o["execMinutesQuotaReached"] != false {
		t.Fatalf("quota reached with minutes left: %v", o)
	}

	// Lowering a total moves its available seconds by the difference,
	// never below 0.
	e.setOrgFields(map[string]any{"extraExecSecondsAvailable": 100})
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"extraExecMinutes": 1}, 200)
	if o := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200); o["extraExecSecondsAvailable"] != 40.0 {
		t.Fatalf("extra after lowering: %v", o["extraExecSecondsAvailable"])
	}
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"extraExecMinutes": 0, "giftedExecMinutes": 0}, 200)
	if o := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200); o["extraExecSecondsAvailable"] != 0.0 || o["giftedExecSecondsAvailable"] != 0.0 {
		t.Fatalf("available after removing the minutes: %v", o)
	}
}

// TestExecQuotaEnforced: an org over its execution-time quota
// (upstream-2026 §6.6, §8.6 items 3, 4 and 7) shows
// execMinutesQuotaReached, is refused a run with 403
// exec_minutes_quota_reached, gets a runNow workflow created without its
// crawl, and has its scheduled crawls recorded as
// skipped_time_quota_reached.
func TestExecQuotaEnforced(t *testing.T) {
	e := newEnv(t)
	// Scheduled, though the scheduler does not run: the test fires it.
	body := workflowBody("over quota", false)
	body["schedule"] = "0 0 * * *"
	cid := e.createWorkflow(asCrawler, body)["id"].(string)
	month := time.Now().UTC().Format("2006-01")
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"maxExecMinutesPerMonth": 1}, 200)
	e.setOrgFields(map[string]any{"monthlyExecSeconds." + month: 60, "crawlExecSeconds." + month: 75})

	o := e.mustJSON(asViewer, "GET", e.orgPath(""), nil, 200)
	if o["execMinutesQuotaReached"] != true || len(o["crawlExecSeconds"].(map[string]any)) != 0 {
		t.Fatalf("viewer's org over quota: %v", o)
	}
	if o := e.mustJSON(asCrawler, "GET", e.orgPath(""), nil, 200); get(o, "crawlExecSeconds", month) != 75.0 {
		t.Fatalf("crawler's org: %v", o)
	}
	for _, it := range e.mustJSON(asAdmin, "GET", "/api/orgs", nil, 200)["items"].([]any) {
		if get(it, "execMinutesQuotaReached") != false {
			t.Fatalf("computed in the list: %v", it)
		}
	}

	launched := e.launcher.count()
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"+cid+"/run"), nil), 403, "exec_minutes_quota_reached")
	added := e.createWorkflow(asCrawler, workflowBody("run now over quota", true))
	if added["added"] != true || added["run_now_job"] != nil || added["execMinutesQuotaReached"] != true ||
		added["errorDetail"] != "exec_minutes_quota_reached" {
		t.Fatalf("runNow over quota: %v", added)
	}
	if got := e.launcher.count(); got != launched {
		t.Fatalf("%d crawls launched over quota", got-launched)
	}
	// A run that starts answers without errorDetail, as the baseline.
	e.setOrgFields(map[string]any{"monthlyExecSeconds." + month: 0})
	if added := e.createWorkflow(asCrawler, workflowBody("run now", true)); added["run_now_job"] == nil || added["errorDetail"] != nil {
		t.Fatalf("runNow within quota: %v", added)
	}

	// A scheduled crawl over the quota is recorded, finished, as skipped
	// and counted on its workflow as a crawl that did not succeed.
	e.setOrgFields(map[string]any{"monthlyExecSeconds." + month: 61})
	e.srv.Scheduler().fire(e.org, uuid.MustParse(cid))
	crawls := e.crawlsOf(cid)
	if len(crawls) != 1 || get(crawls[0], "state") != store.StateSkippedTimeQuota || get(crawls[0], "finished") == nil {
		t.Fatalf("scheduled crawl over quota: %v", crawls)
	}
	if got := e.launcher.count(); got != launched+1 {
		t.Fatalf("%d crawls launched, want 1 (the runNow within quota)", got-launched)
	}
	wf := e.mustJSON(asCrawler, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200)
	if wf["crawlCount"] != 1.0 || wf["crawlSuccessfulCount"] != 0.0 || wf["lastCrawlState"] != store.StateSkippedTimeQuota {
		t.Fatalf("workflow after a skipped crawl: %v", wf)
	}
}

// TestOrgReadOnly: POST /orgs/{oid}/read-only is the superuser's; a
// read-only org shows it, is refused runs (before the quotas) and seed
// files and uploads with 403 org_set_to_read_only, gets a runNow workflow created
// without its crawl, and its scheduled crawls start nothing; set
// writable again, the reason goes and runs start.
func TestOrgReadOnly(t *testing.T) {
	e := newEnv(t)
	body := workflowBody("read-only", false)
	body["schedule"] = "0 0 * * *"
	cid := e.createWorkflow(asCrawler, body)["id"].(string)
	path := e.orgPath("/read-only")
	e.wantDetail(e.do(asOwner, "POST", path, map[string]any{"readOnly": true}), 403, "Not Allowed")
	e.want422(e.do(asAdmin, "POST", path, map[string]any{"readOnlyReason": "x"}), "readOnly", "field required")
	if out := e.mustJSON(asAdmin, "POST", path, map[string]any{"readOnly": true, "readOnlyReason": "unpaid"}, 200); out["updated"] != true {
		t.Fatalf("set read-only: %v", out)
	}
	if o := e.mustJSON(asViewer, "GET", e.orgPath(""), nil, 200); o["readOnly"] != true || o["readOnlyReason"] != "unpaid" {
		t.Fatalf("org: readOnly %v, reason %v", o["readOnly"], o["readOnlyReason"])
	}

	// Read-only comes before the quotas.
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"maxExecMinutesPerMonth": 1}, 200)
	e.setOrgFields(map[string]any{"monthlyExecSeconds." + time.Now().UTC().Format("2006-01"): 60})
	launched := e.launcher.count()
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"+cid+"/run"), nil), 403, "org_set_to_read_only")
	added := e.createWorkflow(asCrawler, workflowBody("run now read-only", true))
	if added["added"] != true || added["run_now_job"] != nil || added["errorDetail"] != "org_set_to_read_only" {
		t.Fatalf("runNow while read-only: %v", added)
	}
	e.wantDetail(e.do(asCrawler, "PUT", e.orgPath("/files/seedFile?filename=seeds.txt"), "https://example.com/\n"), 403, "org_set_to_read_only")
	e.wantDetail(e.do(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=a.wacz&name=a"), "not read"), 403, "org_set_to_read_only")
	e.srv.Scheduler().fire(e.org, uuid.MustParse(cid))
	if crawls := e.crawlsOf(cid); len(crawls) != 0 || e.launcher.count() != launched {
		t.Fatalf("scheduled run of a read-only org: %v", crawls)
	}

	e.mustJSON(asAdmin, "POST", path, map[string]any{"readOnly": false, "readOnlyReason": "ignored"}, 200)
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"maxExecMinutesPerMonth": 0}, 200)
	if o := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200); o["readOnly"] != false || o["readOnlyReason"] != nil {
		t.Fatalf("org writable again: readOnly %v, reason %v", o["readOnly"], o["readOnlyReason"])
	}
	if out := e.mustJSON(asCrawler, "POST", e.orgPath("/crawlconfigs/"+cid+"/run"), nil, 200); out["started"] == nil {
		t.Fatalf("run once writable: %v", out)
	}
}
