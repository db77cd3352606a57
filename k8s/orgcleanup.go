package k8s

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeleteOrgObjects deletes what the org oid has in the crawler namespace:
// its CrawlJobs and ProfileJobs (the operator tears down their pods and
// PVCs, and marks running crawls canceled, before their finalizers let
// them go), the crawls' ConfigMaps, and the Secret of the org's own
// storage. It answers how many CrawlJobs and ProfileJobs it found: the
// org is gone from Kubernetes once a call finds none. Every object is
// found by the org label, so calling it again finishes what a crash cut
// short.
func (l *Launcher) DeleteOrgObjects(ctx context.Context, oid string) (remaining int, err error) {
	sel := metav1.ListOptions{LabelSelector: LabelOrg + "=" + oid}
	policy := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &policy}

	jobs, err := l.trawler.TrawlerV1().CrawlJobs(l.namespace).List(ctx, sel)
	if err != nil {
		return 0, fmt.Errorf("listing the org's crawl jobs: %w", err)
	}
	for _, cj := range jobs.Items {
		if cj.DeletionTimestamp != nil {
			continue
		}
		if err := l.trawler.TrawlerV1().CrawlJobs(l.namespace).Delete(ctx, cj.Name, del); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("deleting crawl job %s: %w", cj.Name, err)
		}
	}
	browsers, err := l.trawler.TrawlerV1().ProfileJobs(l.namespace).List(ctx, sel)
	if err != nil {
		return 0, fmt.Errorf("listing the org's profile jobs: %w", err)
	}
	for _, pj := range browsers.Items {
		if pj.DeletionTimestamp != nil {
			continue
		}
		if err := l.trawler.TrawlerV1().ProfileJobs(l.namespace).Delete(ctx, pj.Name, del); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("deleting profile job %s: %w", pj.Name, err)
		}
	}
	// The CrawlJobs own the ConfigMaps, but a cluster without garbage
	// collection (or a crawl whose launch was cut short) would keep them.
	cms, err := l.kube.CoreV1().ConfigMaps(l.namespace).List(ctx, sel)
	if err != nil {
		return 0, fmt.Errorf("listing the org's config maps: %w", err)
	}
	for _, cm := range cms.Items {
		if err := l.kube.CoreV1().ConfigMaps(l.namespace).Delete(ctx, cm.Name, del); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("deleting config map %s: %w", cm.Name, err)
		}
	}
	if err := l.DeleteStorageSecret(ctx, StorageSecretName(oid)); err != nil {
		return 0, err
	}
	return len(jobs.Items) + len(browsers.Items), nil
}
