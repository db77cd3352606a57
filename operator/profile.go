package operator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// syncProfile reconciles one ProfileJob: one browser pod until the job
// expires, then the job is deleted (its pod goes with it).
func (c *Controller) syncProfile(ctx context.Context, key string) error {
	ns, name := splitKey(key)
	pj, err := c.profiles.ProfileJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pj.DeletionTimestamp != nil {
		return nil
	}
	now := c.clock.Now()
	if exp := pj.Spec.ExpireTime; exp != nil && !now.Before(exp.Time) {
		err := c.trawler.TrawlerV1().ProfileJobs(ns).Delete(ctx, pj.Name, deleteOptions(pj.UID, nil))
		if err != nil && !isGone(err) {
			return fmt.Errorf("deleting expired profile job: %w", err)
		}
		return nil
	}

	want := browserPod(pj, c.cfg)
	var pod *corev1.Pod
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromSet(labels.Set{k8s.LabelBrowser: pj.Spec.ID}))
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	for _, p := range pods {
		if p.Name == want.Name && metav1.IsControlledBy(p, pj) {
			pod = p
		}
	}
	switch {
	case pod == nil:
		if _, err := c.kube.CoreV1().Pods(ns).Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating browser pod: %w", err)
		}
	case pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodFailed:
		if err := c.deletePod(ctx, pod, nil); err != nil {
			return err
		}
	}

	phase := ""
	if pod != nil {
		phase = string(pod.Status.Phase)
	}
	if pj.Status.Phase != phase {
		next := pj.DeepCopy()
		next.Status.Phase = phase
		if _, err := c.trawler.TrawlerV1().ProfileJobs(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing profile status: %w", err)
		}
	}
	if exp := pj.Spec.ExpireTime; exp != nil {
		c.profileQueue.AddAfter(key, exp.Sub(now))
	}
	return nil
}

// browserPod is the interactive browser a user prepares a profile in,
// through its proxy as a crawl would go.
func browserPod(pj *trawlerv1.ProfileJob, cfg Config) *corev1.Pod {
	name := k8s.BrowserPodName(pj.Spec.ID)
	command := []string{"create-login-profile", "--interactive", "--filename", "/tmp/profile.tar.gz", "--url", pj.Spec.StartURL}
	if pj.Spec.ProfileFilename != "" {
		command = append(command, "--profile", "@"+pj.Spec.ProfileFilename)
	}
	env := []corev1.EnvVar{
		{Name: "STORE_PATH", Value: pj.Spec.StoragePath},
		{Name: "VNC_PASS", Value: pj.Spec.VNCPassword},
	}
	if host, port, ok := cfg.socksProxy(); ok {
		env = append(env, corev1.EnvVar{Name: "CHROME_FLAGS", Value: "--proxy-server=socks5://" + host + ":" + port})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: pj.Namespace,
			Labels:    map[string]string{k8s.LabelBrowser: pj.Spec.ID, k8s.LabelRole: k8s.RoleBrowser},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pj,
				trawlerv1.SchemeGroupVersion.WithKind("ProfileJob"))},
		},
		Spec: corev1.PodSpec{
			Hostname:      name,
			Subdomain:     k8s.BrowserSubdomain,
			RestartPolicy: corev1.RestartPolicyOnFailure,
			Affinity:      affinity(cfg.CrawlerNodeType, ""),
			Tolerations:   tolerations(),
			Containers: []corev1.Container{{
				Name:            "browser",
				Image:           cfg.CrawlerImage,
				ImagePullPolicy: corev1.PullPolicy(cfg.CrawlerPullPolicy),
				Command:         command,
				Env:             env,
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: k8s.StorageSecretName(storageName(pj.Spec.StorageName))}}}},
			}},
		},
	}
	proxy, _ := cfg.proxy(pj.Spec.ProxyID)
	applyProxy(pod, proxy, cfg.ProxyMatchHosts)
	return pod
}
