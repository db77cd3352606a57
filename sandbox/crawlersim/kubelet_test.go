package crawlersim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// The sandbox (control plane + simulated kubelet) starts on first use, so
// the rest of the package runs without the Kubernetes binaries.
var (
	envOnce sync.Once
	env     *sandbox.Env
	envErr  error
)

func sandboxEnv(t *testing.T) *sandbox.Env {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (sandbox) skipped in -short mode")
	}
	envOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		env, envErr = sandbox.Start(ctx, sandbox.Options{
			Programs: map[string]kubelet.Program{
				crawlersim.Image: crawlersim.Program(func(o *crawlersim.Options) { o.TimeScale = 0.01 }),
			},
			RestartBackoff: kubelet.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond},
		})
		if envErr == nil {
			// Pods reach the package's S3 server as testStore's host.
			u, _ := url.Parse(testStore)
			env.Kubelet.DNS().Register(u.Hostname(), fmt.Sprintf("127.0.0.1:%d", testS3.Port))
		}
	})
	if envErr != nil {
		t.Fatalf("sandbox: %v", envErr)
	}
	return env
}

// crawlerPod renders instance i of crawl id the way Browsertrix's
// crawler.yaml does: command, env, envFrom, the config subPath mount and
// the instance's PVC at /crawls.
func crawlerPod(id, ns string, i int) *corev1.Pod {
	name := fmt.Sprintf("crawl-%s-%d", id, i)
	redisURL := fmt.Sprintf("redis://redis-%s.redis.%s.svc.cluster.local/0", id, ns)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"crawl": id, "role": "crawler"}},
		Spec: corev1.PodSpec{
			Hostname: name, Subdomain: "crawler",
			RestartPolicy:                 corev1.RestartPolicyOnFailure,
			TerminationGracePeriodSeconds: new(int64(600)),
			Volumes: []corev1.Volume{
				{Name: "crawl-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "crawl-config-" + id}}}},
				{Name: "crawl-data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: name}}},
			},
			Containers: []corev1.Container{{
				Name:       "crawler",
				Image:      crawlersim.Image + ":latest",
				WorkingDir: "/crawls",
				Command:    []string{"crawl", "--config", "/tmp/crawl-config.json", "--redisStoreUrl", redisURL},
				EnvFrom: []corev1.EnvFromSource{
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared-crawler-config"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "storage-default"}}},
				},
				Env: []corev1.EnvVar{
					{Name: "CRAWL_ID", Value: id},
					{Name: "WEBHOOK_URL", Value: redisURL + "/crawls-done"},
					{Name: "STORE_PATH", Value: testStoreDir},
					{Name: "STORE_FILENAME", Value: "@ts-@hostsuffix.wacz"},
					{Name: "STORE_USER", Value: testUser},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "crawl-config", MountPath: "/tmp/crawl-config.json", SubPath: "crawl-config.json", ReadOnly: true},
					{Name: "crawl-data", MountPath: "/crawls"},
				},
			}},
		},
	}
}

// redisPod renders the per-crawl Redis the way redis.yaml does.
func redisPod(id string) *corev1.Pod {
	name := "redis-" + id
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"crawl": id, "role": "redis"}},
		Spec: corev1.PodSpec{
			Hostname: name, Subdomain: "redis",
			TerminationGracePeriodSeconds: new(int64(10)),
			Volumes: []corev1.Volume{{Name: "redis-data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
			Containers: []corev1.Container{{
				Name: "redis", Image: "redis", Args: []string{"/redis-conf/redis.conf", "--appendonly", "yes"},
				VolumeMounts: []corev1.VolumeMount{{Name: "redis-data", MountPath: "/data"}},
			}},
		},
	}
}

func pvc(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// setUpCrawl creates the namespace and the ConfigMaps and Secret a crawl's
// pods read, with extra CRAWL_ARGS.
func setUpCrawl(t *testing.T, client kubernetes.Interface, id, seed, extraArgs string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crawlers-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	config, _ := json.Marshal(map[string]any{"seeds": []any{map[string]any{"url": seed}}, "scopeType": "prefix", "limit": 0})
	objs := []any{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "crawl-config-" + id},
			Data: map[string]string{"crawl-config.json": string(config), "STORE_PATH": testStoreDir}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared-crawler-config"},
			Data: map[string]string{"CRAWL_ARGS": browsertrixArgs + " --sim.bootDelay 0.5 " + extraArgs + " --restartsOnError"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "storage-default"},
			StringData: testStorage(testS3).CrawlerEnv()},
	}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			_, err = client.CoreV1().ConfigMaps(ns.Name).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Secret:
			_, err = client.CoreV1().Secrets(ns.Name).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return ns.Name
}

// waitSucceeded polls the pod until it is Succeeded.
func waitSucceeded(t *testing.T, e *sandbox.Env, ns, name string) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		pod, err := e.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && pod.Status.Phase == corev1.PodSucceeded {
			return pod
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s not Succeeded (err %v, pod status %+v); log:\n%s", ns, name, err, pod.Status, e.Kubelet.Logs(ns, name, "crawler"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInKubelet runs crawler pods rendered like Browsertrix's through the
// simulated kubelet: the crawler waits for its Redis pod (created after
// it), reaches it by cluster DNS, and its pod ends Succeeded with the
// crawl's state in that Redis.
func TestInKubelet(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     string
		restarts int32
	}{
		{name: "natural finish"},
		// exit 3 at page 4 restarts the container in place (OnFailure); the
		// next run unlocks its page and finishes the crawl.
		{name: "crash restarts in place", args: "--sim.exitAtPage 4 --sim.exitCode 3 --sim.faultRuns 1", restarts: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sandboxEnv(t)
			ctx, client := context.Background(), e.Client
			id := "manual-20230911173000-" + strings.Repeat(fmt.Sprint(tc.restarts), 12)
			ns := setUpCrawl(t, client, id, "https://example.com/?sim-pages=25", tc.args)
			crawler, rpod := crawlerPod(id, ns, 0), redisPod(id)
			for _, claim := range []string{crawler.Name, rpod.Name} {
				if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc(claim), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for _, pod := range []*corev1.Pod{crawler, rpod} {
				if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			done := waitSucceeded(t, e, ns, crawler.Name)
			cs := done.Status.ContainerStatuses[0]
			if cs.RestartCount != tc.restarts || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
				t.Errorf("container status %+v, want exit 0 after %d restarts", cs, tc.restarts)
			}
			if tc.restarts > 0 && (cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3) {
				t.Errorf("last termination %+v, want exit 3", cs.LastTerminationState)
			}

			rdb := redis.NewClient(&redis.Options{Addr: rpod.Name + ".redis." + ns + ".svc.cluster.local:6379", Dialer: e.Dial})
			defer rdb.Close()
			key := func(s string) string { return id + ":" + s }
			if st := rdb.HGet(ctx, key("status"), crawler.Name).Val(); st != "done" {
				t.Errorf("status %q, want done", st)
			}
			if d, f := rdb.Get(ctx, key("d")).Val(), rdb.SCard(ctx, key("s")).Val(); d != "25" || f != 25 {
				t.Errorf("done %s found %d, want 25", d, f)
			}
			msgs := rdb.LRange(ctx, "crawls-done", 0, -1).Val()
			if len(msgs) != 1 {
				t.Fatalf("crawls-done %v, want one message", msgs)
			}
			var m doneMessage
			if err := json.Unmarshal([]byte(msgs[0]), &m); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(m.Filename, testStore+testStoreDir) || !strings.HasSuffix(m.Filename, id[len(id)-12:]+"-0.wacz") || !m.Completed {
				t.Errorf("message %+v", m)
			}
		})
	}
}
