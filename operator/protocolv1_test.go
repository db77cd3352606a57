package operator

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// withChannels gives the config a 1.x default channel and a 0.11 one.
func withChannels(cfg Config) Config {
	cfg.CrawlerChannels = k8s.CrawlerChannels{
		{ID: k8s.DefaultChannel, Image: "webrecorder/browsertrix-crawler:1.14.1", Protocol: k8s.ProtocolV1},
		{ID: "legacy", Image: "webrecorder/browsertrix-crawler:0.11.2", ImagePullPolicy: "IfNotPresent", Protocol: k8s.ProtocolV011},
	}
	return cfg
}

// TestCrawlerPodByProtocol: each protocol's crawler gets its own command
// line, CRAWL_ARGS and config mount; the rest of the pod is the same.
func TestCrawlerPodByProtocol(t *testing.T) {
	url := "redis://redis-" + testID + ".redis.crawlers.svc.cluster.local/0"
	for _, tc := range []struct {
		name, channel, profile string
		image                  string
		policy                 corev1.PullPolicy
		command                []string
		crawlArgs              string
		mount                  corev1.VolumeMount
	}{
		{name: "1.x", channel: "", image: "webrecorder/browsertrix-crawler:1.14.1", policy: corev1.PullAlways,
			command:   []string{"crawl", "--config", "/tmp/config/crawl-config.json", "--workers", "2", "--redisStoreUrl", url},
			crawlArgs: "shared-crawler-config-v1",
			mount:     corev1.VolumeMount{Name: "crawl-config", MountPath: "/tmp/config/", ReadOnly: true}},
		{name: "1.x with a profile", channel: "default", profile: "p.tar.gz", image: "webrecorder/browsertrix-crawler:1.14.1", policy: corev1.PullAlways,
			command: []string{"crawl", "--config", "/tmp/config/crawl-config.json", "--workers", "2", "--redisStoreUrl", url,
				"--profile", "@profiles/p.tar.gz"},
			crawlArgs: "shared-crawler-config-v1",
			mount:     corev1.VolumeMount{Name: "crawl-config", MountPath: "/tmp/config/", ReadOnly: true}},
		{name: "0.11", channel: "legacy", image: "webrecorder/browsertrix-crawler:0.11.2", policy: corev1.PullIfNotPresent,
			command:   []string{"crawl", "--config", "/tmp/crawl-config.json", "--redisStoreUrl", url},
			crawlArgs: "shared-crawler-config",
			mount:     corev1.VolumeMount{Name: "crawl-config", MountPath: "/tmp/crawl-config.json", SubPath: "crawl-config.json", ReadOnly: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := newJob(1, func(j *trawlerv1.CrawlJob) {
				j.Spec.CrawlerChannel, j.Spec.ProfileFilename = tc.channel, tc.profile
			})
			c := crawlerPod(cj, withChannels(testConfig()), 0).Spec.Containers[0]
			if c.Image != tc.image || c.ImagePullPolicy != tc.policy {
				t.Errorf("image %s (%s), want %s (%s)", c.Image, c.ImagePullPolicy, tc.image, tc.policy)
			}
			if !slices.Equal(c.Command, tc.command) {
				t.Errorf("command %q, want %q", c.Command, tc.command)
			}
			if got := c.EnvFrom[0].ConfigMapRef.Name; got != tc.crawlArgs {
				t.Errorf("CRAWL_ARGS from %s, want %s", got, tc.crawlArgs)
			}
			if c.VolumeMounts[0] != tc.mount {
				t.Errorf("config mount %#v, want %#v", c.VolumeMounts[0], tc.mount)
			}
		})
	}
}

// terminated is a crawler pod whose container last exited with code.
func terminated(i int, code int32, reason string, restarts int32, at time.Time) *corev1.Pod {
	p := crawlerPodIn(i, corev1.PodRunning)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "crawler", RestartCount: restarts,
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, FinishedAt: metav1.NewTime(at)}}}}
	return p
}

// TestExitLines: every crawler exit but 0, 11 and 13 gets one line in the
// crawler's log shape, the same for the same exit, another for the next.
func TestExitLines(t *testing.T) {
	at := t0.Add(time.Minute)
	for _, tc := range []struct {
		name  string
		code  int32
		lines int
	}{
		{"done", 0, 0}, {"interrupted", 11, 0}, {"second signal", 13, 0},
		{"error", 1, 1}, {"failed", 9, 1}, {"fatal", 17, 1}, {"killed", 137, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := observed{Crawlers: map[int]*corev1.Pod{0: terminated(0, tc.code, "Error", 1, at), 1: crawlerPodIn(1, corev1.PodRunning)}}
			got := exitLines(o)
			if len(got) != tc.lines {
				t.Fatalf("%d lines, want %d: %v", len(got), tc.lines, got)
			}
			if tc.lines == 0 {
				return
			}
			var line crawlLogLine
			if err := json.Unmarshal([]byte(got[0].Line), &line); err != nil {
				t.Fatal(err)
			}
			want := crawlLogLine{Timestamp: "2026-11-30T12:01:00.000Z", LogLevel: "error", Context: "k8s",
				Message: "Crawler Instance Exited: Error",
				Details: map[string]any{"pod": name(0), "exitCode": float64(tc.code), "reason": "Error"}}
			if line.Timestamp != want.Timestamp || line.LogLevel != want.LogLevel || line.Context != want.Context ||
				line.Message != want.Message || len(line.Details) != 3 || line.Details["pod"] != want.Details["pod"] ||
				line.Details["exitCode"] != want.Details["exitCode"] || line.Details["reason"] != want.Details["reason"] {
				t.Errorf("line %+v, want %+v", line, want)
			}
		})
	}

	// The same exit seen again (the container restarted since) keeps its
	// key; a later exit gets another.
	first := exitLines(observed{Crawlers: map[int]*corev1.Pod{0: terminated(0, 1, "Error", 1, at)}})
	again := exitLines(observed{Crawlers: map[int]*corev1.Pod{0: terminated(0, 1, "Error", 2, at)}})
	later := exitLines(observed{Crawlers: map[int]*corev1.Pod{0: terminated(0, 1, "Error", 2, at.Add(time.Second))}})
	if first[0] != again[0] {
		t.Errorf("same exit, two lines: %v, %v", first[0], again[0])
	}
	if later[0].Key == first[0].Key {
		t.Errorf("a later exit has the first one's key %s", first[0].Key)
	}
}

// TestDecideByProtocol: a running 1.x crawl asserts its crawlers' exit
// lines and gets its channel's image in the status; a 0.11 crawl asserts
// none; a canceled 1.x crawl sets <id>:canceled while its crawlers are
// there, a 0.11 one does not poll.
func TestDecideByProtocol(t *testing.T) {
	cfg := withChannels(testConfig())
	crashed := func() observed {
		return observed{Now: t0.Add(time.Minute), ConfigMapOK: true, OrgSlotFree: true,
			Crawlers: map[int]*corev1.Pod{0: terminated(0, 1, "Error", 1, t0)}, RedisPod: redisPodIn(corev1.PodRunning),
			Redis: reachable("running")}
	}
	running := func(channel string) *trawlerv1.CrawlJob {
		return newJob(1, func(j *trawlerv1.CrawlJob) { j.Spec.CrawlerChannel = channel },
			withStatus(func(s *trawlerv1.CrawlJobStatus) { s.State = "running"; s.Scale = 1; s.RunningSince = mtime(t0) }))
	}
	p := decide(running(""), crashed(), cfg)
	if len(p.Control.Exits) != 1 || p.CrawlerImage != "webrecorder/browsertrix-crawler:1.14.1" {
		t.Errorf("1.x: exits %v, image %q", p.Control.Exits, p.CrawlerImage)
	}
	if st := crawlStatus(running(""), p, crashed()); st.CrawlerImage != "webrecorder/browsertrix-crawler:1.14.1" {
		t.Errorf("status crawlerImage %q", st.CrawlerImage)
	}
	if p := decide(running("legacy"), crashed(), cfg); len(p.Control.Exits) != 0 || p.CrawlerImage != "webrecorder/browsertrix-crawler:0.11.2" {
		t.Errorf("0.11: exits %v, image %q", p.Control.Exits, p.CrawlerImage)
	}

	canceled := func(channel string, finished bool) *trawlerv1.CrawlJob {
		j := running(channel)
		now := metav1.NewTime(t0.Add(time.Minute))
		j.DeletionTimestamp = &now
		if finished {
			j.Status.Finished = &now
			j.Status.State = "canceled"
		}
		return j
	}
	for _, tc := range []struct {
		name     string
		job      *trawlerv1.CrawlJob
		o        observed
		canceled bool
	}{
		{"1.x, just canceled", canceled("", false), crashed(), true},
		{"1.x, canceled, crawlers still there", canceled("", true), crashed(), true},
		{"1.x, crawlers gone", canceled("", true), observed{Now: t0, RedisPod: redisPodIn(corev1.PodRunning), Crawlers: map[int]*corev1.Pod{}}, false},
		{"0.11", canceled("legacy", false), crashed(), false},
	} {
		p := decide(tc.job, tc.o, cfg)
		if p.Poll != tc.canceled || p.Control.Canceled != tc.canceled {
			t.Errorf("%s: poll %v, canceled %v, want both %v", tc.name, p.Poll, p.Control.Canceled, tc.canceled)
		}
	}
}

// TestInterruptedKeepsTheCrawlRunning: an instance that reports
// interrupted (a 1.x crawler between sessions, or pausing) neither ends
// the crawl nor moves it out of its running state.
func TestInterruptedKeepsTheCrawlRunning(t *testing.T) {
	cj := newJob(2, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.State = "running"; s.Scale = 2; s.RunningSince = mtime(t0) }))
	o := observed{Now: t0.Add(time.Minute), ConfigMapOK: true, OrgSlotFree: true,
		Crawlers: pods(corev1.PodRunning, corev1.PodRunning), RedisPod: redisPodIn(corev1.PodRunning),
		Redis: reachable("interrupted", "done")}
	p := decide(cj, o, withChannels(testConfig()))
	if len(p.Transitions) != 0 || p.Reaches != "running" {
		t.Errorf("transitions %v, reaches %s; want none, running", p.Transitions, p.Reaches)
	}
}

// TestControlV1 (real Redis): the 1.x control sets <id>:canceled and
// pushes each exit line to <id>:e once, however often it is asserted; a
// poll reads the lines back in the same round trip.
func TestControlV1(t *testing.T) {
	_, cfg, c := testRedis(t)
	ctx := context.Background()
	k := crawlredis.Keys(testID)
	client, err := newRedisClient(cfg, testID)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c.LPush(ctx, k.Errors(), "crawler line")
	first := exitLines(observed{Crawlers: map[int]*corev1.Pod{0: terminated(0, 1, "Error", 1, t0)}})
	later := exitLines(observed{Crawlers: map[int]*corev1.Pod{0: terminated(0, 17, "Error", 2, t0.Add(time.Second))}})
	for _, ctl := range []redisControl{
		{Exits: first}, {Exits: first}, {Canceled: true, Exits: first}, {Exits: later}, {Exits: later},
	} {
		if _, err := readAndControl(ctx, client, testID, ctl); err != nil {
			t.Fatal(err)
		}
	}
	if v := c.Get(ctx, k.Canceled()).Val(); v != "1" {
		t.Errorf("%s = %q, want 1", k.Canceled(), v)
	}
	s, err := readAndControl(ctx, client, testID, redisControl{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"crawler line", first[0].Line, later[0].Line}; !slices.Equal(s.Errors, want) {
		t.Errorf("error lines %q, want %q", s.Errors, want)
	}
}
