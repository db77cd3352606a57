package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/store"
)

// fakeOrgObjects stands in for the org's Kubernetes objects: each org
// has some CrawlJobs that go after a number of calls.
type fakeOrgObjects struct {
	mu    sync.Mutex
	calls map[string]int
	left  map[string]int // calls after which the org's jobs are gone
	err   error          // every call's answer, if set
}

func (f *fakeOrgObjects) DeleteOrgObjects(_ context.Context, oid string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[oid]++
	if f.err != nil {
		return 0, f.err
	}
	return max(0, f.left[oid]-f.calls[oid]), nil
}

// orgData is what seedOrg put in the env's default org.
type orgData struct {
	crawlID, runningID, uploadID string
	cid                          string
	keys                         []string // stored objects
}

// seedOrg fills the default org with one of everything §7.3 deletes: a
// finished crawl with files and error lines, a running crawl, an upload,
// workflows with revisions, a collection, a profile, an invite, a webhook
// notification, pages, log lines, usage and another background job; the
// owner is also a member of the other org.
func seedOrg(t *testing.T, e *storageEnv) orgData {
	t.Helper()
	ctx := context.Background()
	var d orgData
	d.crawlID, d.keys = e.finishedCrawlWithFiles([]byte("first wacz"), []byte("second wacz"))
	if err := e.store.AddCrawlErrors(ctx, d.crawlID, 0, []string{`{"message":"x"}`}); err != nil {
		t.Fatal(err)
	}
	d.cid, d.runningID = e.startCrawl(asCrawler, "running")
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+d.cid), map[string]any{"schedule": "0 0 * * *"}, 200)
	e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "c", "crawlIds": []string{d.crawlID}}, 200)
	e.mustJSON(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": "new@example.com", "role": 10}, 200)
	up := e.doRaw(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=u.wacz&name=u"), typedBody{"application/octet-stream", testWACZ(t, "upload")})
	if up.Code != 200 {
		t.Fatalf("upload: %d %s", up.Code, up.Body)
	}
	var upOut map[string]any
	_ = json.Unmarshal(up.Body.Bytes(), &upOut)
	d.uploadID = upOut["id"].(string)
	profileKey := e.org.String() + "/profiles/profile-x.tar.gz"
	if _, err := e.bucket.Put(ctx, profileKey, strings.NewReader("profile"), 7, ""); err != nil {
		t.Fatal(err)
	}
	d.keys = append(d.keys, profileKey)
	if err := e.store.SaveProfile(ctx, &store.Profile{ID: uuid.New(), OID: e.org, Name: "p",
		Resource: store.ProfileFile{Filename: "profile-x.tar.gz"}}, false); err != nil {
		t.Fatal(err)
	}
	raw := e.store.Raw()
	for coll, doc := range map[string]bson.M{
		"pages":        {"_id": uuid.New(), "oid": e.org, "crawl_id": d.crawlID, "url": "https://example.com/"},
		"crawl_logs":   {"_id": uuid.New(), "oid": e.org, "crawl_id": d.crawlID, "message": "m"},
		"webhooks":     {"_id": uuid.New(), "oid": e.org, "event": "crawlFinished"},
		"crawl_usage":  {"_id": "u-" + d.crawlID, "oid": e.org, "month": "2026-01", "seconds": 1},
		"jobs":         {"_id": "readd-pages-x", "type": "readd-pages", "oid": e.org, "success": true},
		"file_uploads": {"_id": uuid.New(), "oid": e.org, "type": "seedFile"},
	} {
		if _, err := raw.Collection(coll).InsertOne(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	other := otherOrg(t, e.env)
	if err := e.store.SetOrgUserRole(ctx, other, userID(t, e.env, asOwner+"@example.com"), store.RoleViewer); err != nil {
		t.Fatal(err)
	}
	return d
}

func otherOrg(t *testing.T, e *env) uuid.UUID {
	t.Helper()
	orgs, _, err := e.store.ListOrgs(context.Background(), store.OrgFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range orgs {
		if o.Name == "Other Org" {
			return o.ID
		}
	}
	t.Fatal("no other org")
	return uuid.Nil
}

func userID(t *testing.T, e *env, email string) uuid.UUID {
	t.Helper()
	u, err := e.store.GetUserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// orgLeft counts the documents of org oid left in each collection.
func orgLeft(t *testing.T, e *env, oid uuid.UUID, crawlIDs []string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	raw := e.store.Raw()
	left := map[string]int64{}
	count := func(coll string, filter bson.M) {
		n, err := raw.Collection(coll).CountDocuments(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			left[coll] = n
		}
	}
	for _, coll := range []string{"crawls", "crawl_configs", "collections", "profiles", "invites", "webhooks",
		"crawl_usage", "pages", "crawl_logs", "file_uploads"} {
		count(coll, bson.M{"oid": oid})
	}
	count("organizations", bson.M{"_id": oid})
	count("crawl_errors", bson.M{"crawlId": bson.M{"$in": crawlIDs}})
	count("jobs", bson.M{"oid": oid, "type": bson.M{"$ne": store.JobTypeDeleteOrg}})
	return left
}

// waitJob polls the job until its success is set.
func waitJob(t *testing.T, e *env, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		job := e.mustJSON(asAdmin, "GET", "/api/orgs/all/jobs/"+id, nil, 200)
		if job["success"] != nil {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still running: %v", id, job)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDeleteOrgAccess: §8.7 item 1, and a second deletion (§8.7's bad
// input): a clear 4xx and nothing changed.
func TestDeleteOrgAccess(t *testing.T) {
	e := newEnv(t)
	path := e.orgPath("")
	e.wantDetail(e.do(asCrawler, "DELETE", path, nil), 403, detailNotAllowed)
	e.wantDetail(e.do(asOwner, "DELETE", path, nil), 403, detailNotAllowed)
	e.wantDetail(e.do(asOutsider, "DELETE", path, nil), 404, detailOrgNotFound)
	e.wantDetail(e.do(asAdmin, "DELETE", "/api/orgs/"+uuid.NewString(), nil), 404, detailOrgNotFound)
	e.wantDetail(e.do(asAdmin, "GET", "/api/orgs/all/jobs/nope", nil), 404, "job_not_found")
	e.wantDetail(e.do(asOwner, "GET", "/api/orgs/all/jobs/nope", nil), 403, detailNotAllowed)

	out := e.mustJSON(asAdmin, "DELETE", path, nil, 200)
	id, _ := out["id"].(string)
	if out["deleted"] != true || !strings.HasPrefix(id, "delete-org-"+e.org.String()+"-") || len(id) != len("delete-org-")+36+1+10 {
		t.Fatalf("DELETE: %v", out)
	}
	job := e.mustJSON(asAdmin, "GET", "/api/orgs/all/jobs/"+id, nil, 200)
	if job["success"] != nil || job["finished"] != nil || job["type"] != "delete-org" || job["oid"] != e.org.String() ||
		!strings.HasSuffix(job["started"].(string), "Z") {
		t.Fatalf("job while not run: %v", job)
	}
	// The org is still there until the job runs, and a second deletion
	// is refused without a second job.
	e.mustJSON(asViewer, "GET", path, nil, 200)
	e.wantDetail(e.do(asAdmin, "DELETE", path, nil), 400, "org_deletion_in_progress")
	jobs, err := e.store.UnfinishedJobs(context.Background(), store.JobTypeDeleteOrg)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("unfinished jobs %v, %v", jobs, err)
	}
	e.wantDetail(e.do(asAdmin, "POST", "/api/orgs/all/jobs/"+id+"/retry", nil), 400, "job_not_finished")
}

// TestDeleteOrgJob: §8.7 items 2, 3, 5 and 6 on MongoDB and S3 (the
// Kubernetes side is faked here; e2e/crawls runs it on the real
// cluster): the job deletes every document of the org, the org's users
// who are in no other org, and its folder in storage; it keeps its own
// record; the other org is untouched; a deletion of the deleted org is a
// 404.
func TestDeleteOrgJob(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	d := seedOrg(t, e)
	other := otherOrg(t, e.env)
	otherCrawls, _, _ := e.store.ListCrawls(context.Background(), other, store.CrawlFilter{})
	objects := &fakeOrgObjects{left: map[string]int{e.org.String(): 3}}
	e.srv.orgDeleter.objects = objects

	out := e.mustJSON(asAdmin, "DELETE", e.orgPath(""), nil, 200)
	id := out["id"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	e.srv.orgDeleter.Start(ctx)
	defer func() { cancel(); e.srv.orgDeleter.Stop() }()
	job := waitJob(t, e.env, id)
	if job["success"] != true || job["finished"] == nil || !strings.HasSuffix(job["finished"].(string), "Z") {
		t.Fatalf("job: %v", job)
	}

	ids := []string{d.crawlID, d.runningID, d.uploadID}
	if left := orgLeft(t, e.env, e.org, ids); len(left) > 0 {
		t.Errorf("left in MongoDB: %v", left)
	}
	var prefix []string
	for obj, err := range e.bucket.List(context.Background(), s3.OrgPrefix(e.org.String())) {
		if err != nil {
			t.Fatal(err)
		}
		prefix = append(prefix, obj.Key)
	}
	if len(prefix) > 0 {
		t.Errorf("left in storage: %v", prefix)
	}
	objects.mu.Lock()
	calls := objects.calls[e.org.String()]
	objects.mu.Unlock()
	if calls < 3 {
		t.Errorf("Kubernetes objects deleted in %d calls, want the deletion to wait until none are left", calls)
	}
	// The running crawl was canceled first (its CrawlJob deleted).
	if calls := e.launcher.callList(); !contains(calls, "cancel "+d.runningID) {
		t.Errorf("launcher calls %v: the running crawl was not canceled", calls)
	}
	for _, who := range []string{asCrawler, asViewer} {
		if _, err := e.store.GetUserByEmail(context.Background(), who+"@example.com"); err == nil {
			t.Errorf("%s, a member of the deleted org only, remains", who)
		}
	}
	for _, who := range []string{asOwner, asOutsider, "admin"} {
		if _, err := e.store.GetUserByEmail(context.Background(), who+"@example.com"); err != nil {
			t.Errorf("%s (in another org, or superuser) was deleted: %v", who, err)
		}
	}
	e.wantDetail(e.do(asAdmin, "GET", e.orgPath(""), nil), 404, "Organization '"+e.org.String()+"' not found")
	for _, item := range ids {
		if code := e.do(asAdmin, "GET", "/api/orgs/all/all-crawls/"+item+"/replay.json", nil).Code; code != 404 {
			t.Errorf("replay.json of deleted item %s: %d", item, code)
		}
	}
	// The job record stays; deleting again finds no org.
	if _, err := e.store.GetJob(context.Background(), id); err != nil {
		t.Errorf("the deletion's job record: %v", err)
	}
	e.wantDetail(e.do(asAdmin, "DELETE", e.orgPath(""), nil), 404, detailOrgNotFound)
	e.wantDetail(e.do(asAdmin, "POST", "/api/orgs/all/jobs/"+id+"/retry", nil), 400, "job_already_succeeded")
	if _, err := e.store.GetOrg(context.Background(), other); err != nil {
		t.Errorf("the other org: %v", err)
	}
	if after, _, _ := e.store.ListCrawls(context.Background(), other, store.CrawlFilter{}); len(after) != len(otherCrawls) {
		t.Errorf("the other org's crawls: %d, were %d", len(after), len(otherCrawls))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestOrgDeletionResumes stops the runner in the middle of a job (its
// context ends while the job waits for the org's Kubernetes objects, as
// when the leader's process dies) and starts another: the job is picked
// up again and finishes. e2e/crawls kills the whole process instead.
func TestOrgDeletionResumes(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	d := seedOrg(t, e)
	// The first runner never sees the org's CrawlJobs go.
	stuck := &fakeOrgObjects{left: map[string]int{e.org.String(): 1 << 30}}
	e.srv.orgDeleter.objects = stuck
	id := e.mustJSON(asAdmin, "DELETE", e.orgPath(""), nil, 200)["id"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	e.srv.orgDeleter.Start(ctx)
	deadline := time.Now().Add(time.Minute)
	for {
		stuck.mu.Lock()
		n := stuck.calls[e.org.String()]
		stuck.mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the runner did not start the job")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	e.srv.orgDeleter.Stop()
	if job := e.mustJSON(asAdmin, "GET", "/api/orgs/all/jobs/"+id, nil, 200); job["success"] != nil {
		t.Fatalf("job after the runner stopped: %v", job)
	}
	e.mustJSON(asViewer, "GET", e.orgPath(""), nil, 200)

	e.srv.orgDeleter.objects = &fakeOrgObjects{}
	ctx, cancel = context.WithCancel(context.Background())
	e.srv.orgDeleter.Start(ctx)
	defer func() { cancel(); e.srv.orgDeleter.Stop() }()
	if job := waitJob(t, e.env, id); job["success"] != true {
		t.Fatalf("resumed job: %v", job)
	}
	if left := orgLeft(t, e.env, e.org, []string{d.crawlID, d.runningID, d.uploadID}); len(left) > 0 {
		t.Errorf("left in MongoDB: %v", left)
	}
}

// TestOrgDeletionGivesUp: a deletion that keeps failing ends with
// success false after four tries (upstream's Job: one run and three
// retries), the superuser gets an e-mail saying why, and a retry starts
// a new attempt with four tries of its own, which succeeds once the
// cause is gone.
func TestOrgDeletionGivesUp(t *testing.T) {
	e := newMailEnv(t, func(cfg *Config) { cfg.ScheduleRescan = 50 * time.Millisecond })
	failing := &fakeOrgObjects{err: errors.New("the API server said no")}
	e.srv.orgDeleter.objects = failing
	id := e.mustJSON(asAdmin, "DELETE", e.orgPath(""), nil, 200)["id"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	e.srv.orgDeleter.Start(ctx)
	defer func() { cancel(); e.srv.orgDeleter.Stop() }()

	job := waitJob(t, e.env, id)
	failing.mu.Lock()
	tries := failing.calls[e.org.String()]
	failing.mu.Unlock()
	if job["success"] != false || job["finished"] == nil || tries != 4 {
		t.Fatalf("job %v after %d tries, want success false after 4", job, tries)
	}
	mail := waitMail(t, "admin@example.com", "Failed background job: "+id)
	if !strings.Contains(mail.Text, "the API server said no") || !strings.Contains(mail.Text, "/api/orgs/all/jobs/"+id+"/retry") {
		t.Errorf("e-mail to the superuser:\n%s", mail.Text)
	}
	// The org is still there: nothing was deleted.
	e.mustJSON(asViewer, "GET", e.orgPath(""), nil, 200)

	e.srv.orgDeleter.objects = &fakeOrgObjects{}
	e.mustJSON(asAdmin, "POST", "/api/orgs/all/jobs/"+id+"/retry", nil, 200)
	job = waitJob(t, e.env, id)
	if job["success"] != true || len(job["previousAttempts"].([]any)) != 1 {
		t.Fatalf("retried job: %v", job)
	}
	e.wantDetail(e.do(asAdmin, "GET", e.orgPath(""), nil), 404, "Organization '"+e.org.String()+"' not found")
}

// TestOrgExportImport: §8.7 item 7 and its bad input. The export is a
// superuser's (owners and crawlers are refused), it round-trips the org,
// its workflows, revisions, items, pages, collections and profiles
// through a deletion, and a second import is refused.
func TestOrgExportImport(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	d := seedOrg(t, e)
	ctx := context.Background()
	e.setState(d.runningID, store.StateComplete)
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/export/json"), nil), 403, detailNoOwnerPermission)
	e.wantDetail(e.do(asOwner, "GET", e.orgPath("/export/json"), nil), 403, detailNotAllowed)
	e.wantDetail(e.do(asOutsider, "GET", e.orgPath("/export/json"), nil), 404, detailOrgNotFound)
	exp := e.doRaw(asAdmin, "GET", e.orgPath("/export/json"), nil)
	if exp.Code != 200 {
		t.Fatalf("export: %d %s", exp.Code, exp.Body)
	}
	var doc struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(exp.Body.Bytes(), &doc); err != nil {
		t.Fatalf("export is not JSON: %v\n%s", err, exp.Body)
	}
	counts := map[string]int{}
	for _, section := range store.ExportSections {
		var list []any
		if err := json.Unmarshal(doc.Data[section], &list); err != nil {
			t.Fatalf("section %s: %v", section, err)
		}
		counts[section] = len(list)
	}
	want := map[string]int{"profiles": 1, "workflows": 2, "items": 3, "pages": 1, "collections": 1}
	for section, n := range want {
		if counts[section] != n {
			t.Errorf("export has %d %s, want %d", counts[section], section, n)
		}
	}
	if counts["workflowRevisions"] < 1 {
		t.Errorf("export has no workflow revisions")
	}
	before := e.mustJSON(asAdmin, "GET", e.orgPath("/crawls/"+d.crawlID), nil, 200)
	wfBefore := e.mustJSON(asAdmin, "GET", e.orgPath("/crawlconfigs/"+d.cid), nil, 200)

	body := exp.Body.Bytes()
	imp := func(as, query string, b []byte) resp {
		return e.do(as, "POST", "/api/orgs/import/json"+query, typedBody{"application/json", b})
	}
	e.wantDetail(imp(asAdmin, "", body), 400, "org_already_exists")
	e.wantDetail(imp(asOwner, "", body), 403, detailNotAllowed)
	e.wantDetail(imp(asCrawler, "", body), 403, detailNotAllowed)
	e.wantDetail(imp(asAdmin, "", []byte(`{"nope": 1}`)), 400, "invalid_db")
	e.wantDetail(imp(asAdmin, "", []byte(`not json`)), 400, "invalid_db")

	e.srv.orgDeleter.objects = &fakeOrgObjects{}
	id := e.mustJSON(asAdmin, "DELETE", e.orgPath(""), nil, 200)["id"].(string)
	rctx, cancel := context.WithCancel(ctx)
	e.srv.orgDeleter.Start(rctx)
	waitJob(t, e.env, id)
	cancel()
	e.srv.orgDeleter.Stop()

	older := bytes.Replace(body, []byte(`"dbVersion":"`+store.ExportDBVersion+`"`), []byte(`"dbVersion":"0042"`), 1)
	e.wantDetail(imp(asAdmin, "", older), 400, "db_version_mismatch")
	if _, err := e.store.GetOrg(ctx, e.org); err == nil {
		t.Fatal("a refused import stored the org")
	}
	if got := e.mustJSON(asAdmin, "POST", "/api/orgs/import/json?ignoreVersion=true", typedBody{"application/json", older}, 200); got["imported"] != true {
		t.Fatalf("import: %v", got)
	}
	after := e.mustJSON(asAdmin, "GET", e.orgPath("/crawls/"+d.crawlID), nil, 200)
	for _, k := range []string{"id", "state", "started", "finished", "fileSize", "fileCount", "cid", "userid", "collectionIds", "stats"} {
		if fmt.Sprint(after[k]) != fmt.Sprint(before[k]) {
			t.Errorf("crawl %s after the round trip: %v, was %v", k, after[k], before[k])
		}
	}
	wfAfter := e.mustJSON(asAdmin, "GET", e.orgPath("/crawlconfigs/"+d.cid), nil, 200)
	for _, k := range []string{"id", "name", "schedule", "config", "crawlCount", "created", "modifiedBy"} {
		if fmt.Sprint(wfAfter[k]) != fmt.Sprint(wfBefore[k]) {
			t.Errorf("workflow %s after the round trip: %v, was %v", k, wfAfter[k], wfBefore[k])
		}
	}
	pages, err := e.store.Raw().Collection("pages").CountDocuments(ctx, bson.M{"oid": e.org})
	if err != nil || pages != 1 {
		t.Errorf("pages after the round trip: %d, %v", pages, err)
	}
	// The members are back: the crawler (deleted with the org) under the
	// same id, with a password to reset; the owner (who stayed) as before.
	org, err := e.store.GetOrg(ctx, e.org)
	if err != nil {
		t.Fatal(err)
	}
	crawler, err := e.store.GetUserByEmail(ctx, asCrawler+"@example.com")
	if err != nil || org.Users[crawler.ID.String()] != store.RoleCrawler {
		t.Errorf("crawler after import: %v, %v (members %v)", crawler, err, org.Users)
	}
	if org.Users[userID(t, e.env, asOwner+"@example.com").String()] != store.RoleOwner {
		t.Errorf("owner after import: members %v", org.Users)
	}
	e.wantDetail(imp(asAdmin, "?ignoreVersion=true", older), 400, "org_already_exists")
}
