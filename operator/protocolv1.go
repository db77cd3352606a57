package operator

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// What the operator does for crawlers of the 1.x protocol only
// (upstream-2026 §0.5): a fast cancel through <id>:canceled, and a line in
// <id>:e for every unexpected crawler exit. 0.11 crawlers know neither.

// expectedExit reports the exit codes that need no line: 0 (done, or
// paused), 11 (interrupted, restarts to go on) and 13 (a second signal).
func expectedExit(code int32) bool { return code == 0 || code == 11 || code == 13 }

// exitLine is the operator's line about one crawler exit. Key names the
// exit (pod and end time), so the line goes into <id>:e once however
// often the poller asserts it.
type exitLine struct {
	Key  string
	Line string
}

// exitLines are the lines of the crawler pods' last unexpected exits, in
// the crawler's JSON log line shape: context "k8s", message "Crawler
// Instance Exited: <reason>", details {pod, exitCode, reason}. The line's
// timestamp is the exit's, so the same exit always gives the same line.
func exitLines(o observed) []exitLine {
	var out []exitLine
	for _, i := range slices.Sorted(maps.Keys(o.Crawlers)) {
		p := o.Crawlers[i]
		cs := crawlerContainer(p)
		if cs == nil {
			continue
		}
		t := lastTermination(cs)
		if t == nil || expectedExit(t.ExitCode) {
			continue
		}
		out = append(out, exitLineOf(p, t))
	}
	return out
}

func exitLineOf(p *corev1.Pod, t *corev1.ContainerStateTerminated) exitLine {
	reason := t.Reason
	if reason == "" {
		reason = "Error"
	}
	finished := t.FinishedAt.UTC()
	line, _ := json.Marshal(crawlLogLine{ // strings and a number only
		Timestamp: finished.Format("2006-01-02T15:04:05.000Z"), LogLevel: "error", Context: "k8s",
		Message: "Crawler Instance Exited: " + reason,
		Details: map[string]any{"pod": p.Name, "exitCode": t.ExitCode, "reason": reason},
	})
	return exitLine{Key: fmt.Sprintf("%s/%s/%d", p.Name, p.UID, finished.UnixNano()), Line: string(line)}
}

// speaksV1 tells whether the crawl's channel runs the 1.x protocol.
func speaksV1(cj *trawlerv1.CrawlJob, cfg Config) bool {
	return cfg.crawlerChannel(cj.Spec.CrawlerChannel).Protocol == k8s.ProtocolV1
}

// fastCancel keeps polling a canceled 1.x crawl's Redis while its
// crawlers are still there, to set <id>:canceled: its crawlers then
// exit at once, without packaging or uploading anything.
func (p *plan) fastCancel(cj *trawlerv1.CrawlJob, o observed, cfg Config) {
	if cj.DeletionTimestamp == nil || !speaksV1(cj, cfg) || len(o.Crawlers) == 0 || o.RedisPod == nil {
		return
	}
	p.Poll = true
	p.Control = redisControl{Canceled: true}
}
