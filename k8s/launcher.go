package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
)

// Launcher starts and controls crawls and profile browsers by creating,
// patching and deleting CrawlJobs and ProfileJobs in one namespace. It
// never touches pods: the operator turns the resources into pods.
type Launcher struct {
	kube      kubernetes.Interface
	trawler   versioned.Interface
	namespace string
	clock     clock.PassiveClock
}

// NewLauncher returns a Launcher for the given namespace (the crawler
// namespace).
func NewLauncher(kube kubernetes.Interface, trawler versioned.Interface, namespace string) *Launcher {
	return &Launcher{kube: kube, trawler: trawler, namespace: namespace, clock: clock.RealClock{}}
}

// LaunchCrawl creates the crawl's ConfigMap (crawl-config-<id>, holding
// req.ConfigJSON) and then its CrawlJob (crawljob-<id>), and makes the
// CrawlJob own the ConfigMap so that garbage collection removes it. The
// ConfigMap comes first so the operator finds it on its first sync.
// Repeating a launch that failed half-way completes it; objects that
// already exist are kept as they are.
func (l *Launcher) LaunchCrawl(ctx context.Context, req CrawlRequest) error {
	id := req.Spec.ID
	if id == "" {
		return errors.New("launching crawl: empty crawl id")
	}
	if err := CheckCrawlConfigSize(req.ConfigJSON); err != nil {
		return fmt.Errorf("launching crawl %s: %w", id, err)
	}
	labels := map[string]string{
		LabelCrawl:       id,
		LabelOrg:         req.Spec.OID,
		LabelUser:        req.Spec.UserID,
		LabelCrawlConfig: req.Spec.CID,
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: CrawlConfigMapName(id), Namespace: l.namespace, Labels: labels},
		Data:       map[string]string{ConfigMapKey: string(req.ConfigJSON)},
	}
	cms := l.kube.CoreV1().ConfigMaps(l.namespace)
	_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	createdConfigMap := err == nil
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating config map %s: %w", cm.Name, err)
	}

	cj := newCrawlJob(l.namespace, req.Spec, labels)
	cjs := l.trawler.TrawlerV1().CrawlJobs(l.namespace)
	created, err := cjs.Create(ctx, cj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = cjs.Get(ctx, cj.Name, metav1.GetOptions{})
	}
	if err != nil {
		err = fmt.Errorf("creating crawl job %s: %w", cj.Name, err)
		// Without an owner the ConfigMap would never be collected. One
		// found from an earlier call may belong to a live CrawlJob.
		if createdConfigMap {
			if derr := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
				err = errors.Join(err, fmt.Errorf("removing config map %s: %w", cm.Name, derr))
			}
		}
		return err
	}

	if err := l.setConfigMapOwner(ctx, cm.Name, created); err != nil {
		return fmt.Errorf("making %s own config map %s: %w", cj.Name, cm.Name, err)
	}
	return nil
}

// newCrawlJob returns the CrawlJob of a crawl. The finalizer is set at
// creation so the operator can never miss the deletion of a crawl whose
// children it has not seen yet.
func newCrawlJob(namespace string, spec trawlerv1.CrawlJobSpec, labels map[string]string) *trawlerv1.CrawlJob {
	cjLabels := map[string]string{LabelRole: RoleJob}
	maps.Copy(cjLabels, labels)
	spec.ConfigMap = CrawlConfigMapName(spec.ID)
	return &trawlerv1.CrawlJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:       CrawlJobName(spec.ID),
			Namespace:  namespace,
			Labels:     cjLabels,
			Finalizers: []string{Finalizer},
		},
		Spec: spec,
	}
}

// setConfigMapOwner makes the CrawlJob the controller of the ConfigMap.
// The owner reference does not block the owner's deletion: the operator's
// finalizer already orders teardown, and blocking would need extra RBAC.
func (l *Launcher) setConfigMapOwner(ctx context.Context, name string, owner *trawlerv1.CrawlJob) error {
	ref := metav1.NewControllerRef(owner, trawlerv1.SchemeGroupVersion.WithKind("CrawlJob"))
	ref.BlockOwnerDeletion = nil
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{*ref}},
	})
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	_, err = l.kube.CoreV1().ConfigMaps(l.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// StopCrawl asks the crawl to stop gracefully: the crawlers finish their
// pages, upload what they have and exit.
func (l *Launcher) StopCrawl(ctx context.Context, crawlID string) error {
	return l.patchCrawlJobSpec(ctx, crawlID, map[string]any{"stopping": true})
}

// PauseCrawl pauses the crawl as of pausedAt, or resumes it when
// pausedAt is zero (spec.pausedAt, RFC 3339 in UTC, or "").
func (l *Launcher) PauseCrawl(ctx context.Context, crawlID string, pausedAt time.Time) error {
	value := ""
	if !pausedAt.IsZero() {
		value = pausedAt.UTC().Format(time.RFC3339)
	}
	return l.patchCrawlJobSpec(ctx, crawlID, map[string]any{"pausedAt": value})
}

// ScaleCrawl sets the desired number of crawler instances. The range
// check against max_crawl_scale is the caller's; the CRD rejects scale < 1.
func (l *Launcher) ScaleCrawl(ctx context.Context, crawlID string, scale int32) error {
	return l.patchCrawlJobSpec(ctx, crawlID, map[string]any{"scale": scale})
}

// RestartCrawl replaces the crawl's crawl-config.json and then asks the
// operator to recreate the crawler pods (keeping their volumes) so that
// they read it. restartTime is RFC 3339 with nanoseconds: two restarts
// within one second must still differ.
func (l *Launcher) RestartCrawl(ctx context.Context, crawlID string, configJSON []byte) error {
	if err := CheckCrawlConfigSize(configJSON); err != nil {
		return fmt.Errorf("restarting crawl %s: %w", crawlID, err)
	}
	name := CrawlConfigMapName(crawlID)
	patch, err := json.Marshal(map[string]any{"data": map[string]string{ConfigMapKey: string(configJSON)}})
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	_, err = l.kube.CoreV1().ConfigMaps(l.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		// The ConfigMap lives exactly as long as the CrawlJob that owns it.
		return fmt.Errorf("updating config map %s: %w", name, ErrCrawlJobNotFound)
	}
	if err != nil {
		return fmt.Errorf("updating config map %s: %w", name, err)
	}
	now := l.clock.Now().UTC().Format(time.RFC3339Nano)
	return l.patchCrawlJobSpec(ctx, crawlID, map[string]any{"restartTime": now})
}

// CancelCrawl deletes the crawl's CrawlJob. Its finalizer lets the
// operator mark the crawl canceled and tear the children down in order.
func (l *Launcher) CancelCrawl(ctx context.Context, crawlID string) error {
	name := CrawlJobName(crawlID)
	policy := metav1.DeletePropagationBackground
	err := l.trawler.TrawlerV1().CrawlJobs(l.namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting crawl job %s: %w", name, ErrCrawlJobNotFound)
	}
	if err != nil {
		return fmt.Errorf("deleting crawl job %s: %w", name, err)
	}
	return nil
}

// patchCrawlJobSpec merge-patches fields of a CrawlJob's spec. A merge
// patch needs no read first and cannot overwrite fields it does not name.
func (l *Launcher) patchCrawlJobSpec(ctx context.Context, crawlID string, fields map[string]any) error {
	name := CrawlJobName(crawlID)
	patch, err := json.Marshal(map[string]any{"spec": fields})
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	_, err = l.trawler.TrawlerV1().CrawlJobs(l.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("patching crawl job %s: %w", name, ErrCrawlJobNotFound)
	}
	if err != nil {
		return fmt.Errorf("patching crawl job %s: %w", name, err)
	}
	return nil
}
