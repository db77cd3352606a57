package operator

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// apiLogReader reads logs through the pods/log API.
type apiLogReader struct{ kube kubernetes.Interface }

func (r apiLogReader) PodLogs(ctx context.Context, ns, pod, container string, tail int64) (string, error) {
	b, err := r.kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &tail}).DoRaw(ctx)
	return string(b), err
}

// logFailedCrawl logs each crawler pod's status and, if enabled, the tail
// of its default container's log, so a failure can be understood after
// the pods are gone. When the operator failed the crawl itself and its
// failure report is still to be stored (toReport), reportFailure logs the
// tails from its own read of the logs, so each pod's log is read once per
// failure.
func (c *Controller) logFailedCrawl(cj *trawlerv1.CrawlJob, crawlers map[int]*corev1.Pod, toReport bool) {
	if c.cfg.LogFailedCrawlLines <= 0 {
		return
	}
	pods := inIndexOrder(crawlers)
	for _, p := range pods {
		c.log.Info("failed crawl pod status", "crawl", cj.Spec.ID, "pod", p.Name, "phase", p.Status.Phase,
			"reason", p.Status.Reason, "containers", p.Status.ContainerStatuses)
	}
	if toReport {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), failureLogsTimeout)
		defer cancel()
		c.logPodLogs(cj, pods, c.readPodLogs(ctx, pods, c.cfg.LogFailedCrawlLines))
	}()
}

// podLog is the tail of a crawler pod's log, or why it could not be read.
type podLog struct {
	text string
	err  error
}

// readPodLogs reads the last lines of each pod's default container log.
func (c *Controller) readPodLogs(ctx context.Context, pods []*corev1.Pod, lines int) []podLog {
	logs := make([]podLog, len(pods))
	for i, p := range pods {
		logs[i].text, logs[i].err = c.logs.PodLogs(ctx, p.Namespace, p.Name, p.Spec.Containers[0].Name, int64(lines))
	}
	return logs
}

// logPodLogs logs the last LogFailedCrawlLines lines of each pod's log.
func (c *Controller) logPodLogs(cj *trawlerv1.CrawlJob, pods []*corev1.Pod, logs []podLog) {
	for i, p := range pods {
		text := lastLines(logs[i].text, c.cfg.LogFailedCrawlLines)
		if logs[i].err != nil {
			text = "Logs Not Found: " + logs[i].err.Error()
		}
		c.log.Info("failed crawl pod logs", "crawl", cj.Spec.ID, "pod", p.Name, "logs", text)
	}
}

// lastLines is the end of log holding its last n lines (a final newline
// ends the last line; it does not start another).
func lastLines(log string, n int) string {
	end := strings.TrimSuffix(log, "\n")
	for i := 0; i < n; i++ {
		j := strings.LastIndexByte(end, '\n')
		if j < 0 {
			return log
		}
		end = end[:j]
	}
	return log[len(end)+1:]
}

// inIndexOrder lists the crawler pods by instance index.
func inIndexOrder(crawlers map[int]*corev1.Pod) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, len(crawlers))
	for _, i := range slices.Sorted(maps.Keys(crawlers)) {
		pods = append(pods, crawlers[i])
	}
	return pods
}

// failureKey is the background task key of a crawl's failure report.
func failureKey(key string) string { return "failure/" + key }

// failureLogLines is how many of each crawler pod's last log lines go into
// the errors of a crawl the operator failed.
const failureLogLines = 20

// failureLogsTimeout bounds reading the crawler pods' logs for a failure
// report (and for logging a failed crawl's pods).
const failureLogsTimeout = 30 * time.Second

// reportFailure stores, in the background, why the operator failed the
// crawl and each crawler pod's last log lines in the crawl's errors, in
// the crawler's JSON log line shape, retrying with backoff until they are
// stored. Then the FailureReported condition records it (crawlStatus sets
// it) and the teardown lets the pods go; until then a restarted operator
// reports again (the store keeps one copy). The one read of the logs also
// serves logFailedCrawl's tails, when those are enabled.
func (c *Controller) reportFailure(ctx context.Context, key string, cj *trawlerv1.CrawlJob, reason string, crawlers map[int]*corev1.Pod) {
	id := cj.Spec.ID
	pods := inIndexOrder(crawlers)
	var lines []string
	c.retryInBackground(ctx, key, failureKey(key), "storing the failure report", id, func(sctx context.Context) error {
		if lines == nil {
			// The logs are read once, within a limit of their own: the
			// try's StoreTimeout is the store write's, and a slow log read
			// must not use it up. A retry stores the same lines.
			lctx, cancel := context.WithTimeout(ctx, failureLogsTimeout)
			logs := c.readPodLogs(lctx, pods, max(failureLogLines, c.cfg.LogFailedCrawlLines))
			cancel()
			if c.cfg.LogFailedCrawlLines > 0 {
				c.logPodLogs(cj, pods, logs)
			}
			lines = c.failureReport(reason, pods, logs)
		}
		return c.store.AddOperatorCrawlErrors(sctx, id, lines)
	})
}

// crawlLogLine is a line of the crawl's errors, shaped as the crawler's
// own JSON log lines.
type crawlLogLine struct {
	Timestamp string         `json:"timestamp"`
	LogLevel  string         `json:"logLevel"`
	Context   string         `json:"context"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details"`
}

// failureReport is the reason, then one line per crawler pod with its
// restarts, last exit code and last log lines.
func (c *Controller) failureReport(reason string, pods []*corev1.Pod, logs []podLog) []string {
	ts := c.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	entries := []crawlLogLine{{Timestamp: ts, LogLevel: "fatal", Context: "operator", Message: reason, Details: map[string]any{}}}
	for i, p := range pods {
		details := map[string]any{"pod": p.Name}
		if cs := crawlerContainer(p); cs != nil {
			details["restarts"] = cs.RestartCount
			if t := lastTermination(cs); t != nil {
				details["exitCode"] = t.ExitCode
			}
		}
		if err := logs[i].err; err != nil {
			details["logsError"] = err.Error()
		} else {
			details["logs"] = strings.Split(strings.TrimRight(lastLines(logs[i].text, failureLogLines), "\n"), "\n")
		}
		entries = append(entries, crawlLogLine{Timestamp: ts, LogLevel: "error", Context: "operator",
			Message: "last log lines of crawler pod " + p.Name, Details: details})
	}
	lines := make([]string, len(entries))
	for i, e := range entries {
		b, _ := json.Marshal(e) // strings, numbers and string lists only
		lines[i] = string(b)
	}
	return lines
}
