package crawls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/devstack"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
	"github.com/trawlerhq/trawler/store"
)

// TestOrgDeletionSurvivesKill deletes an org with a finished crawl (files
// in storage), a running crawl, a scheduled workflow and two members, and
// kills trawler in the middle of the job: S3 is down, so the job has
// canceled the running crawl and let its CrawlJob go, but cannot delete
// the files. A new trawler process on the same cluster, MongoDB and S3
// (back up) resumes the job, which finishes with nothing of the org left
// in MongoDB, in S3 or in Kubernetes (§8.7 items 2-6).
func TestOrgDeletionSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sandbox")
	}
	dir := t.TempDir()
	logFile, err := os.Create(filepath.Join(dir, "trawler.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			raw, _ := os.ReadFile(logFile.Name())
			lines := strings.Split(string(raw), "\n")
			t.Logf("trawler log (last 120 lines):\n%s", strings.Join(lines[max(0, len(lines)-120):], "\n"))
		}
	})
	v, err := e2etest.DevConfig(map[string]any{"api.schedule_rescan": 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, kill := context.WithCancel(context.Background())
	defer kill()
	stack, err := devstack.Start(serveCtx, v, dir, sandbox.Options{Nodes: kubelet.Nodes{Count: 1}}, logger)
	if errors.Is(err, sandbox.ErrBinaryMissing) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	env := stack.Env
	defer env.Stop()
	if err := e2etest.WaitReady(stack.APIURL+"/readyz", 2*time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	login := func(base string) client {
		return client{e2etest.LoginAs(t, base, &http.Client{Timeout: time.Minute},
			v.GetString("superuser.email"), v.GetString("superuser.password"))}
	}
	c := login(stack.APIURL)
	defaultOID := c.OrgID()
	c.inNewOrg("Doomed")
	oid := c.OID
	for _, u := range []struct{ email, org string }{
		{"only@example.com", oid}, {"both@example.com", oid}, {"both@example.com", defaultOID},
	} {
		c.Object("POST", "/api/orgs/"+u.org+"/add-user", map[string]any{"email": u.email, "password": "pw-12345678",
			"name": u.email, "role": 20}, 200)
	}
	done := c.runCrawl("done", "https://example.com/?sim-pages=3&sim-links=2", 1)
	doneID := done["id"].(string)
	running := c.StartCrawl(oid, "https://example.com/?sim-pages=2000&sim-links=2&sim-page-ms=1000", 1)
	c.Object("POST", c.Org("/crawlconfigs/"), map[string]any{"name": "nightly", "schedule": "0 0 * * *",
		"config": map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/"}}}}, 200)
	c.WaitCrawlState(oid, running, 3*time.Minute, "running")

	ctx := context.Background()
	ns := v.GetString("crawler_namespace")
	trawler, err := versioned.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3.New(env.S3.Storage("check", devstack.Bucket), s3.Options{Transport: env.HTTPTransport()})
	if err != nil {
		t.Fatal(err)
	}
	if len(objects(t, b, s3.OrgPrefix(oid))) == 0 {
		t.Fatal("the finished crawl stored nothing under the org's folder")
	}

	// S3 goes down: the job gets past canceling the crawls and stops at
	// the files of the finished crawl.
	if err := env.S3.Process.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	del := c.Object("DELETE", c.Org(""), nil, 200)
	jobID, _ := del["id"].(string)
	if del["deleted"] != true || !strings.HasPrefix(jobID, "delete-org-"+oid+"-") {
		t.Fatalf("DELETE: %v", del)
	}
	orgJobs := func() int {
		list, err := trawler.TrawlerV1().CrawlJobs(ns).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelOrg + "=" + oid})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	e2etest.WaitFor(t, 3*time.Minute, "the running crawl to be canceled and its CrawlJob gone", func() (bool, error) {
		st := c.Crawl(oid, running).State
		n := orgJobs()
		return st == "canceled" && n == 0, fmt.Errorf("crawl %s, %d CrawlJobs", st, n)
	})
	if job := c.Object("GET", "/api/orgs/all/jobs/"+jobID, nil, 200); job["success"] != nil {
		t.Fatalf("job before the kill: %v", job)
	}
	c.Object("GET", c.Org(""), nil, 200)

	kill()
	if err := <-stack.Served; err != nil {
		t.Logf("first trawler: %v", err)
	}
	if err := env.S3.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	serveCtx2, stop := context.WithCancel(context.Background())
	stack2, err := devstack.ServeOn(serveCtx2, v, env, logger)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	defer func() { stop(); <-stack2.Served }()
	if err := e2etest.WaitReady(stack2.APIURL+"/readyz", 2*time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	c = login(stack2.APIURL)
	c.OID = oid
	var job map[string]any
	e2etest.WaitFor(t, 4*time.Minute, "the resumed deletion to finish", func() (bool, error) {
		job = c.Object("GET", "/api/orgs/all/jobs/"+jobID, nil, 200)
		return job["success"] != nil, fmt.Errorf("job %v", job)
	})
	if job["success"] != true || job["finished"] == nil {
		t.Fatalf("job: %v", job)
	}

	// Nothing of the org is left: API, MongoDB, S3, Kubernetes.
	if code, body := c.Send("GET", c.Org(""), nil, ""); code != 404 {
		t.Errorf("GET the deleted org: %d %s", code, body)
	}
	for _, id := range []string{doneID, running} {
		if code := c.Status("/api/orgs/all/all-crawls/" + id + "/replay.json"); code != 404 {
			t.Errorf("replay.json of %s: %d", id, code)
		}
	}
	if left := objects(t, b, s3.OrgPrefix(oid)); len(left) > 0 {
		t.Errorf("left in S3: %v", left)
	}
	db := rawDB(t, env.MongoURI(), v.GetString("mongo.database"))
	org := uuid.MustParse(oid)
	for _, coll := range []string{"organizations", "crawls", "crawl_configs", "configs_revs", "collections", "profiles",
		"invites", "webhooks", "crawl_usage", "pages", "crawl_logs", "file_uploads"} {
		filter := bson.M{"oid": org}
		if coll == "organizations" {
			filter = bson.M{"_id": org}
		}
		if n, err := db.Collection(coll).CountDocuments(ctx, filter); err != nil || n > 0 {
			t.Errorf("%s: %d documents of the org left (%v)", coll, n, err)
		}
	}
	for _, id := range []string{doneID, running} {
		if n, _ := db.Collection("crawl_errors").CountDocuments(ctx, bson.M{"crawlId": id}); n > 0 {
			t.Errorf("crawl_errors: %d lines of %s left", n, id)
		}
	}
	for email, want := range map[string]int64{"only@example.com": 0, "both@example.com": 1} {
		if n, _ := db.Collection("users").CountDocuments(ctx, bson.M{"email": email}); n != want {
			t.Errorf("user %s: %d, want %d", email, n, want)
		}
	}
	if n, _ := db.Collection("jobs").CountDocuments(ctx, bson.M{"_id": jobID}); n != 1 {
		t.Errorf("the deletion's job record: %d", n)
	}
	if n := orgJobs(); n > 0 {
		t.Errorf("%d CrawlJobs of the org left", n)
	}
	kube := env.Client.CoreV1()
	for _, id := range []string{doneID, running} {
		sel := metav1.ListOptions{LabelSelector: k8s.LabelCrawl + "=" + id}
		pods, err := kube.Pods(ns).List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		pvcs, err := kube.PersistentVolumeClaims(ns).List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items)+len(pvcs.Items) > 0 {
			t.Errorf("crawl %s: %d pods and %d PVCs left", id, len(pods.Items), len(pvcs.Items))
		}
	}
	cms, err := kube.ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelOrg + "=" + oid})
	if err != nil || len(cms.Items) > 0 {
		t.Errorf("config maps of the org: %v, %v", cms, err)
	}
	// Schedules live in the workflows (crawl_configs, checked above); the
	// other org is untouched.
	if code := c.Status("/api/orgs/" + defaultOID); code != 200 {
		t.Errorf("the default org after the deletion: %d", code)
	}
}

// rawDB is trawler's database, read directly.
func rawDB(t *testing.T, uri, name string) *mongo.Database {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetRegistry(store.Registry()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client.Database(name)
}
