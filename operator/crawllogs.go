package operator

import (
	"context"
	"maps"
	"slices"
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
// the pods are gone.
func (c *Controller) logFailedCrawl(cj *trawlerv1.CrawlJob, crawlers map[int]*corev1.Pod) {
	if c.cfg.LogFailedCrawlLines <= 0 {
		return
	}
	pods := make([]*corev1.Pod, 0, len(crawlers))
	for _, i := range slices.Sorted(maps.Keys(crawlers)) {
		p := crawlers[i]
		pods = append(pods, p)
		c.log.Info("failed crawl pod status", "crawl", cj.Spec.ID, "pod", p.Name, "phase", p.Status.Phase,
			"reason", p.Status.Reason, "containers", p.Status.ContainerStatuses)
	}
	lines := int64(c.cfg.LogFailedCrawlLines)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, p := range pods {
			logs, err := c.logs.PodLogs(ctx, p.Namespace, p.Name, p.Spec.Containers[0].Name, lines)
			if err != nil {
				logs = "Logs Not Found: " + err.Error()
			}
			c.log.Info("failed crawl pod logs", "crawl", cj.Spec.ID, "pod", p.Name, "logs", logs)
		}
	}()
}
