package operator

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// crashingPod is crawler pod i, Running, whose container restarted
// restarts times, the last run having exited with code (0: no exit yet),
// now backing off.
func crashingPod(i int, restarts, code int32) *corev1.Pod {
	p := crawlerPodIn(i, corev1.PodRunning)
	cs := corev1.ContainerStatus{Name: p.Spec.Containers[0].Name, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	if code != 0 {
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return p
}

// A crawl whose crawler exits with the crawler's fatal code (an exclusion
// of "(", say) or crash-loops without progress showed running forever,
// holding its org slot, pods and volumes. decide fails it, with the
// reason in the status, and keeps the pods for their logs.
func TestCrashLoop(t *testing.T) {
	// A crawl running since t0 that had done 3 pages; restartsAtProgress
	// is baseline.
	job := func(baseline int32) *trawlerv1.CrawlJob {
		return newJob(1, runningStatus(store.StateRunning, 1), withStatus(func(s *trawlerv1.CrawlJobStatus) {
			s.PagesDone, s.PagesFound, s.RestartsAtProgress = 3, 10, baseline
		}))
	}
	redis := func(status string, done int64) *redisState {
		r := reachable(status)
		r.PagesDone, r.PagesFound = done, 10
		return r
	}
	tests := []struct {
		name       string
		job        *trawlerv1.CrawlJob
		pod        *corev1.Pod
		redis      *redisState
		limit      int    // CrashLoopRestarts
		inAll      int    // MaxCrawlerRestarts
		wantReason string // "" = not failed by the operator
		wantState  string // the transition planned, "" = none
		baseline   int32
	}{
		{name: "fatal exit fails the crawl at once", job: job(0), pod: crashingPod(0, 1, 17), redis: redis("running", 3),
			limit: 5, wantReason: "exited with the crawler's fatal code 17", wantState: store.StateFailed, baseline: 0},
		{name: "fatal exit fails it even before Redis answers", job: job(0), pod: crashingPod(0, 0, 17),
			limit: 5, wantReason: "fatal code 17", wantState: store.StateFailed},
		{name: "fatal exit after writing failed is a stop with nothing done: the outcome rules decide",
			job: newJob(1, runningStatus(store.StateRunning, 1), withStatus(func(s *trawlerv1.CrawlJobStatus) { s.Stopping = true })),
			pod: crashingPod(0, 0, 17), redis: redis("failed", 0), limit: 5, wantState: store.StateCanceled},
		{name: "a stopping crawl's fatal exit is no crash, even before Redis shows its failed status (issue 26)",
			job: newJob(1, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) { cj.Spec.Stopping = true }),
			pod: crashingPod(0, 0, 17), redis: redis("running", 0), limit: 5, wantState: ""},
		{name: "a stopping crawl's restarts without progress are no crash loop",
			job: newJob(1, runningStatus(store.StateRunning, 1), withStatus(func(s *trawlerv1.CrawlJobStatus) { s.Stopping = true })),
			pod: crashingPod(0, 7, 17), redis: redis("running", 0), limit: 5, wantState: ""},
		{name: "four restarts without progress are tolerated", job: job(0), pod: crashingPod(0, 4, 1), redis: redis("running", 3),
			limit: 5, wantState: "", baseline: 0},
		{name: "the fifth restart without progress fails it", job: job(2), pod: crashingPod(0, 7, 1), redis: redis("running", 3),
			limit: 5, wantReason: "restarted 5 times without a page done", wantState: store.StateFailed, baseline: 2},
		{name: "a page done moves the baseline", job: job(2), pod: crashingPod(0, 7, 1), redis: redis("running", 4),
			limit: 5, wantState: "", baseline: 7},
		{name: "recreated pods count from zero again", job: job(6), pod: crashingPod(0, 1, 1), redis: redis("running", 3),
			limit: 5, wantState: "", baseline: 1},
		{name: "restarts are counted while Redis is away", job: job(0), pod: crashingPod(0, 5, 137),
			limit: 5, wantReason: "restarted 5 times", wantState: store.StateFailed},
		{name: "limits of 0 never fail on restarts", job: job(0), pod: crashingPod(0, 50, 1), redis: redis("running", 3),
			limit: 0, wantState: ""},
		{name: "restarts with a page done between each still end at the cap in all (issue 27)",
			job: job(18), pod: crashingPod(0, 20, 1), redis: redis("running", 4), limit: 5, inAll: 20,
			wantReason: "restarted 20 times in all", wantState: store.StateFailed, baseline: 20},
		{name: "the cap in all holds for a stopping crawl too",
			job: newJob(1, runningStatus(store.StateRunning, 1), withStatus(func(s *trawlerv1.CrawlJobStatus) { s.Stopping = true })),
			pod: crashingPod(0, 20, 1), redis: redis("running", 0), limit: 5, inAll: 20,
			wantReason: "restarted 20 times in all", wantState: store.StateFailed, baseline: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.CrashLoopRestarts, cfg.MaxCrawlerRestarts = tt.limit, tt.inAll
			o := observed{Now: t0.Add(time.Minute), Crawlers: map[int]*corev1.Pod{0: tt.pod},
				RedisPod: redisPodIn(corev1.PodRunning), Redis: tt.redis, ConfigMapOK: true, OrgSlotFree: true,
				PVCs: map[string]*corev1.PersistentVolumeClaim{}}
			p := decide(tt.job, o, cfg)
			if tt.wantState == "" {
				// A running crawl stays running.
				wantTransition("")(t, p)
			} else {
				wantTransition(tt.wantState)(t, p)
			}
			if got := p.FailReason; (tt.wantReason == "") != (got == "") || !strings.Contains(got, tt.wantReason) {
				t.Errorf("failReason %q, want one with %q", got, tt.wantReason)
			}
			if p.RestartsAtProgress != tt.baseline {
				t.Errorf("restartsAtProgress %d, want %d", p.RestartsAtProgress, tt.baseline)
			}
			wantPods(0)(t, p)
		})
	}
}

// The restarts in all count every restart once, across pods recreated
// (a restart asked for, a scale change, an evicted pod) and pods gone.
func TestCrawlerRestartsInAll(t *testing.T) {
	// Pods 0 and 1 as the status last written saw them: 4 and 2 restarts,
	// 9 in all (3 of pods gone before).
	written := func(s *trawlerv1.CrawlJobStatus) {
		s.CrawlerRestarts = 9
		s.Pods = map[string]trawlerv1.PodStatus{"0": {Restarts: 4}, "1": {Restarts: 2}}
	}
	for _, tt := range []struct {
		name string
		pods map[int]*corev1.Pod
		want int32
	}{
		{"nothing new", map[int]*corev1.Pod{0: crashingPod(0, 4, 1), 1: crashingPod(1, 2, 1)}, 9},
		{"new restarts of both", map[int]*corev1.Pod{0: crashingPod(0, 6, 1), 1: crashingPod(1, 3, 1)}, 12},
		{"pod 0 recreated: its count starts again, every restart of it is new", map[int]*corev1.Pod{0: crashingPod(0, 1, 1), 1: crashingPod(1, 2, 1)}, 10},
		{"pod 1 gone: its restarts stay counted", map[int]*corev1.Pod{0: crashingPod(0, 4, 1)}, 9},
		{"a pod not seen before: all its restarts", map[int]*corev1.Pod{0: crashingPod(0, 4, 1), 1: crashingPod(1, 2, 1), 2: crashingPod(2, 2, 1)}, 11},
		{"no container status yet", map[int]*corev1.Pod{0: crawlerPodIn(0, corev1.PodPending)}, 9},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := newJob(2, runningStatus(store.StateRunning, 2), withStatus(written))
			o := observed{Now: t0.Add(time.Minute), Crawlers: tt.pods, Redis: reachable("running", "running")}
			if got := crashLoop(job.Status, o, testConfig(), false).Total; got != tt.want {
				t.Errorf("restarts in all %d, want %d", got, tt.want)
			}
		})
	}

	// Written once with the pods' counts, the total is not counted again.
	job := newJob(1, runningStatus(store.StateRunning, 1))
	o := observed{Now: t0.Add(time.Minute), Crawlers: map[int]*corev1.Pod{0: crashingPod(0, 3, 1)},
		RedisPod: redisPodIn(corev1.PodRunning), Redis: reachable("running"), ConfigMapOK: true, OrgSlotFree: true,
		PVCs: map[string]*corev1.PersistentVolumeClaim{}}
	for pass := range 3 {
		job.Status = crawlStatus(job, decide(job, o, testConfig()), o)
		if job.Status.CrawlerRestarts != 3 {
			t.Fatalf("pass %d: restarts in all %d, want 3", pass, job.Status.CrawlerRestarts)
		}
	}
}

// The crawler pods of a crawl the operator failed stay until the reason
// and their logs are stored; the status keeps the reason only if the
// store took the failure.
func TestFailureReport(t *testing.T) {
	failed := func(conds ...metav1.Condition) *trawlerv1.CrawlJob {
		return newJob(1, runningStatus(store.StateFailed, 1), withStatus(func(s *trawlerv1.CrawlJobStatus) {
			s.Finished, s.FailReason = mtime(t0), "crawler exited with the crawler's fatal code 17"
			s.Conditions = append(s.Conditions, conds...)
		}))
	}
	reported := metav1.Condition{Type: CondFailureReported, Status: metav1.ConditionTrue}
	for _, tt := range []struct {
		name     string
		job      *trawlerv1.CrawlJob
		justDone bool
		want     []int
	}{
		{"unreported: the crawler pods stay", failed(), false, []int{0}},
		{"just reported: they go", failed(), true, nil},
		{"reported earlier: they go", failed(reported), false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := observed{Now: t0.Add(time.Minute), Crawlers: map[int]*corev1.Pod{0: crashingPod(0, 3, 17)},
				RedisPod: redisPodIn(corev1.PodRunning), ConfigMapOK: true, FailureReported: tt.justDone}
			p := decide(tt.job, o, testConfig())
			if !p.Teardown || !slices.Equal(p.Children.CrawlerPods, tt.want) {
				t.Errorf("teardown %v, crawler pods %v, want %v", p.Teardown, p.Children.CrawlerPods, tt.want)
			}
			st := crawlStatus(tt.job, p, o)
			// The pods go once the report is recorded in the status.
			if got := meta.IsStatusConditionTrue(st.Conditions, CondFailureReported); got != (tt.want == nil) {
				t.Errorf("FailureReported %v", got)
			}
		})
	}

	// The store refused the failure: the crawl ended otherwise.
	job := newJob(1, runningStatus(store.StateRunning, 1))
	o := observed{Now: t0.Add(time.Minute), Crawlers: map[int]*corev1.Pod{0: crashingPod(0, 1, 17)},
		RedisPod: redisPodIn(corev1.PodRunning), Redis: reachable("running"), ConfigMapOK: true}
	p := decide(job, o, testConfig())
	o.Answers = []transitionResult{{State: store.StateComplete, Finished: &t0}}
	st := crawlStatus(job, p, o)
	if st.State != store.StateComplete || st.FailReason != "" {
		t.Errorf("refused failure: state %s, failReason %q", st.State, st.FailReason)
	}
}

// slowLogs answers after delay, or fails when the context ends first.
type slowLogs struct{ delay time.Duration }

func (s slowLogs) PodLogs(ctx context.Context, _, pod, _ string, _ int64) (string, error) {
	select {
	case <-time.After(s.delay):
		return "last line of " + pod + "\n", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// A log read slower than the store's timeout still makes it into the
// failure report: the logs have a limit of their own.
func TestFailureReportWaitsForSlowLogs(t *testing.T) {
	cj := newJob(1)
	f := newFixture(t, cj)
	f.c.cfg.StoreTimeout = 50 * time.Millisecond
	f.c.logs = slowLogs{delay: 300 * time.Millisecond}
	key := "crawlers/" + cj.Name
	f.c.reportFailure(t.Context(), key, cj, "crawler exited with the crawler's fatal code 17",
		map[int]*corev1.Pod{0: crashingPod(0, 3, 17)})
	if !eventually(5*time.Second, func() bool { return f.c.background.done(failureKey(key)) }) {
		t.Fatal("the failure report was never stored")
	}
	f.store.mu.Lock()
	lines := f.store.opLines[cj.Spec.ID]
	f.store.mu.Unlock()
	if len(lines) != 2 || !strings.Contains(lines[1], `"logs":["last line of `) {
		t.Errorf("stored report %q, want the reason and the pod's log lines", lines)
	}
}

// countingLogs answers each pod's log with 30 numbered lines, cut to the
// tail asked for, and records every read.
type countingLogs struct {
	mu    sync.Mutex
	reads []string // "<pod> <tail>"
}

func (l *countingLogs) PodLogs(_ context.Context, _, pod, _ string, tail int64) (string, error) {
	l.mu.Lock()
	l.reads = append(l.reads, fmt.Sprintf("%s %d", pod, tail))
	l.mu.Unlock()
	var b strings.Builder
	for i := max(1, 31-tail); i <= 30; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String(), nil
}

// A crash loop the operator fails reads each crawler pod's log once, for
// both the failure report (its last 20 lines) and the operator log of the
// failed crawl (its last log_failed_crawl_lines).
func TestCrashLoopReadsLogsOnce(t *testing.T) {
	cj := newJob(2, withFinalizer, runningStatus(store.StateRunning, 2))
	f := newFixture(t, cj, configMap(), crashingPod(0, 1, 17), crashingPod(1, 1, 1), redisPodIn(corev1.PodRunning))
	f.withRedis(reachable("running", "running"))
	logs := &countingLogs{}
	out := &SyncBuffer{}
	f.c.logs, f.c.log = logs, slog.New(slog.NewTextHandler(out, nil))
	f.c.cfg.LogFailedCrawlLines = 5
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if st := f.status(); st.State != store.StateFailed || st.FailReason == "" {
		t.Fatalf("status %s %q, want failed by the operator", st.State, st.FailReason)
	}
	key := "crawlers/" + cj.Name
	if !eventually(5*time.Second, func() bool { return f.c.background.done(failureKey(key)) }) {
		t.Fatal("the failure report was never stored")
	}

	logs.mu.Lock()
	reads := slices.Clone(logs.reads)
	logs.mu.Unlock()
	if want := []string{name(0) + " 20", name(1) + " 20"}; !slices.Equal(reads, want) {
		t.Errorf("log reads %q, want %q", reads, want)
	}
	f.store.mu.Lock()
	report := f.store.opLines[cj.Spec.ID]
	f.store.mu.Unlock()
	if len(report) != 3 || !strings.Contains(report[1], `"logs":["line 11","line 12",`) || !strings.Contains(report[1], `"line 30"]`) {
		t.Errorf("stored report %q, want the reason and each pod's lines 11 to 30", report)
	}
	for _, p := range []string{name(0), name(1)} {
		want := fmt.Sprintf("msg=\"failed crawl pod logs\" crawl=%s pod=%s logs=\"line 26\\nline 27\\nline 28\\nline 29\\nline 30\\n\"", testID, p)
		if !strings.Contains(out.String(), want) {
			t.Errorf("operator log lacks %s; log:\n%s", want, out)
		}
	}
}

func TestLastLines(t *testing.T) {
	for _, tt := range []struct {
		log  string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
		{"a\nb\nc\n", 9, "a\nb\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\n\n", 1, "\n"},
		{"", 5, ""},
	} {
		if got := lastLines(tt.log, tt.n); got != tt.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tt.log, tt.n, got, tt.want)
		}
	}
}
