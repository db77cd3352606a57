package operator

import (
	"testing"
	"time"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

func TestProgressEcho(t *testing.T) {
	old := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1))
	old.ResourceVersion = "10"
	tests := []struct {
		name string
		edit func(*trawlerv1.CrawlJob)
		want bool
	}{
		{"pages", func(j *trawlerv1.CrawlJob) { j.Status.PagesDone++ }, true},
		{"a pod's phase", func(j *trawlerv1.CrawlJob) {
			j.Status.Pods = map[string]trawlerv1.PodStatus{"0": {Phase: "Running"}}
		}, true},
		{"a resync", func(j *trawlerv1.CrawlJob) { j.ResourceVersion = "10" }, false},
		{"the state", func(j *trawlerv1.CrawlJob) { j.Status.State = store.StatePendingWait }, false},
		{"pages and the state", func(j *trawlerv1.CrawlJob) { j.Status.PagesDone, j.Status.State = 9, store.StateComplete }, false},
		{"a stop", func(j *trawlerv1.CrawlJob) { j.Spec.Stopping, j.Status.PagesDone = true, 4 }, false},
		{"a scale", func(j *trawlerv1.CrawlJob) { j.Spec.Scale, j.Generation = 2, 2 }, false},
		{"a delete", func(j *trawlerv1.CrawlJob) { j.DeletionTimestamp = mtime(t0.Add(time.Minute)) }, false},
		{"the finalizer gone", func(j *trawlerv1.CrawlJob) { j.Finalizers = nil }, false},
		{"nothing in the status", func(*trawlerv1.CrawlJob) {}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := old.DeepCopy()
			cur.ResourceVersion = "11"
			tt.edit(cur)
			if got := progressEcho(old, cur); got != tt.want {
				t.Errorf("progressEcho = %v, want %v", got, tt.want)
			}
		})
	}
	if progressEcho(old, &trawlerv1.ProfileJob{}) || progressEcho(&trawlerv1.ProfileJob{}, old) {
		t.Error("a ProfileJob taken for a CrawlJob's echo")
	}
}

func TestJobHandlerRoutesResyncsApart(t *testing.T) {
	old := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1))
	old.ResourceVersion = "10"
	tests := []struct {
		name       string
		edit       func(*trawlerv1.CrawlJob)
		wantCause  string // "" no state wake
		wantResync bool
	}{
		{"a resync", func(j *trawlerv1.CrawlJob) {}, "", true},
		{"a progress echo", func(j *trawlerv1.CrawlJob) { j.ResourceVersion, j.Status.PagesDone = "11", 5 }, "", false},
		{"a stop", func(j *trawlerv1.CrawlJob) { j.ResourceVersion, j.Spec.Stopping = "11", true }, "crawljob-update", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cause string
			var resynced bool
			h := jobHandler("crawljob", func(key, c string) { cause = c }, func(string) { resynced = true })
			cur := old.DeepCopy()
			tt.edit(cur)
			h.OnUpdate(old, cur)
			if cause != tt.wantCause || resynced != tt.wantResync {
				t.Errorf("state wake %q, resync %v; want %q, %v", cause, resynced, tt.wantCause, tt.wantResync)
			}
		})
	}
}
