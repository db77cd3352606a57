package kubelet

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	for in, want := range map[string]string{
		"plain":        "plain",
		"$(A)":         "1",
		"x$(A)y$(B)z":  "x1ytwoz",
		"$(MISSING)":   "$(MISSING)",
		"$$(A)":        "$(A)",
		"$(A":          "$(A",
		"cost $5":      "cost $5",
		"trailing $":   "trailing $",
		"$(A)$(A)$$$$": "11$$",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRegistryLookup(t *testing.T) {
	var r registry
	exit := func(code int) Program { return func(context.Context, *Container) int { return code } }
	r.register("redis", exit(1))
	r.register("example.com:5000/team/crawler", exit(2))
	r.register("example.com:5000/team/crawler:pinned", exit(3))
	for image, want := range map[string]int{
		"redis":                                1,
		"redis:7.2":                            1,
		"docker.io/library/redis@sha256:abc":   1,
		"example.com:5000/team/crawler":        2,
		"example.com:5000/team/crawler:latest": 2,
		"example.com:5000/team/crawler:pinned": 3,
		"other.registry/redis:7":               1,
		"example.com:5000/team/unknown:1":      0, // waitForStop, cancelled below
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if got := r.lookup(image)(ctx, nil); got != want {
			t.Errorf("lookup(%q) ran a program exiting %d, want %d", image, got, want)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: 10 * time.Second, Max: 5 * time.Minute}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for n, w := range want {
		if got := b.delay(n); got != w {
			t.Errorf("delay(%d) = %s, want %s", n, got, w)
		}
	}
	if got := b.delay(100); got != 5*time.Minute {
		t.Errorf("delay(100) = %s, want the cap", got)
	}
}

func TestPodPhase(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	waiting := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}
	exited := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	backingOff := waiting
	backingOff.LastTerminationState = exited(1).State
	for _, tc := range []struct {
		name       string
		containers []corev1.ContainerStatus
		final      bool
		want       corev1.PodPhase
	}{
		{"creating", []corev1.ContainerStatus{waiting}, false, corev1.PodPending},
		{"one of two started", []corev1.ContainerStatus{running, waiting}, false, corev1.PodPending},
		{"running", []corev1.ContainerStatus{running}, false, corev1.PodRunning},
		{"backing off", []corev1.ContainerStatus{backingOff}, false, corev1.PodRunning},
		{"one done one running", []corev1.ContainerStatus{exited(0), running}, false, corev1.PodRunning},
		{"all exited 0", []corev1.ContainerStatus{exited(0), exited(0)}, true, corev1.PodSucceeded},
		{"one failed", []corev1.ContainerStatus{exited(0), exited(137)}, true, corev1.PodFailed},
		{"never started", []corev1.ContainerStatus{waiting}, true, corev1.PodFailed},
	} {
		if got := podPhase(tc.containers, tc.final); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestPodStatusKeepsForeignConditions(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	base := corev1.PodStatus{QOSClass: corev1.PodQOSBurstable, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: then},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: then},
	}}
	st := podState{podIP: "127.1.2.3", containers: []corev1.ContainerStatus{{Name: "c", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	now := metav1.NewTime(then.Add(time.Hour))
	got := podStatus(base, st, now)
	if got.Phase != corev1.PodRunning || got.PodIP != "127.1.2.3" || got.HostIP != nodeIP || got.QOSClass != corev1.PodQOSBurstable {
		t.Fatalf("status = %+v", got)
	}
	byType := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range got.Conditions {
		byType[c.Type] = c
	}
	if c := byType[corev1.PodScheduled]; c.Status != corev1.ConditionTrue {
		t.Errorf("scheduler's condition lost: %+v", c)
	}
	if c := byType[corev1.PodReady]; c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&then) {
		t.Errorf("Ready = %+v, want True with the old transition time", c)
	}
	if c := byType[corev1.ContainersReady]; c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&now) {
		t.Errorf("ContainersReady = %+v, want True since now", c)
	}

	st.final = true
	st.containers[0] = corev1.ContainerStatus{Name: "c", State: terminatedState(0, now, now)}
	got = podStatus(got, st, now)
	for _, c := range got.Conditions {
		if c.Type == corev1.PodReady && (c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted") {
			t.Errorf("Ready after completion = %+v", c)
		}
	}
	if got.Phase != corev1.PodSucceeded || got.ContainerStatuses[0].State.Terminated.Reason != "Completed" {
		t.Errorf("final status = %+v", got)
	}
}

func TestContainerLogKeepsTail(t *testing.T) {
	l := &containerLog{max: 10}
	for _, line := range []string{"first\n", "second\n", "third\n"} {
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.String(); got != "third\n" {
		t.Errorf("log = %q, want the last whole line", got)
	}
}

// TestContainerLogFileAtFirstWrite: a silent container holds no file
// open; the first write creates the file (and its folder), and a closed
// log opens none again.
func TestContainerLogFileAtFirstWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pod", "c.log")
	l := &containerLog{max: 100, path: path}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("before any write: stat = %v, want no file", err)
	}
	if _, err := l.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	l.close()
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello\n" {
		t.Errorf("after a write: file = %q, %v; want hello", b, err)
	}
	if _, err := l.Write([]byte("late\n")); err != nil || l.file != nil {
		t.Errorf("a write after close: err %v, file %v; want the log in memory only", err, l.file)
	}
}

func TestContainerEnv(t *testing.T) {
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
			Data: map[string]string{"A": "from-cm", "KEY": "k"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sec"},
			Data: map[string][]byte{"PASS": []byte("s3cret")}},
	)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"role": "crawler"}}}
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"},
				Optional: new(true)}},
		},
		Env: []corev1.EnvVar{
			{Name: "A", Value: "override-$(A)"},
			{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "ROLE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['role']"}}},
			{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "K", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "KEY"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "X", Optional: new(true)}}},
		},
	}
	env, err := containerEnv(context.Background(), client, pod, c, "127.9.8.7", "https://127.0.0.1:6443")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "override-from-cm", "KEY": "k", "S_PASS": "s3cret", "NAME": "p",
		"ROLE": "crawler", "IP": "127.9.8.7", "K": "k",
		"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "6443", "KUBERNETES_PORT": "tcp://127.0.0.1:6443",
		"KUBERNETES_PORT_6443_TCP": "tcp://127.0.0.1:6443", "KUBERNETES_PORT_6443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_6443_TCP_PORT": "6443", "KUBERNETES_PORT_6443_TCP_ADDR": "127.0.0.1"}
	if len(env) != len(want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env[%s] = %q, want %q", k, env[k], v)
		}
	}

	c.Env = append(c.Env, corev1.EnvVar{Name: "MISSING", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "X"}}})
	if _, err := containerEnv(context.Background(), client, pod, c, "", ""); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("missing configmap: err = %v, want an error naming it", err)
	}
}

func TestDNS(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hi"))
			c.Close()
		}
	}()
	d := NewDNS("cluster.local")
	names := d.PodNames("redis-1", "redis", "crawlers")
	if want := []string{"redis-1.redis.crawlers.svc.cluster.local", "redis-1.redis.crawlers.svc"}; strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("PodNames = %v, want %v", names, want)
	}
	for _, n := range names {
		d.Register(n, l.Addr().String())
	}
	ctx := context.Background()
	for _, addr := range []string{"redis-1.redis.crawlers.svc.cluster.local:6379", "REDIS-1.redis.crawlers.svc.:1", l.Addr().String()} {
		c, err := d.Dial(ctx, "tcp", addr)
		if err != nil {
			t.Fatalf("Dial(%s): %v", addr, err)
		}
		buf := make([]byte, 2)
		if _, err := c.Read(buf); err != nil || string(buf) != "hi" {
			t.Errorf("Dial(%s) read %q, %v", addr, buf, err)
		}
		c.Close()
	}

	d.Unregister(names[0], "127.0.0.1:1") // someone else's record: kept
	if _, ok := d.Resolve(names[0]); !ok {
		t.Error("Unregister with another address removed the record")
	}
	d.Unregister(names[0], l.Addr().String())
	_, err = d.Dial(ctx, "tcp", names[0]+":6379")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("Dial of an unregistered cluster name: err = %v, want no such host", err)
	}
}
