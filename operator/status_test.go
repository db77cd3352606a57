package operator

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
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
		name       string
		crawlers   map[int]*corev1.Pod
		redis      bool
		noRedisPVC bool
		tasksDone  bool
		want       childPlan
	}{
		{"crawler pods go first", pods(corev1.PodRunning), true, false, true,
			childPlan{RedisPod: true, RedisPVC: true, CrawlerPVCs: []int{0, 1}}},
		{"redis stays for the finish tasks", nil, true, false, false, childPlan{RedisPod: true, RedisPVC: true}},
		{"then everything goes", nil, true, false, true, childPlan{}},
		{"a paused or lost redis comes back for the finish tasks", nil, false, false, false,
			childPlan{RedisPod: true, RedisPVC: true}},
		{"a lost redis comes back while the crawlers stop", pods(corev1.PodRunning), false, false, false,
			childPlan{RedisPod: true, RedisPVC: true, CrawlerPVCs: []int{0, 1}}},
		{"a paused redis stays down once drained", nil, false, false, true, childPlan{}},
		{"no redis ever: everything goes with the crawlers", nil, false, true, false, childPlan{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observed{Now: t0.Add(time.Minute), Crawlers: tt.crawlers, PVCs: maps.Clone(pvcs), ConfigMapOK: true,
				FinishTasksDone: tt.tasksDone}
			if tt.noRedisPVC {
				delete(o.PVCs, "redis-"+testID)
			}
			if o.Crawlers == nil {
				o.Crawlers = map[int]*corev1.Pod{}
			}
			if tt.redis {
				o.RedisPod = redisPodIn(corev1.PodRunning)
			}
			p := decide(finished, o, testConfig())
			if p.Children.RedisPod != tt.want.RedisPod || p.Children.RedisPVC != tt.want.RedisPVC ||
				!slices.Equal(p.Children.CrawlerPVCs, tt.want.CrawlerPVCs) || len(p.Children.CrawlerPods) != 0 {
				t.Errorf("children %+v, want %+v", p.Children, tt.want)
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
		{"a count that calls for a pause", func(s *trawlerv1.CrawlJobStatus) { s.StopReason = store.StatePausedTimeQuota }, stateUpdate},
		{"state", func(s *trawlerv1.CrawlJobStatus) { s.State = store.StatePendingWait }, stateUpdate},
		{"state and pages", func(s *trawlerv1.CrawlJobStatus) { s.State, s.PagesDone = store.StatePendingWait, 9 }, stateUpdate},
		{"restart recorded", func(s *trawlerv1.CrawlJobStatus) { s.RestartTime = "2026-11-30T12:00:30Z" }, stateUpdate},
		{"stopping", func(s *trawlerv1.CrawlJobStatus) { s.Stopping = true }, stateUpdate},
		{"scale", func(s *trawlerv1.CrawlJobStatus) { s.Scale = 2 }, stateUpdate},
		// Written at once, with the pods' restart counts it was counted
		// from (see restartsSince).
		{"restarts in all", func(s *trawlerv1.CrawlJobStatus) { s.CrawlerRestarts = 1 }, stateUpdate},
		{"finished", func(s *trawlerv1.CrawlJobStatus) { s.Finished = mtime(t0) }, stateUpdate},
		{"a condition", func(s *trawlerv1.CrawlJobStatus) { s.Conditions[0].Status = metav1.ConditionFalse }, stateUpdate},
		{"the spec generation seen", func(s *trawlerv1.CrawlJobStatus) { s.ObservedGeneration = 2 }, stateUpdate},
		// The paused state that answers it is written at once.
		{"a pause asked", func(s *trawlerv1.CrawlJobStatus) { s.ObservedGeneration, s.StopReason = 2, reasonPaused }, progressUpdate},
		{"a pause asked, and pages", func(s *trawlerv1.CrawlJobStatus) {
			s.ObservedGeneration, s.StopReason, s.PagesDone = 2, reasonPaused, 3
		}, progressUpdate},
		{"a pause asked and answered", func(s *trawlerv1.CrawlJobStatus) {
			s.ObservedGeneration, s.StopReason, s.State = 2, reasonPaused, store.StatePaused
		}, stateUpdate},
		{"a stop asked", func(s *trawlerv1.CrawlJobStatus) { s.ObservedGeneration, s.StopReason = 2, reasonStoppedByUser }, stateUpdate},
		{"a pause asked with something else", func(s *trawlerv1.CrawlJobStatus) {
			s.ObservedGeneration, s.StopReason, s.Stopping = 2, reasonPaused, true
		}, stateUpdate},
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

// TestChangesChildren: while a state transition waits for the store, only
// a status recording what was done to the pods is written before it.
func TestChangesChildren(t *testing.T) {
	base := newJob(1, runningStatus(store.StateStarting, 1)).Status
	tests := []struct {
		name   string
		change func(*trawlerv1.CrawlJobStatus)
		want   bool
	}{
		{"nothing", func(*trawlerv1.CrawlJobStatus) {}, false},
		{"running since", func(s *trawlerv1.CrawlJobStatus) { s.RunningSince = mtime(t0) }, false},
		{"pods and progress", func(s *trawlerv1.CrawlJobStatus) {
			s.Pods, s.SizeHuman = map[string]trawlerv1.PodStatus{"redis": {Phase: "Pending"}}, "0 Bytes"
		}, false},
		{"scale", func(s *trawlerv1.CrawlJobStatus) { s.Scale = 2 }, true},
		{"restart carried out", func(s *trawlerv1.CrawlJobStatus) { s.RestartTime = "2026-11-30T12:00:30Z" }, true},
		{"crawler restarts", func(s *trawlerv1.CrawlJobStatus) { s.CrawlerRestarts = 1 }, true},
		{"restarts at progress", func(s *trawlerv1.CrawlJobStatus) { s.RestartsAtProgress = 1 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := *base.DeepCopy()
			tt.change(&cur)
			if got := changesChildren(base, cur); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCrawlStatus covers the one function that assembles a CrawlJob's
// status: from the status last written, decide's plan and what the pass
// observed, the store's answers included.
func TestCrawlStatus(t *testing.T) {
	now := t0.Add(time.Minute)
	running := newJob(1, runningStatus(store.StateRunning, 1), withStatus(func(s *trawlerv1.CrawlJobStatus) {
		s.PagesFound, s.PagesDone, s.Size, s.SizeHuman = 10, 2, 2000, "2.0 kB"
	}))
	waiting := newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.State = store.StateWaitingOrgLimit }))
	letIn := []transition{
		{To: store.StateStarting, From: []string{store.StateWaitingOrgLimit}},
		{To: store.StateRunning, From: []string{store.StateStarting}},
	}
	complete := transition{To: store.StateComplete, From: store.ActiveStates, Finished: true,
		Stats: &store.CrawlStats{Found: 12, Done: 12, Size: 3000}}
	failed := transition{To: store.StateFailed, From: store.ActiveStates, Finished: true}
	finished := newJob(1, runningStatus(store.StateComplete, 1), withStatus(func(s *trawlerv1.CrawlJobStatus) {
		s.Finished = mtime(t0)
		s.Pods = map[string]trawlerv1.PodStatus{"0": {Phase: "Succeeded"}, "redis": {Phase: "Running"}}
	}))
	wantState := func(want string) func(*testing.T, trawlerv1.CrawlJobStatus) {
		return func(t *testing.T, st trawlerv1.CrawlJobStatus) {
			t.Helper()
			if st.State != want {
				t.Errorf("state %s, want %s", st.State, want)
			}
		}
	}
	cond := func(st trawlerv1.CrawlJobStatus, typ string) *metav1.Condition {
		return meta.FindStatusCondition(st.Conditions, typ)
	}

	tests := []struct {
		name  string
		job   *trawlerv1.CrawlJob
		plan  func(*plan)     // changes to the plan that keeps everything
		o     func(*observed) // changes to an observed pass with no pods
		check func(*testing.T, trawlerv1.CrawlJobStatus)
	}{
		{name: "a new job: starting, its generation seen, the spec valid, the scale planned",
			job:  newJob(2),
			plan: func(p *plan) { p.Scale = 2 },
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.State != store.StateStarting || st.ObservedGeneration != 1 || st.Scale != 2 {
					t.Errorf("state %s generation %d scale %d", st.State, st.ObservedGeneration, st.Scale)
				}
				if c := cond(st, CondSpecValid); c == nil || c.Status != metav1.ConditionTrue {
					t.Errorf("SpecValid %+v", c)
				}
			}},
		{name: "spec problems: SpecValid false with every problem",
			job:  newJob(1),
			plan: func(p *plan) { p.Problems = []string{"a", "b"} },
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if c := cond(st, CondSpecValid); c == nil || c.Status != metav1.ConditionFalse || c.Message != "a; b" {
					t.Errorf("SpecValid %+v", c)
				}
			}},
		{name: "decide's facts are recorded",
			job: newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.Scale, s.RestartsAtProgress, s.CrawlerRestarts = 1, 4, 4 })),
			plan: func(p *plan) {
				p.Scale, p.RestartsAtProgress, p.CrawlerRestarts, p.Stopping = 3, 0, 6, true
				p.WaitingReason, p.RunningSince = "waiting for redis", mtime(t0)
			},
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.Scale != 3 || st.RestartsAtProgress != 0 || st.CrawlerRestarts != 6 || !st.Stopping || st.WaitingReason != "waiting for redis" ||
					st.RunningSince == nil || !st.RunningSince.Time.Equal(t0) {
					t.Errorf("status %+v", st)
				}
			}},
		{name: "a restart done records the spec's restart time",
			job:  newJob(1, func(cj *trawlerv1.CrawlJob) { cj.Spec.RestartTime = "2026-11-30T12:00:30Z" }),
			plan: func(p *plan) { p.RestartRecorded = true },
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.RestartTime != "2026-11-30T12:00:30Z" {
					t.Errorf("restartTime %q", st.RestartTime)
				}
			}},
		{name: "a restart pending keeps the restart time recorded before",
			job: newJob(1, func(cj *trawlerv1.CrawlJob) { cj.Spec.RestartTime = "2026-11-30T12:00:30Z" }),
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.RestartTime != "" {
					t.Errorf("restartTime %q", st.RestartTime)
				}
			}},
		{name: "activity: the crawler stopped, redis still up",
			job: running,
			plan: func(p *plan) {
				p.Activity = &crawlerActivity{Active: false, InitRedis: true, LastActiveTime: mtime(now)}
			},
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				c := cond(st, CondCrawlerActive)
				if c == nil || c.Status != metav1.ConditionFalse || !c.LastTransitionTime.Time.Equal(now) {
					t.Errorf("CrawlerActive %+v", c)
				}
				if !st.InitRedis || st.LastActiveTime == nil || !st.LastActiveTime.Time.Equal(now) {
					t.Errorf("initRedis %v lastActive %v", st.InitRedis, st.LastActiveTime)
				}
			}},
		{name: "no activity looked at: kept as it was",
			job: running,
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if c := cond(st, CondCrawlerActive); c == nil || c.Status != metav1.ConditionTrue || !st.InitRedis {
					t.Errorf("CrawlerActive %+v initRedis %v", c, st.InitRedis)
				}
			}},
		{name: "progress from Redis, with its human size",
			job: running,
			plan: func(p *plan) {
				p.Progress = &progress{PagesFound: 20, PagesDone: 5, Size: 12345678, FilesAdded: 1, FilesAddedSize: 99}
			},
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.PagesFound != 20 || st.PagesDone != 5 || st.Size != 12345678 || st.SizeHuman != "12.3 MB" ||
					st.FilesAdded != 1 || st.FilesAddedSize != 99 {
					t.Errorf("status %+v", st)
				}
			}},
		{name: "no progress read: the last kept",
			job: running,
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.PagesFound != 10 || st.PagesDone != 2 || st.SizeHuman != "2.0 kB" {
					t.Errorf("status %+v", st)
				}
			}},
		{name: "transitions: both made",
			job: waiting, plan: func(p *plan) { p.Transitions = letIn },
			o: func(o *observed) {
				o.Answers = []transitionResult{{Changed: true, State: store.StateStarting}, {Changed: true, State: store.StateRunning}}
			},
			check: wantState(store.StateRunning)},
		{name: "transitions: the second refused, the document's state",
			job: waiting, plan: func(p *plan) { p.Transitions = letIn },
			o: func(o *observed) {
				o.Answers = []transitionResult{{Changed: true, State: store.StateStarting}, {State: store.StateCanceled, Finished: ptr(t0)}}
			},
			check: wantState(store.StateCanceled)},
		{name: "transitions: the second not tried (store error)",
			job: waiting, plan: func(p *plan) { p.Transitions = letIn },
			o:     func(o *observed) { o.Answers = []transitionResult{{Changed: true, State: store.StateStarting}} },
			check: wantState(store.StateStarting)},
		{name: "transitions: none tried",
			job: waiting, plan: func(p *plan) { p.Transitions = letIn },
			check: wantState(store.StateWaitingOrgLimit)},
		{name: "a final state made brings its finished time and stats, over the progress",
			job: running,
			plan: func(p *plan) {
				p.Progress = &progress{PagesFound: 12, PagesDone: 11, Size: 2900}
				p.Transitions = []transition{complete}
			},
			o: func(o *observed) {
				o.Answers = []transitionResult{{Changed: true, State: store.StateComplete, Finished: ptr(t0.Add(50 * time.Second))}}
			},
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.State != store.StateComplete || st.Finished == nil || !st.Finished.Time.Equal(t0.Add(50*time.Second)) ||
					st.PagesDone != 12 || st.Size != 3000 || st.SizeHuman != "3.0 kB" {
					t.Errorf("status %+v", st)
				}
			}},
		{name: "the operator's failure made: its reason kept",
			job: running,
			plan: func(p *plan) {
				p.FailReason, p.Transitions = "crawler exited with the crawler's fatal code 17", []transition{failed}
			},
			o: func(o *observed) {
				o.Answers = []transitionResult{{Changed: true, State: store.StateFailed, Finished: ptr(now)}}
			},
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.State != store.StateFailed || st.FailReason == "" {
					t.Errorf("state %s failReason %q", st.State, st.FailReason)
				}
			}},
		{name: "a stop that ends canceled by the outcome rule: no fail reason, the pods may go",
			job: newJob(1, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) { cj.Spec.Stopping = true }),
			plan: func(p *plan) {
				p.Stopping = true
				p.Transitions = []transition{{To: store.StateCanceled, From: store.ActiveStates, Finished: true,
					Stats: &store.CrawlStats{Found: 0, Done: 0}}}
			},
			o: func(o *observed) {
				o.Answers = []transitionResult{{Changed: true, State: store.StateCanceled, Finished: ptr(now)}}
			},
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.State != store.StateCanceled || st.Finished == nil || !st.Stopping || st.FailReason != "" {
					t.Errorf("state %s finished %v stopping %v failReason %q", st.State, st.Finished, st.Stopping, st.FailReason)
				}
				if failureUnreported(st, observed{}) {
					t.Error("pods kept for a failure report")
				}
			}},
		{name: "the restart cap's failure made: its reason and the count kept",
			job: running,
			plan: func(p *plan) {
				p.CrawlerRestarts = 20
				p.FailReason = "crawler containers restarted 20 times in all, the most operator.max_crawler_restarts allows; the crawl keeps crashing"
				p.Transitions = []transition{failed}
			},
			o: func(o *observed) {
				o.Answers = []transitionResult{{Changed: true, State: store.StateFailed, Finished: ptr(now)}}
			},
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.State != store.StateFailed || st.CrawlerRestarts != 20 || !strings.Contains(st.FailReason, "20 times in all") {
					t.Errorf("state %s restarts %d failReason %q", st.State, st.CrawlerRestarts, st.FailReason)
				}
			}},
		{name: "the operator's failure refused: no reason",
			job: running,
			plan: func(p *plan) {
				p.FailReason, p.Transitions = "crawler exited with the crawler's fatal code 17", []transition{failed}
			},
			o: func(o *observed) { o.Answers = []transitionResult{{State: store.StateComplete, Finished: ptr(t0)}} },
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.State != store.StateComplete || st.FailReason != "" {
					t.Errorf("state %s failReason %q", st.State, st.FailReason)
				}
			}},
		{name: "a deleted job whose cancel the store answered with a state it does not know is finished anyway",
			job: newJob(1, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) { cj.DeletionTimestamp = mtime(t0) }),
			plan: func(p *plan) {
				p.Transitions = []transition{{To: store.StateCanceled, From: store.ActiveStates, Finished: true}}
			},
			o: func(o *observed) { o.Answers = []transitionResult{{State: "paused"}} },
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if st.Finished == nil || !st.Finished.Time.Equal(now) {
					t.Errorf("finished %v", st.Finished)
				}
			}},
		{name: "background tasks just done are recorded",
			job: newJob(1, runningStatus(store.StateFailed, 1), withStatus(func(s *trawlerv1.CrawlJobStatus) {
				s.Finished, s.FailReason = mtime(t0), "getting nowhere"
			})),
			o: func(o *observed) { o.StartedNotified, o.FailureReported, o.FinishTasksDone = true, true, true },
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				for _, typ := range []string{CondStartedNotified, CondFailureReported, CondFinishTasks} {
					if c := cond(st, typ); c == nil || c.Status != metav1.ConditionTrue {
						t.Errorf("%s %+v", typ, c)
					}
				}
			}},
		{name: "no failure reported without a reason, no finish tasks before the end",
			job: running,
			o:   func(o *observed) { o.FailureReported, o.FinishTasksDone = true, true },
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if cond(st, CondFailureReported) != nil || cond(st, CondFinishTasks) != nil {
					t.Errorf("conditions %+v", st.Conditions)
				}
			}},
		{name: "the pods as observed, with their usage",
			job: running,
			o: func(o *observed) {
				o.Crawlers = pods(corev1.PodRunning)
				o.RedisPod = redisPodIn(corev1.PodRunning)
				o.Usage = map[string]podUsage{name(0): {CPUMilli: 800, Memory: 600 << 20}}
			},
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if len(st.Pods) != 2 || st.Pods["0"].Phase != "Running" || st.Pods["0"].Usage["cpu"] != "800m" ||
					st.Pods["redis"].Phase != "Running" {
					t.Errorf("pods %+v", st.Pods)
				}
			}},
		{name: "a finished crawl keeps the last view of pods torn down",
			job: finished,
			o:   func(o *observed) { o.RedisPod = redisPodIn(corev1.PodRunning) },
			check: func(t *testing.T, st trawlerv1.CrawlJobStatus) {
				if len(st.Pods) != 2 || st.Pods["0"].Phase != "Succeeded" {
					t.Errorf("pods %+v", st.Pods)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlan(tt.job.Status)
			if tt.plan != nil {
				tt.plan(&p)
			}
			o := observed{Now: now, Crawlers: map[int]*corev1.Pod{}, PVCs: map[string]*corev1.PersistentVolumeClaim{}}
			if tt.o != nil {
				tt.o(&o)
			}
			before := tt.job.DeepCopy()
			tt.check(t, crawlStatus(tt.job, p, o))
			if !apiequality.Semantic.DeepEqual(before, tt.job) {
				t.Error("crawlStatus changed the job")
			}
		})
	}
}
