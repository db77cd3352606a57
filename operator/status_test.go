package operator

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

func TestTeardownOrder(t *testing.T) {
	finished := newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) {
		s.State, s.Finished, s.Scale, s.InitRedis = store.StateComplete, mtime(t0), 1, true
	}))
	pvcs := desiredChildren(finished, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0, 1}}).PVCs
	tests := []struct {
		name      string
		crawlers  map[int]*corev1.Pod
		redis     bool
		tasksDone bool
		want      childPlan
	}{
		{"crawler pods go first", pods(corev1.PodRunning), true, true,
			childPlan{RedisPod: true, RedisPVC: true, CrawlerPVCs: []int{0, 1}}},
		{"redis stays for the finish tasks", nil, true, false, childPlan{RedisPod: true, RedisPVC: true}},
		{"then everything goes", nil, true, true, childPlan{}},
		{"no redis ever: everything goes with the crawlers", nil, false, false, childPlan{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observed{Now: t0.Add(time.Minute), Job: finished, Crawlers: tt.crawlers, PVCs: pvcs, ConfigMapOK: true,
				FinishTasksDone: tt.tasksDone}
			if o.Crawlers == nil {
				o.Crawlers = map[int]*corev1.Pod{}
			}
			if tt.redis {
				o.RedisPod = redisPodIn(corev1.PodRunning)
			}
			d := decide(o, testConfig())
			if d.Plan.RedisPod != tt.want.RedisPod || d.Plan.RedisPVC != tt.want.RedisPVC ||
				!slices.Equal(d.Plan.CrawlerPVCs, tt.want.CrawlerPVCs) || len(d.Plan.CrawlerPods) != 0 {
				t.Errorf("plan %+v, want %+v", d.Plan, tt.want)
			}
		})
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 Bytes", 1: "1 Byte", 999: "999 Bytes", 1000: "1.0 kB",
		12345678: "12.3 MB", 22_000_000_000: "22.0 GB"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestApplyTransitionResult(t *testing.T) {
	now := t0.Add(90*time.Second + 300*time.Millisecond)
	tr := transition{To: store.StateComplete, Finished: true, Stats: &store.CrawlStats{Found: 3, Done: 3, Size: 2000}}
	tests := []struct {
		name         string
		res          transitionResult
		wantState    string
		wantFinished *time.Time
	}{
		{"changed", transitionResult{Changed: true, State: store.StateComplete, Finished: ptr(t0.Add(90 * time.Second))}, store.StateComplete, ptr(t0.Add(90 * time.Second))},
		{"lost to a cancel: adopt the document", transitionResult{State: store.StateCanceled, Finished: ptr(t0.Add(80 * time.Second))},
			store.StateCanceled, ptr(t0.Add(80 * time.Second))},
		{"document terminal without finished time", transitionResult{State: store.StateFailed}, store.StateFailed, ptr(t0.Add(90 * time.Second))},
		{"document still running", transitionResult{State: store.StateRunning}, store.StateRunning, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := trawlerv1.CrawlJobStatus{State: store.StateRunning}
			applyTransitionResult(&st, tr, tt.res, now)
			if st.State != tt.wantState {
				t.Errorf("state %s, want %s", st.State, tt.wantState)
			}
			if (st.Finished == nil) != (tt.wantFinished == nil) || (st.Finished != nil && !st.Finished.Time.Equal(*tt.wantFinished)) {
				t.Errorf("finished %v, want %v", st.Finished, tt.wantFinished)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestCrawlStatusFoldsTransitionsInOrder(t *testing.T) {
	waiting := newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.State = store.StateWaitingOrgLimit }))
	d := decision{Status: waiting.Status, Transitions: []transition{
		{To: store.StateStarting, From: []string{store.StateWaitingOrgLimit}},
		{To: store.StateRunning, From: []string{store.StateStarting}},
	}}
	tests := []struct {
		name    string
		results []transitionResult
		want    string
	}{
		{"both made", []transitionResult{{Changed: true, State: store.StateStarting}, {Changed: true, State: store.StateRunning}}, store.StateRunning},
		{"the second refused: the document's state", []transitionResult{{Changed: true, State: store.StateStarting},
			{State: store.StateCanceled, Finished: ptr(t0)}}, store.StateCanceled},
		{"the second not tried (store error)", []transitionResult{{Changed: true, State: store.StateStarting}}, store.StateStarting},
		{"none tried", nil, store.StateWaitingOrgLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observed{Now: t0.Add(time.Minute), Job: waiting}
			if got := crawlStatus(o, d, tt.results).State; got != tt.want {
				t.Errorf("state %s, want %s", got, tt.want)
			}
		})
	}
}

func TestNeedsStatusUpdate(t *testing.T) {
	base := newJob(1, runningStatus(store.StateRunning, 1)).Status
	base.PagesFound, base.PagesDone = 10, 2
	tests := []struct {
		name   string
		change func(*trawlerv1.CrawlJobStatus)
		want   statusUpdate
	}{
		{"nothing", func(*trawlerv1.CrawlJobStatus) {}, noUpdate},
		{"pages and size", func(s *trawlerv1.CrawlJobStatus) { s.PagesDone, s.Size, s.SizeHuman = 3, 5000, "5.0 kB" }, progressUpdate},
		{"files", func(s *trawlerv1.CrawlJobStatus) { s.FilesAdded, s.FilesAddedSize = 1, 100 }, progressUpdate},
		{"a pod's phase", func(s *trawlerv1.CrawlJobStatus) { s.Pods = map[string]trawlerv1.PodStatus{"0": {Phase: "Running"}} }, progressUpdate},
		{"the waiting reason", func(s *trawlerv1.CrawlJobStatus) { s.WaitingReason = "0/2 nodes are available" }, progressUpdate},
		{"state", func(s *trawlerv1.CrawlJobStatus) { s.State = store.StatePendingWait }, stateUpdate},
		{"state and pages", func(s *trawlerv1.CrawlJobStatus) { s.State, s.PagesDone = store.StatePendingWait, 9 }, stateUpdate},
		{"restart recorded", func(s *trawlerv1.CrawlJobStatus) { s.RestartTime = "2026-11-30T12:00:30Z" }, stateUpdate},
		{"stopping", func(s *trawlerv1.CrawlJobStatus) { s.Stopping = true }, stateUpdate},
		{"scale", func(s *trawlerv1.CrawlJobStatus) { s.Scale = 2 }, stateUpdate},
		{"finished", func(s *trawlerv1.CrawlJobStatus) { s.Finished = mtime(t0) }, stateUpdate},
		{"a condition", func(s *trawlerv1.CrawlJobStatus) { s.Conditions[0].Status = metav1.ConditionFalse }, stateUpdate},
		{"the spec generation seen", func(s *trawlerv1.CrawlJobStatus) { s.ObservedGeneration = 2 }, stateUpdate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := *base.DeepCopy()
			tt.change(&cur)
			if got := needsStatusUpdate(base, cur); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
