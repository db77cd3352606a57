package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// A pod shaped like a crawler pod (created before its PVC; a ConfigMap key
// mounted by subPath; envFrom a ConfigMap and a Secret; downward-API env)
// gets all of it; deleting the PVC afterwards deletes its PV and folder.
func TestCrawlerShapedPodGetsVolumesAndEnv(t *testing.T) {
	env := sandboxEnv(t)
	ctx, client := context.Background(), env.Client
	ns := newNamespace(t, client)
	for _, obj := range []any{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "crawl-config-c1"},
			Data: map[string]string{"crawl-config.json": `{"seeds":[]}`, "OTHER": "not mounted"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared-crawler-config"},
			Data: map[string]string{"CRAWL_ARGS": "--workers 2"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "storage-default"},
			StringData: map[string]string{"STORE_ENDPOINT_URL": "http://minio:9000/"}},
	} {
		var err error
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Secret:
			_, err = client.CoreV1().Secrets(ns).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	env.Kubelet.Register("test/crawler-shape", func(ctx context.Context, c *kubelet.Container) int {
		config, err := os.ReadFile(c.Mounts["/tmp/crawl-config.json"])
		checks := map[string][2]string{
			"config file":        {string(config), `{"seeds":[]}`},
			"CRAWL_ARGS":         {c.Env["CRAWL_ARGS"], "--workers 2"},
			"STORE_ENDPOINT_URL": {c.Env["STORE_ENDPOINT_URL"], "http://minio:9000/"},
			"POD_NAME":           {c.Env["POD_NAME"], "crawl-c1-0"},
			"WEBHOOK_URL":        {c.Env["WEBHOOK_URL"], "redis://x/crawls-done"},
			"hostname":           {c.Hostname, "crawl-c1-0"},
			"args":               {fmt.Sprint(c.Args), "[crawl --config /tmp/crawl-config.json --id crawl-c1-0]"},
		}
		failed := err != nil
		for what, got := range checks {
			if got[0] != got[1] {
				fmt.Fprintf(c.Stdout, "%s = %q, want %q\n", what, got[0], got[1])
				failed = true
			}
		}
		if _, err := os.Stat(c.Mounts["/crawls"]); err != nil || failed {
			fmt.Fprintln(c.Stdout, "crawls mount:", err)
			return 1
		}
		return 0
	})

	pod := testPod("crawl-c1-0", "test/crawler-shape", corev1.RestartPolicyNever)
	pod.Spec.Hostname, pod.Spec.Subdomain = "crawl-c1-0", "crawler"
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "crawl-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "crawl-config-c1"}}}},
		{Name: "crawl-data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: "crawl-c1-0"}}},
	}
	c := &pod.Spec.Containers[0]
	c.Command = []string{"crawl", "--config", "/tmp/crawl-config.json"}
	c.Args = []string{"--id", "$(POD_NAME)"}
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "crawl-config", MountPath: "/tmp/crawl-config.json", SubPath: "crawl-config.json", ReadOnly: true},
		{Name: "crawl-data", MountPath: "/crawls"},
	}
	c.EnvFrom = []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared-crawler-config"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "storage-default"}}},
	}
	c.Env = []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "WEBHOOK_URL", Value: "redis://x/crawls-done"},
	}
	createPod(t, client, ns, pod)
	// The scheduler waits for the PVC, created only now, to be bound.
	_, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "crawl-c1-0"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("22Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, client, ns, pod.Name, 60*time.Second, "Succeeded (logs: see below)", func(p *corev1.Pod) bool {
		if p != nil && p.Status.Phase == corev1.PodFailed {
			t.Fatalf("program failed: %s", env.Kubelet.Logs(ns, pod.Name, "main"))
		}
		return p != nil && p.Status.Phase == corev1.PodSucceeded
	})

	// Once no pod uses it, the PVC goes, and with it the PV and its folder.
	pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "crawl-c1-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	folder := pv.Spec.HostPath.Path
	if _, err := os.Stat(folder); err != nil {
		t.Fatalf("volume folder: %v", err)
	}
	if err := client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return isNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("PV %s still there after its PVC was deleted: %v", pv.Name, err)
	}
	if _, err := os.Stat(folder); !os.IsNotExist(err) {
		t.Errorf("volume folder %s still there: %v", folder, err)
	}
}
