package operator

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// running sets a status of a crawl that has been running since t0.
func runningStatus(state string, scale int32) func(*trawlerv1.CrawlJob) {
	return withStatus(func(s *trawlerv1.CrawlJobStatus) {
		s.State, s.Scale, s.InitRedis = state, scale, true
		s.RunningSince = mtime(t0)
		s.Conditions = []metav1.Condition{{Type: CondCrawlerActive, Status: metav1.ConditionTrue}}
	})
}

// wantTransition checks that decide planned exactly one state change, to
// to ("" = none).
func wantTransition(to string) func(*testing.T, plan) {
	if to == "" {
		return wantTransitions()
	}
	return wantTransitions(to)
}

// wantTransitions checks the state changes decide planned, in order.
func wantTransitions(to ...string) func(*testing.T, plan) {
	return func(t *testing.T, p plan) {
		t.Helper()
		var got []string
		for _, tr := range p.Transitions {
			got = append(got, tr.To)
		}
		if !slices.Equal(got, to) {
			t.Errorf("transitions %v, want %v", got, to)
		}
	}
}

func wantPods(idx ...int) func(*testing.T, plan) {
	return func(t *testing.T, p plan) {
		t.Helper()
		if !slices.Equal(p.Children.CrawlerPods, idx) {
			t.Errorf("crawler pods %v, want %v", p.Children.CrawlerPods, idx)
		}
	}
}

func wantScale(n int32) func(*testing.T, plan) {
	return func(t *testing.T, p plan) {
		t.Helper()
		if p.Scale != n {
			t.Errorf("scale %d, want %d", p.Scale, n)
		}
	}
}

func TestDecide(t *testing.T) {
	type check = func(*testing.T, plan)
	tests := []struct {
		name   string
		job    *trawlerv1.CrawlJob
		at     time.Duration // since t0
		pods   map[int]*corev1.Pod
		redis  *redisState
		noCM   bool
		orgFul bool
		checks []check
	}{
		{name: "new job renders every instance at once, no redis pod yet",
			job: newJob(3), at: time.Second,
			checks: []check{wantTransition(""), wantScale(3), wantPods(0, 1, 2), func(t *testing.T, p plan) {
				if p.Children.RedisPod || !p.Children.RedisPVC || p.Poll {
					t.Errorf("redis plan %+v poll %v", p.Children, p.Poll)
				}
				if p.Reaches != store.StateStarting || p.RequeueAfter != 59*time.Second {
					t.Errorf("state %s requeue %v", p.Reaches, p.RequeueAfter)
				}
			}}},
		{name: "starting too long without a running crawler waits for capacity with the scheduler's reason",
			job: newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.Scale = 1 })), at: 61 * time.Second,
			pods: func() map[int]*corev1.Pod {
				p := pods(corev1.PodPending)
				p[0].Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Message: "0/1 nodes are available: 1 Insufficient cpu."}}
				return p
			}(),
			checks: []check{wantTransition(store.StateWaitingCapacity), func(t *testing.T, p plan) {
				if !strings.Contains(p.WaitingReason, "Insufficient cpu") {
					t.Errorf("reason %q", p.WaitingReason)
				}
			}}},
		{name: "a running crawler brings up redis",
			job: newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.Scale = 1 })), at: 5 * time.Second,
			pods: pods(corev1.PodRunning),
			checks: []check{wantTransition(""), wantPods(0), func(t *testing.T, p plan) {
				if !p.Activity.InitRedis || !p.Children.RedisPod || !p.Poll {
					t.Errorf("initRedis %v plan %+v poll %v", p.Activity.InitRedis, p.Children, p.Poll)
				}
			}}},
		{name: "crawler running and redis reachable: running, stats copied",
			job: newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.Scale, s.InitRedis = 1, true })), at: 5 * time.Second,
			pods: pods(corev1.PodRunning),
			redis: func() *redisState {
				r := reachable("running")
				r.PagesFound, r.PagesDone, r.Size = 10, 3, 12345678
				return r
			}(),
			checks: []check{wantTransition(store.StateRunning), func(t *testing.T, p plan) {
				if pr := p.Progress; pr == nil || pr.PagesFound != 10 || pr.PagesDone != 3 || pr.Size != 12345678 || p.RunningSince == nil {
					t.Errorf("progress %+v running since %v", pr, p.RunningSince)
				}
			}}},
		{name: "from waiting_capacity back to running",
			job: newJob(1, runningStatus(store.StateWaitingCapacity, 1)), at: time.Minute,
			pods: pods(corev1.PodRunning), redis: reachable("running"),
			checks: []check{wantTransition(store.StateRunning), func(t *testing.T, p plan) {
				if !slices.Contains(p.Transitions[0].From, store.StateWaitingCapacity) {
					t.Errorf("from %v", p.Transitions[0].From)
				}
			}}},
		{name: "all done and exited: complete with stats",
			job: newJob(2, runningStatus(store.StateUploadingWACZ, 2)), at: time.Minute,
			pods: pods(corev1.PodSucceeded, corev1.PodSucceeded),
			redis: func() *redisState {
				r := reachable("done", "done")
				r.PagesFound, r.PagesDone, r.FilesAdded = 5, 5, 2
				return r
			}(),
			checks: []check{wantTransition(store.StateComplete), func(t *testing.T, p plan) {
				if !p.Transitions[0].Finished || *p.Transitions[0].Stats != (store.CrawlStats{Found: 5, Done: 5}) {
					t.Errorf("transition %+v", p.Transitions[0])
				}
			}}},
		{name: "ran and ended between two passes: running, then complete",
			job:  newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.State, s.Scale, s.InitRedis = store.StateStarting, 1, true })),
			at:   time.Minute,
			pods: pods(corev1.PodSucceeded),
			redis: func() *redisState {
				r := reachable("done")
				r.PagesFound, r.PagesDone, r.FilesAdded = 3, 3, 1
				return r
			}(),
			checks: []check{wantTransitions(store.StateRunning, store.StateComplete)}},
		{name: "done with pages left: partial_complete",
			job: newJob(1, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodSucceeded),
			redis: func() *redisState {
				r := reachable("done")
				r.PagesFound, r.PagesDone, r.FilesAdded = 9, 4, 1
				return r
			}(),
			checks: []check{wantTransition(store.StatePartialComplete)}},
		{name: "done but a WACZ is not recorded yet: wait",
			job: newJob(1, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodSucceeded),
			redis: func() *redisState {
				r := reachable("done")
				r.PagesFound, r.PagesDone, r.PendingFiles = 1, 1, 1
				return r
			}(),
			checks: []check{wantTransition("")}},
		{name: "done but the pod has not exited: wait",
			job: newJob(1, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodRunning), redis: reachable("done"),
			checks: []check{wantTransition("")}},
		{name: "one page and no file: failed",
			job: newJob(1, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodSucceeded),
			redis: func() *redisState {
				r := reachable("done")
				r.PagesFound, r.PagesDone = 1, 1
				return r
			}(),
			checks: []check{wantTransition(store.StateFailed)}},
		{name: "all failed while stopping with nothing done: canceled",
			job:  newJob(1, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) { cj.Spec.Stopping = true }),
			at:   time.Minute,
			pods: pods(corev1.PodRunning), redis: reachable("failed"),
			checks: []check{wantTransition(store.StateCanceled)}},
		{name: "stopped at once: a crawler's fatal exit waits for the statuses (issue 26)",
			job:   newJob(2, runningStatus(store.StateRunning, 2), func(cj *trawlerv1.CrawlJob) { cj.Spec.Stopping = true }),
			at:    time.Minute,
			pods:  map[int]*corev1.Pod{0: crashingPod(0, 0, 17), 1: crawlerPodIn(1, corev1.PodRunning)},
			redis: reachable("running", "running"),
			checks: []check{wantTransition(""), wantPods(0, 1), func(t *testing.T, p plan) {
				if p.FailReason != "" || !p.Control.Stopping {
					t.Errorf("failReason %q, stopping %v", p.FailReason, p.Control.Stopping)
				}
			}}},
		{name: "stopped at once: every crawler failed and exited with the fatal code, nothing done: canceled",
			job:   newJob(2, runningStatus(store.StateRunning, 2), func(cj *trawlerv1.CrawlJob) { cj.Spec.Stopping = true }),
			at:    time.Minute,
			pods:  map[int]*corev1.Pod{0: crashingPod(0, 1, 17), 1: crashingPod(1, 0, 17)},
			redis: reachable("failed", "failed"),
			checks: []check{wantTransition(store.StateCanceled), func(t *testing.T, p plan) {
				if p.FailReason != "" {
					t.Errorf("failReason %q", p.FailReason)
				}
			}}},
		{name: "stopped after pages: one done with its file, one failed: partial_complete",
			job:  newJob(2, runningStatus(store.StateRunning, 2), func(cj *trawlerv1.CrawlJob) { cj.Spec.Stopping = true }),
			at:   time.Minute,
			pods: map[int]*corev1.Pod{0: crawlerPodIn(0, corev1.PodSucceeded), 1: crashingPod(1, 0, 17)},
			redis: func() *redisState {
				r := reachable("done", "failed")
				r.PagesFound, r.PagesDone, r.FilesAdded = 40, 2, 1
				return r
			}(),
			checks: []check{wantTransition(store.StatePartialComplete)}},
		{name: "no stop: a fatal exit fails the crawl with the reason",
			job: newJob(1, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: map[int]*corev1.Pod{0: crashingPod(0, 0, 17)}, redis: reachable("running"),
			checks: []check{wantTransition(store.StateFailed), func(t *testing.T, p plan) {
				if !strings.Contains(p.FailReason, "fatal code 17") {
					t.Errorf("failReason %q", p.FailReason)
				}
			}}},
		{name: "a crawl that got pages done between its crashes fails at the cap on restarts in all (issue 27)",
			job: newJob(1, runningStatus(store.StateRunning, 1), withStatus(func(s *trawlerv1.CrawlJobStatus) {
				s.PagesDone, s.CrawlerRestarts, s.RestartsAtProgress = 30, 19, 19
				s.Pods = map[string]trawlerv1.PodStatus{"0": {Restarts: 19}}
			})),
			at: time.Minute, pods: map[int]*corev1.Pod{0: crashingPod(0, 20, 1)},
			redis: func() *redisState { r := reachable("running"); r.PagesFound, r.PagesDone = 500, 31; return r }(),
			checks: []check{wantTransition(store.StateFailed), wantPods(0), func(t *testing.T, p plan) {
				if p.CrawlerRestarts != 20 || !strings.Contains(p.FailReason, "restarted 20 times in all") {
					t.Errorf("restarts %d failReason %q", p.CrawlerRestarts, p.FailReason)
				}
			}}},
		{name: "all failed: failed",
			job: newJob(2, runningStatus(store.StateRunning, 2)), at: time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodRunning), redis: reachable("failed", "failed"),
			checks: []check{wantTransition(store.StateFailed)}},
		{name: "one done one failed counts as finished and successful (#1889)",
			job: newJob(2, runningStatus(store.StateRunning, 2)), at: time.Minute,
			pods: pods(corev1.PodSucceeded, corev1.PodRunning),
			redis: func() *redisState {
				r := reachable("done", "failed")
				r.PagesFound, r.PagesDone, r.FilesAdded = 3, 3, 1
				return r
			}(),
			checks: []check{wantTransition(store.StateComplete)}},
		{name: "scale beyond the instances that exist still finishes (#1888)",
			job: newJob(3, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodSucceeded),
			redis: func() *redisState {
				r := reachable("done")
				r.PagesFound, r.PagesDone, r.FilesAdded = 1, 1, 1
				return r
			}(),
			checks: []check{wantTransition(store.StateComplete), wantScale(1)}},
		{name: "post phases: generate-wacz wins over uploading and pending-wait",
			job: newJob(3, runningStatus(store.StateRunning, 3)), at: time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodRunning, corev1.PodRunning), redis: reachable("uploading-wacz", "generate-wacz", "pending-wait"),
			checks: []check{wantTransition(store.StateGenerateWACZ)}},
		{name: "post phase back to running when an instance runs (#1179)",
			job: newJob(2, runningStatus(store.StateUploadingWACZ, 2)), at: time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodRunning), redis: reachable("running", "uploading-wacz"),
			checks: []check{wantTransition(store.StateRunning)}},
		{name: "steady running crawl: no transition, no requeue",
			job: newJob(1, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodRunning), redis: reachable("running"),
			checks: []check{wantTransition(""), func(t *testing.T, p plan) {
				if p.RequeueAfter != 0 || p.Control.Stopping {
					t.Errorf("requeue %v stopping %v", p.RequeueAfter, p.Control.Stopping)
				}
			}}},
		{name: "user stop is asserted in redis",
			job:  newJob(1, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) { cj.Spec.Stopping = true }),
			at:   time.Minute,
			pods: pods(corev1.PodRunning), redis: reachable("running"),
			checks: []check{func(t *testing.T, p plan) {
				if !p.Control.Stopping || !p.Stopping {
					t.Error("not stopping")
				}
			}}},
		{name: "time limit reached stops",
			job:  newJob(1, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) { cj.Spec.CrawlTimeout = 60 }),
			at:   time.Minute,
			pods: pods(corev1.PodRunning), redis: reachable("running"),
			checks: []check{func(t *testing.T, p plan) {
				if !p.Control.Stopping {
					t.Error("not stopping")
				}
			}}},
		{name: "time limit ahead asks to look again then",
			job:  newJob(1, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) { cj.Spec.CrawlTimeout = 90 }),
			at:   time.Minute,
			pods: pods(corev1.PodRunning), redis: reachable("running"),
			checks: []check{func(t *testing.T, p plan) {
				if p.Control.Stopping || p.RequeueAfter != 30*time.Second {
					t.Errorf("stopping %v requeue %v", p.Control.Stopping, p.RequeueAfter)
				}
			}}},
		{name: "size limit exceeded stops, and stays stopped when the size drops",
			job:  newJob(1, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) { cj.Spec.MaxCrawlSize = 1000; cj.Status.Stopping = true }),
			at:   time.Minute,
			pods: pods(corev1.PodRunning), redis: func() *redisState { r := reachable("running"); r.Size = 10; return r }(),
			checks: []check{func(t *testing.T, p plan) {
				if !p.Control.Stopping {
					t.Error("not stopping")
				}
			}}},
		{name: "scale down asks the instances above to stop and keeps them",
			job: newJob(1, runningStatus(store.StateRunning, 3)), at: time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodRunning, corev1.PodRunning), redis: reachable("running", "running", "running"),
			checks: []check{wantScale(3), wantPods(0, 1, 2), func(t *testing.T, p plan) {
				want := map[string]bool{name(1): true, name(2): true}
				if len(p.Control.StopOne) != 2 || !p.Control.StopOne[name(1)] || !p.Control.StopOne[name(2)] {
					t.Errorf("stopone %v, want %v", p.Control.StopOne, want)
				}
			}}},
		{name: "scale down drops only the contiguous top of Succeeded instances",
			job: newJob(1, runningStatus(store.StateRunning, 3)), at: time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodRunning, corev1.PodSucceeded), redis: reachable("running", "uploading-wacz", "done"),
			checks: []check{wantScale(2), wantPods(0, 1)}},
		{name: "scale down completes when all above are Succeeded",
			job: newJob(1, runningStatus(store.StateRunning, 3)), at: time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodSucceeded, corev1.PodSucceeded), redis: reachable("running", "done", "done"),
			checks: []check{wantScale(1), wantPods(0), func(t *testing.T, p plan) {
				if len(p.Control.Cleanup) != 0 {
					t.Errorf("cleanup %v before the pods are gone", p.Control.Cleanup)
				}
			}}},
		{name: "an interrupted instance is not dropped",
			job: newJob(1, runningStatus(store.StateRunning, 2)), at: time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodRunning), redis: reachable("running", "interrupted"),
			checks: []check{wantScale(2)}},
		{name: "an instance that never ran is dropped at once",
			job: newJob(1, runningStatus(store.StateRunning, 2)), at: time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodPending), redis: reachable("running"),
			checks: []check{wantScale(1)}},
		{name: "scaled-down instances' fields are cleaned once their pods are gone",
			job: newJob(1, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodRunning),
			redis: func() *redisState {
				r := reachable("running", "done", "done")
				r.StopOne[name(1)], r.StopOne[name(2)] = true, true
				return r
			}(),
			checks: []check{func(t *testing.T, p plan) {
				if !slices.Equal(p.Control.Cleanup, []string{name(1), name(2)}) {
					t.Errorf("cleanup %v", p.Control.Cleanup)
				}
			}}},
		{name: "scale down waits while redis is unreachable",
			job: newJob(1, runningStatus(store.StateRunning, 2)), at: time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodSucceeded), redis: &redisState{Since: t0.Add(55 * time.Second)},
			checks: []check{wantScale(2)}},
		{name: "scale up is immediate",
			job: newJob(3, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodRunning), redis: func() *redisState { r := reachable("running"); r.PagesFound = 50; return r }(),
			checks: []check{wantScale(3), wantPods(0, 1, 2)}},
		{name: "scale up is capped at pages found",
			job: newJob(3, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodRunning), redis: func() *redisState { r := reachable("running"); r.PagesFound = 2; return r }(),
			checks: []check{wantScale(2), wantPods(0, 1)}},
		{name: "scale up waits for a stale instance's fields to be cleaned",
			job: newJob(2, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodRunning), redis: func() *redisState { r := reachable("running", "done"); r.PagesFound = 9; return r }(),
			checks: []check{wantScale(1), wantPods(0), func(t *testing.T, p plan) {
				if !slices.Equal(p.Control.Cleanup, []string{name(1)}) {
					t.Errorf("cleanup %v", p.Control.Cleanup)
				}
			}}},
		{name: "scaling back up clears a pending stopone",
			job: newJob(2, runningStatus(store.StateRunning, 2)), at: time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodRunning),
			redis: func() *redisState {
				r := reachable("running", "running")
				r.StopOne[name(1)] = true
				return r
			}(),
			checks: []check{func(t *testing.T, p plan) {
				if v, ok := p.Control.StopOne[name(1)]; !ok || v {
					t.Errorf("stopone %v", p.Control.StopOne)
				}
			}}},
		{name: "restart request: crawler pods go, PVCs stay",
			job:  newJob(1, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) { cj.Spec.RestartTime = "2026-11-30T12:00:30Z" }),
			at:   time.Minute,
			pods: pods(corev1.PodRunning), redis: reachable("running"),
			checks: []check{wantPods(), func(t *testing.T, p plan) {
				if p.RestartRecorded || !slices.Equal(p.Children.CrawlerPVCs, []int{0}) {
					t.Errorf("restart recorded %v pvcs %v", p.RestartRecorded, p.Children.CrawlerPVCs)
				}
			}}},
		{name: "restart request: once the pods are gone they are recreated",
			job: newJob(1, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) { cj.Spec.RestartTime = "2026-11-30T12:00:30Z" }),
			at:  time.Minute, redis: reachable("running"),
			checks: []check{wantPods(0), func(t *testing.T, p plan) {
				if !p.RestartRecorded {
					t.Error("restart not recorded")
				}
			}}},
		{name: "restart of a crawl waiting for capacity: its new pods are created with restartTime recorded",
			job: newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.State, s.Scale = store.StateWaitingCapacity, 1 }),
				func(cj *trawlerv1.CrawlJob) { cj.Spec.RestartTime = "2026-11-30T12:01:30Z" }),
			at: 2 * time.Minute,
			checks: []check{wantPods(0), func(t *testing.T, p plan) {
				if !p.RestartRecorded {
					t.Error("restart not recorded")
				}
			}}},
		{name: "no crawler active: running crawl waits for capacity and notes when activity stopped",
			job: newJob(1, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodPending), redis: reachable("running"),
			checks: []check{wantTransition(store.StateWaitingCapacity), func(t *testing.T, p plan) {
				if p.Activity.LastActiveTime == nil || !p.Activity.LastActiveTime.Time.Equal(t0.Add(time.Minute)) ||
					!p.Activity.InitRedis || p.RequeueAfter != 60*time.Second {
					t.Errorf("lastActive %v initRedis %v requeue %v", p.Activity.LastActiveTime, p.Activity.InitRedis, p.RequeueAfter)
				}
			}}},
		{name: "redis paused after 60 s without an active crawler",
			job: newJob(1, runningStatus(store.StateWaitingCapacity, 1), withStatus(func(s *trawlerv1.CrawlJobStatus) {
				s.LastActiveTime = mtime(t0)
				s.Conditions = []metav1.Condition{{Type: CondCrawlerActive, Status: metav1.ConditionFalse}}
			})),
			at: 61 * time.Second, pods: pods(corev1.PodPending),
			checks: []check{func(t *testing.T, p plan) {
				if p.Activity.InitRedis || p.Children.RedisPod || p.Poll || !p.Children.RedisPVC {
					t.Errorf("initRedis %v plan %+v", p.Activity.InitRedis, p.Children)
				}
			}}},
		{name: "redis unreachable beyond the grace: waiting_capacity",
			job: newJob(1, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodRunning), redis: &redisState{Since: t0.Add(45 * time.Second)},
			checks: []check{wantTransition(store.StateWaitingCapacity)}},
		{name: "redis unreachable within the grace: look again when it ends",
			job: newJob(1, runningStatus(store.StateRunning, 1)), at: time.Minute,
			pods: pods(corev1.PodRunning), redis: &redisState{Since: t0.Add(55 * time.Second)},
			checks: []check{wantTransition(""), func(t *testing.T, p plan) {
				if p.RequeueAfter != 5*time.Second {
					t.Errorf("requeue %v", p.RequeueAfter)
				}
			}}},
		{name: "org limit reached: waiting_org_limit and no children",
			job: newJob(1), at: time.Second, orgFul: true,
			checks: []check{wantTransition(store.StateWaitingOrgLimit), func(t *testing.T, p plan) {
				if p.Children.RedisPVC || len(p.Children.CrawlerPVCs) > 0 {
					t.Errorf("plan %+v", p.Children)
				}
			}}},
		{name: "org slot free again: starting",
			job: newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.State = store.StateWaitingOrgLimit })), at: time.Second,
			checks: []check{wantTransition(store.StateStarting), wantPods(0)}},
		{name: "let in after waiting over a minute, no crawler yet: starting, then waiting_capacity, in that order",
			job: newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.State = store.StateWaitingOrgLimit })), at: 75 * time.Second,
			checks: []check{wantTransitions(store.StateStarting, store.StateWaitingCapacity), wantPods(0), func(t *testing.T, p plan) {
				if len(p.Transitions) == 2 && !slices.Equal(p.Transitions[1].From, waitingCapacityFrom) {
					t.Errorf("second transition from %v", p.Transitions[1].From)
				}
			}}},
		{name: "let in after waiting over a minute with its crawler up: starting, then running",
			job: newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.State, s.Scale, s.InitRedis = store.StateWaitingOrgLimit, 1, true })),
			at:  75 * time.Second, pods: pods(corev1.PodRunning), redis: reachable("running"),
			checks: []check{wantTransitions(store.StateStarting, store.StateRunning), wantPods(0)}},
		{name: "a crawl that has run keeps its slot and children when its org is full",
			job: newJob(1, runningStatus(store.StateStarting, 1)), at: 75 * time.Second, orgFul: true,
			pods: pods(corev1.PodRunning), redis: reachable("running"),
			checks: []check{wantTransitions(store.StateRunning), wantPods(0)}},
		{name: "missing config map: no children yet",
			job: newJob(1), at: 10 * time.Second, noCM: true,
			checks: []check{wantTransition(""), func(t *testing.T, p plan) {
				if len(p.Problems) != 1 || !strings.Contains(p.Problems[0], "ConfigMap") {
					t.Errorf("problems %q", p.Problems)
				}
				if p.Children.RedisPVC || p.RequeueAfter != 50*time.Second {
					t.Errorf("plan %+v requeue %v", p.Children, p.RequeueAfter)
				}
			}}},
		{name: "missing config map for a minute: failed",
			job: newJob(1), at: 61 * time.Second, noCM: true,
			checks: []check{wantTransition(store.StateFailed)}},
		{name: "scale out of range is clamped and reported",
			job: newJob(7), at: time.Second,
			checks: []check{wantScale(3), func(t *testing.T, p plan) {
				if len(p.Problems) != 1 || !strings.Contains(p.Problems[0], "outside 1..3") {
					t.Errorf("problems %v", p.Problems)
				}
			}}},
		{name: "finished with crawler pods left: keep redis and every PVC",
			job: newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) {
				s.State, s.Finished, s.Scale = store.StateComplete, mtime(t0), 1
			})),
			at: time.Minute, pods: pods(corev1.PodSucceeded),
			checks: []check{func(t *testing.T, p plan) {
				if !p.Teardown || len(p.Children.CrawlerPods) != 0 || !p.Children.RedisPVC {
					t.Errorf("plan %+v", p.Children)
				}
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observed{
				Now: t0.Add(tt.at), Crawlers: tt.pods, ConfigMapOK: !tt.noCM,
				OrgSlotFree: !tt.orgFul, Redis: tt.redis, PVCs: map[string]*corev1.PersistentVolumeClaim{},
			}
			if o.Crawlers == nil {
				o.Crawlers = map[int]*corev1.Pod{}
			}
			if tt.job.Status.InitRedis {
				o.RedisPod = redisPodIn(corev1.PodRunning)
			}
			before := tt.job.DeepCopy()
			p := decide(tt.job, o, testConfig())
			for _, c := range tt.checks {
				c(t, p)
			}
			if !apiequality.Semantic.DeepEqual(before, tt.job) {
				t.Error("decide changed the job")
			}
		})
	}
}
