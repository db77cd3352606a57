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

// pausedAtSpec asks the test job to pause as of t.
func pausedAtSpec(t time.Time) func(*trawlerv1.CrawlJob) {
	return func(cj *trawlerv1.CrawlJob) { cj.Spec.PausedAt = t.UTC().Format(time.RFC3339) }
}

// withStopReason sets the job's status.stopReason.
func withStopReason(r string) func(*trawlerv1.CrawlJob) {
	return withStatus(func(s *trawlerv1.CrawlJobStatus) { s.StopReason = r })
}

// pausedStatus is a crawl paused since t0+at, its crawlers gone.
func pausedStatus(at time.Duration) func(*trawlerv1.CrawlJob) {
	return withStatus(func(s *trawlerv1.CrawlJobStatus) {
		s.State, s.Scale, s.InitRedis, s.StopReason = store.StatePaused, 2, true, reasonPaused
		s.RunningSince, s.LastActiveTime = mtime(t0), mtime(t0.Add(at))
		s.Conditions = []metav1.Condition{{Type: CondCrawlerActive, Status: metav1.ConditionFalse}}
	})
}

func TestDecidePause(t *testing.T) {
	pausedAt := t0.Add(time.Minute)
	tests := []struct {
		name  string
		job   *trawlerv1.CrawlJob
		at    time.Duration
		pods  map[int]*corev1.Pod
		redis *redisState
		check func(*testing.T, plan)
	}{
		{name: "a pause asked of a running crawl sets :paused and keeps the pods",
			job: newJob(2, runningStatus(store.StateRunning, 2), pausedAtSpec(pausedAt)), at: 61 * time.Second,
			pods: pods(corev1.PodRunning, corev1.PodRunning), redis: reachable("running", "running"),
			check: func(t *testing.T, p plan) {
				wantTransition("")(t, p)
				wantPods(0, 1)(t, p)
				if !p.Control.Paused || p.Control.Stopping || p.StopReason != reasonPaused || p.Stopping {
					t.Errorf("control %+v reason %q stopping %v", p.Control, p.StopReason, p.Stopping)
				}
			}},
		{name: "one crawler still uploading: not paused yet",
			job: newJob(2, runningStatus(store.StateRunning, 2), pausedAtSpec(pausedAt), withStopReason(reasonPaused)), at: 70 * time.Second,
			pods: pods(corev1.PodSucceeded, corev1.PodRunning), redis: reachable("interrupted", "uploading-wacz"),
			check: func(t *testing.T, p plan) { wantTransition(store.StateUploadingWACZ)(t, p) }},
		{name: "every crawler interrupted and exited, files recorded: paused, pods dropped, volumes kept",
			job: newJob(2, runningStatus(store.StateUploadingWACZ, 2), pausedAtSpec(pausedAt), withStopReason(reasonPaused)), at: 75 * time.Second,
			pods: pods(corev1.PodSucceeded, corev1.PodSucceeded), redis: reachable("interrupted", "interrupted"),
			check: func(t *testing.T, p plan) {
				wantTransition(store.StatePaused)(t, p)
				wantPods()(t, p)
				if len(p.Children.CrawlerPVCs) != 2 || !p.Children.RedisPVC {
					t.Errorf("children %+v", p.Children)
				}
				if p.Control.Paused || !p.Control.Unpause {
					t.Errorf("control %+v: :paused must go once paused", p.Control)
				}
			}},
		{name: "every crawler interrupted, pods not exited yet, files recorded: paused, pods dropped",
			job: newJob(2, runningStatus(store.StateRunning, 2), pausedAtSpec(pausedAt), withStopReason(reasonPaused)), at: 75 * time.Second,
			pods: pods(corev1.PodRunning, corev1.PodSucceeded), redis: reachable("interrupted", "interrupted"),
			check: func(t *testing.T, p plan) {
				wantTransition(store.StatePaused)(t, p)
				wantPods()(t, p)
				if len(p.Control.Forget) != 0 {
					t.Errorf("forget %v while the pods are there", p.Control.Forget)
				}
				if a := p.Activity; a.Active || !a.InitRedis || a.LastActiveTime == nil || !a.LastActiveTime.Time.Equal(t0.Add(75*time.Second)) {
					t.Errorf("activity %+v: the crawlers are done from the paused pass on, redis kept", a)
				}
			}},
		{name: "paused again while the store has not recorded it, pods gone: statuses kept, no pod back",
			job: newJob(2, runningStatus(store.StateRunning, 2), pausedAtSpec(pausedAt), withStopReason(reasonPaused)), at: 76 * time.Second,
			redis: reachable("interrupted", "interrupted"),
			check: func(t *testing.T, p plan) {
				wantTransition(store.StatePaused)(t, p)
				wantPods()(t, p)
				if len(p.Control.Forget) != 0 {
					t.Errorf("forget %v before the store recorded the pause", p.Control.Forget)
				}
			}},
		{name: "stopped while pausing: an interrupted crawler that has not exited is waited for",
			job: newJob(2, runningStatus(store.StateRunning, 2), pausedAtSpec(pausedAt), withStopReason(reasonPaused),
				func(cj *trawlerv1.CrawlJob) { cj.Spec.Stopping = true }), at: 70 * time.Second,
			pods: pods(corev1.PodRunning, corev1.PodSucceeded), redis: reachable("interrupted", "done"),
			check: func(t *testing.T, p plan) { wantTransition("")(t, p) }},
		{name: "a pause upload not recorded yet holds the pause",
			job: newJob(2, runningStatus(store.StateUploadingWACZ, 2), pausedAtSpec(pausedAt), withStopReason(reasonPaused)), at: 75 * time.Second,
			pods: pods(corev1.PodSucceeded, corev1.PodSucceeded),
			redis: func() *redisState {
				r := reachable("interrupted", "interrupted")
				r.PendingFiles = 1
				return r
			}(),
			check: func(t *testing.T, p plan) { wantTransition("")(t, p) }},
		{name: "paused, its crawler pods still exiting: the time limit's start stays",
			job: newJob(2, pausedStatus(80*time.Second), pausedAtSpec(pausedAt)), at: 85 * time.Second,
			pods: pods(corev1.PodRunning, corev1.PodRunning), redis: reachable("interrupted", "interrupted"),
			check: func(t *testing.T, p plan) {
				wantTransition("")(t, p)
				if !p.RunningSince.Time.Equal(t0) {
					t.Errorf("running since %v, want %v: paused, not running again", p.RunningSince.Time, t0)
				}
			}},
		{name: "paused: no crawler pod, redis kept while idle",
			job: newJob(2, pausedStatus(80*time.Second), pausedAtSpec(pausedAt)), at: 90 * time.Second,
			redis: reachable("interrupted", "interrupted"),
			check: func(t *testing.T, p plan) {
				wantTransition("")(t, p)
				wantPods()(t, p)
				if !p.Children.RedisPod || !p.Control.Unpause {
					t.Errorf("children %+v control %+v", p.Children, p.Control)
				}
				if want := []string{name(0), name(1)}; !slices.Equal(p.Control.Forget, want) {
					t.Errorf("forget %v, want %v: the gone crawlers' interrupted statuses", p.Control.Forget, want)
				}
			}},
		{name: "paused past the limit: stopped_pause_expired",
			job: newJob(2, pausedStatus(80*time.Second), pausedAtSpec(pausedAt)), at: time.Minute + defaultPausedCrawlLimit,
			check: func(t *testing.T, p plan) {
				wantTransition(store.StateStoppedPauseExpired)(t, p)
				if !p.Transitions[0].Finished || p.StopReason != reasonPauseExpired {
					t.Errorf("transition %+v reason %q", p.Transitions[0], p.StopReason)
				}
			}},
		{name: "paused and stopped: partial_complete (upstream's stopped_by_user)",
			job: newJob(2, pausedStatus(80*time.Second), pausedAtSpec(pausedAt), func(cj *trawlerv1.CrawlJob) { cj.Spec.Stopping = true }),
			at:  2 * time.Minute,
			check: func(t *testing.T, p plan) {
				wantTransition(store.StatePartialComplete)(t, p)
				if p.StopReason != reasonStoppedByUser {
					t.Errorf("reason %q", p.StopReason)
				}
			}},
		{name: "resumed: the pods come back",
			job: newJob(2, pausedStatus(80*time.Second)), at: 2 * time.Minute,
			check: func(t *testing.T, p plan) {
				wantTransition("")(t, p)
				wantPods(0, 1)(t, p)
				if !p.Control.Unpause {
					t.Errorf("control %+v", p.Control)
				}
			}},
		{name: "resumed after the redis pod went: it comes back with the crawler pods",
			job: newJob(2, pausedStatus(80*time.Second), withStatus(func(s *trawlerv1.CrawlJobStatus) { s.InitRedis = false })),
			at:  10 * time.Minute,
			check: func(t *testing.T, p plan) {
				wantPods(0, 1)(t, p)
				if !p.Children.RedisPod {
					t.Errorf("children %+v: no redis pod", p.Children)
				}
			}},
		{name: "paused after the redis pod went: it stays gone",
			job: newJob(2, pausedStatus(80*time.Second), pausedAtSpec(pausedAt), withStatus(func(s *trawlerv1.CrawlJobStatus) { s.InitRedis = false })),
			at:  10 * time.Minute,
			check: func(t *testing.T, p plan) {
				wantPods()(t, p)
				if p.Children.RedisPod {
					t.Errorf("children %+v: a redis pod while paused", p.Children)
				}
			}},
		{name: "resumed, a status still interrupted: forgotten before its crawler starts",
			job: newJob(2, pausedStatus(80*time.Second)), at: 2 * time.Minute,
			redis: reachable("", "interrupted"),
			check: func(t *testing.T, p plan) {
				wantPods(0, 1)(t, p)
				if want := []string{name(1)}; !slices.Equal(p.Control.Forget, want) {
					t.Errorf("forget %v, want %v", p.Control.Forget, want)
				}
			}},
		{name: "resumed and running again: running, reason cleared, paused time not charged",
			job: newJob(2, pausedStatus(80*time.Second)), at: 10 * time.Minute,
			pods: pods(corev1.PodRunning, corev1.PodRunning), redis: reachable("running", "interrupted"),
			check: func(t *testing.T, p plan) {
				wantTransition(store.StateRunning)(t, p)
				if p.StopReason != "" || !p.Control.Unpause {
					t.Errorf("reason %q control %+v", p.StopReason, p.Control)
				}
				if want := t0.Add(10*time.Minute - 80*time.Second); !p.RunningSince.Time.Equal(want) {
					t.Errorf("running since %v, want %v", p.RunningSince.Time, want)
				}
			}},
		{name: "resumed while pausing: a crawler that already paused is replaced",
			job: newJob(2, runningStatus(store.StateRunning, 2), withStopReason(reasonPaused)), at: 70 * time.Second,
			pods: pods(corev1.PodSucceeded, corev1.PodRunning), redis: reachable("interrupted", "running"),
			check: func(t *testing.T, p plan) {
				wantPods(1)(t, p)
				if p.StopReason != "" || p.Control.Paused || !p.Control.Unpause {
					t.Errorf("reason %q control %+v", p.StopReason, p.Control)
				}
			}},
		{name: "stopped while pausing: a paused crawler's upload counts as done",
			job: newJob(2, runningStatus(store.StateRunning, 2), pausedAtSpec(pausedAt), withStopReason(reasonPaused),
				func(cj *trawlerv1.CrawlJob) { cj.Spec.Stopping = true }), at: 70 * time.Second,
			pods: pods(corev1.PodSucceeded, corev1.PodSucceeded),
			redis: func() *redisState {
				r := reachable("interrupted", "done")
				r.PagesFound, r.PagesDone, r.FilesAdded = 9, 4, 2
				return r
			}(),
			check: func(t *testing.T, p plan) {
				wantTransition(store.StatePartialComplete)(t, p)
				if p.StopReason != reasonStoppedByUser || p.Control.Paused || !p.Control.Stopping {
					t.Errorf("reason %q control %+v", p.StopReason, p.Control)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observed{Now: t0.Add(tt.at), Crawlers: tt.pods, ConfigMapOK: true, OrgSlotFree: true,
				Redis: tt.redis, PVCs: map[string]*corev1.PersistentVolumeClaim{}}
			if o.Crawlers == nil {
				o.Crawlers = map[int]*corev1.Pod{}
			}
			if tt.job.Status.InitRedis {
				o.RedisPod = redisPodIn(corev1.PodRunning)
			}
			tt.check(t, decide(tt.job, o, testConfig()))
		})
	}
}

// TestPauseReason: an automatic pause names its paused state only while
// the pause it recorded is the one asked for.
func TestPauseReason(t *testing.T) {
	const at, later = "2026-12-02T10:00:00Z", "2026-12-02T11:00:00Z"
	for _, tc := range []struct {
		name, annotation, pausedAt, want string
	}{
		{"by the user", "", at, reasonPaused},
		{"time quota", at + " paused_time_quota_reached", at, "paused_time_quota_reached"},
		{"storage quota", at + " paused_storage_quota_reached", at, "paused_storage_quota_reached"},
		{"a later pause by the user", at + " paused_time_quota_reached", later, reasonPaused},
		{"not a quota's reason", at + " stopped_by_user", at, reasonPaused},
		{"malformed", "paused_time_quota_reached", at, reasonPaused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := &trawlerv1.CrawlJob{Spec: trawlerv1.CrawlJobSpec{PausedAt: tc.pausedAt}}
			if tc.annotation != "" {
				cj.Annotations = map[string]string{annotationAutoPause: tc.annotation}
			}
			if got := pauseReason(cj); got != tc.want {
				t.Errorf("pauseReason = %q, want %q", got, tc.want)
			}
		})
	}
}
