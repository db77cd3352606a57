package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// TestOrgDeletionJobs: one deletion job per org, however many callers
// race; its record's life (null, then true; a failed one retried); and
// DeleteOrgDocuments keeps the deletion's own record but no other job of
// the org.
func TestOrgDeletionJobs(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "doomed")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var started []*store.BackgroundJob
	refused := 0
	for range 4 {
		wg.Go(func() {
			job, err := m.StartOrgDeletion(ctx, org.ID, now())
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				started = append(started, job)
			case errors.Is(err, store.ErrOrgBeingDeleted):
				refused++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(started) != 1 || refused != 3 {
		t.Fatalf("%d deletions started, %d refused; want 1 and 3", len(started), refused)
	}
	job := started[0]
	if !strings.HasPrefix(job.ID, "delete-org-"+org.ID.String()+"-") || job.Success != nil || job.OrgStorage == nil {
		t.Fatalf("job %+v", job)
	}
	pending, err := m.UnfinishedJobs(ctx, store.JobTypeDeleteOrg)
	if err != nil || len(pending) != 1 || pending[0].ID != job.ID {
		t.Fatalf("unfinished %v, %v", pending, err)
	}
	if err := m.RetryJob(ctx, job.ID, now()); store.Detail(err) != "job_not_finished" {
		t.Errorf("retry of a running job: %v", err)
	}
	if err := m.FinishJob(ctx, job.ID, false, now()); err != nil {
		t.Fatal(err)
	}
	if err := m.RetryJob(ctx, job.ID, now()); err != nil {
		t.Fatal(err)
	}
	got, err := m.GetJob(ctx, job.ID)
	if err != nil || got.Success != nil || got.Finished != nil || len(got.PreviousAttempts) != 1 {
		t.Fatalf("retried job %+v, %v", got, err)
	}

	if _, err := m.Raw().Collection("jobs").InsertOne(ctx, bson.M{"_id": "other", "type": "readd-pages", "oid": org.ID}); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteOrgDocuments(ctx, org.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteOrgDocuments(ctx, org.ID); err != nil {
		t.Fatalf("a second run: %v", err)
	}
	if _, err := m.GetOrg(ctx, org.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("org after deletion: %v", err)
	}
	if _, err := m.GetJob(ctx, "other"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the org's other job: %v", err)
	}
	if err := m.FinishJob(ctx, job.ID, true, now()); err != nil {
		t.Fatal(err)
	}
	if err := m.RetryJob(ctx, job.ID, now()); store.Detail(err) != "job_already_succeeded" {
		t.Errorf("retry of a succeeded job: %v", err)
	}
	if _, err := m.StartOrgDeletion(ctx, org.ID, now()); store.Detail(err) != "org_not_found" {
		t.Errorf("deleting a deleted org: %v", err)
	}
}
