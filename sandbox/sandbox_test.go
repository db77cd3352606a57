package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/trawlerhq/trawler/sandbox"
)

// The sandbox starts on first use and is shared by the tests; TestMain
// stops it and then checks that no child process outlived Stop.
var (
	envOnce sync.Once
	env     *sandbox.Env
	envErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		fmt.Fprintln(os.Stderr, costs(env))
		env.Stop()
		if kids := childProcesses(); len(kids) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: processes left after Env.Stop: %s\n", strings.Join(kids, ", "))
			code = 1
		}
	}
	os.Exit(code)
}

func sandboxEnv(t *testing.T) *sandbox.Env {
	t.Helper()
	envOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		env, envErr = sandbox.Start(ctx, sandbox.Options{
			CRDs:                 [][]byte{widgetCRD},
			Namespaces:           []string{"crawlers"},
			CrawlPriorityClasses: 3,
		})
	})
	if envErr != nil {
		t.Fatalf("sandbox: %v", envErr)
	}
	return env
}

// TestStart reports what the sandbox costs and checks what Start set up.
func TestStart(t *testing.T) {
	env := sandboxEnv(t)
	ctx := context.Background()
	if len(env.Processes()) != 7 {
		t.Errorf("%d processes running, want etcd, 3 Kubernetes servers, redis-server, mongotestd and mailpit", len(env.Processes()))
	}
	for _, p := range env.Processes() {
		if _, err := p.RSS(); err != nil {
			t.Error(err)
		}
	}
	if _, err := env.Client.CoreV1().Namespaces().Get(ctx, "crawlers", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	pc, err := env.Client.SchedulingV1().PriorityClasses().Get(ctx, "crawl-instance-2", metav1.GetOptions{})
	if err != nil || pc.Value != -2 {
		t.Errorf("priorityclass crawl-instance-2: %v, %v; want value -2", pc, err)
	}
	// The CRD is served: its resource list answers.
	body, err := env.Client.Discovery().RESTClient().Get().AbsPath("/apis/example.com/v1/namespaces/crawlers/widgets").DoRaw(ctx)
	if err != nil || !bytes.Contains(body, []byte(`"WidgetList"`)) {
		t.Errorf("listing widgets: %s, %v", body, err)
	}
	if _, err := os.Stat(env.Kubeconfig()); err != nil {
		t.Error(err)
	}
}

// The Redis stand-in answers at its pod's DNS name through Env.Dial, and
// its data survives the pod being deleted and created again on its PVC.
func TestRedisPodKeepsDataOnItsPVC(t *testing.T) {
	env := sandboxEnv(t)
	ctx, client := context.Background(), env.Client
	const ns = "crawlers"
	_, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "redis-abc"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Shaped like upstream's redis.yaml.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "redis-abc", Labels: map[string]string{"role": "redis"}},
		Spec: corev1.PodSpec{
			Hostname: "redis-abc", Subdomain: "redis", TerminationGracePeriodSeconds: new(int64(10)),
			Volumes: []corev1.Volume{{Name: "redis-data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "redis-abc"}}}},
			Containers: []corev1.Container{{Name: "redis", Image: "redis:7", Args: []string{"--appendonly", "yes"},
				VolumeMounts: []corev1.VolumeMount{{Name: "redis-data", MountPath: "/data"}}}},
		},
	}
	rdb := redis.NewClient(&redis.Options{Addr: "redis-abc.redis.crawlers.svc.cluster.local:6379",
		Dialer: env.Dial, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	ping := func(ctx context.Context) (bool, error) { return rdb.Ping(ctx).Err() == nil, nil }

	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, ping); err != nil {
		t.Fatalf("redis never answered at its DNS name: %v", err)
	}
	if err := rdb.Set(ctx, "abc:status", "running", 0).Err(); err != nil {
		t.Fatal(err)
	}

	if err := client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err != nil, nil
	})
	if err != nil {
		t.Fatalf("redis pod not removed: %v", err)
	}
	if _, ok := env.Kubelet.DNS().Resolve("redis-abc.redis.crawlers.svc"); ok {
		t.Error("the deleted pod's DNS name still resolves")
	}

	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, ping); err != nil {
		t.Fatalf("recreated redis never answered: %v", err)
	}
	if v, err := rdb.Get(ctx, "abc:status").Result(); err != nil || v != "running" {
		t.Errorf("after recreating the pod: GET = %q, %v; want the value written before", v, err)
	}
	if logs := env.Kubelet.Logs(ns, pod.Name, "redis"); !strings.Contains(logs, "Ready to accept connections") {
		t.Errorf("container log lacks redis-server's output: %q", logs)
	}
}

// costs summarises the sandbox's start time and memory for the test log;
// the test process itself hosts the kubelet and its programs.
func costs(env *sandbox.Env) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sandbox: started in %s; RSS:", env.StartDuration.Round(time.Millisecond))
	for _, p := range env.Processes() {
		if rss, err := p.RSS(); err == nil {
			fmt.Fprintf(&b, " %s %d MiB,", p.Name, rss>>20)
		}
	}
	status, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(status)) {
		if peak, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Fprintf(&b, " test process peak %s", strings.TrimSpace(peak))
		}
	}
	return b.String()
}

// childProcesses lists the live child processes of the test binary.
func childProcesses() []string {
	me := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []string
	for _, path := range stats {
		stat, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state, ppid, ...
		end := bytes.LastIndexByte(stat, ')')
		fields := strings.Fields(string(stat[end+1:]))
		if len(fields) > 1 && fields[1] == me && fields[0] != "Z" {
			kids = append(kids, string(stat[:end+1]))
		}
	}
	return kids
}

var widgetCRD = []byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`)
