package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// The tests in this file run against the real control plane. The sandbox
// starts on first use, so the unit tests of this package run without the
// binaries; a test that needs the sandbox fails when they are missing.
var (
	envOnce sync.Once
	env     *sandbox.Env
	envErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		env.Stop()
	}
	os.Exit(code)
}

// Two small nodes, so the preemption test can fill one; quick restarts.
const nodeCPU = "2"

func sandboxEnv(t *testing.T) *sandbox.Env {
	t.Helper()
	envOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		env, envErr = sandbox.Start(ctx, sandbox.Options{
			Nodes: kubelet.Nodes{Count: 2, CPU: resource.MustParse(nodeCPU),
				Memory: resource.MustParse("4Gi"), Pods: 30},
			RestartBackoff: kubelet.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond},
		})
		if envErr == nil {
			fmt.Fprintf(os.Stderr, "sandbox started in %s\n", env.StartDuration.Round(time.Millisecond))
		}
	})
	if envErr != nil {
		t.Fatalf("sandbox: %v", envErr)
	}
	return env
}

// newNamespace creates a namespace for one test and deletes it after.
func newNamespace(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

func newPriorityClass(t *testing.T, client kubernetes.Interface, name string, value int32) {
	t.Helper()
	_, err := client.SchedulingV1().PriorityClasses().Create(context.Background(),
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// testPod is a pod running image with restartPolicy policy.
func testPod(name, image string, policy corev1.RestartPolicy) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 policy,
			TerminationGracePeriodSeconds: new(int64(30)),
			Containers:                    []corev1.Container{{Name: "main", Image: image}},
		},
	}
}

func createPod(t *testing.T, client kubernetes.Interface, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// waitPod watches pod ns/name until ok accepts it (a nil pod means it is
// gone) or timeout passes.
func waitPod(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last *corev1.Pod
	for ctx.Err() == nil {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			continue
		}
		last = nil
		if len(list.Items) == 1 {
			last = &list.Items[0]
		}
		if ok(last) {
			return last
		}
		w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion,
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				break // an error event: list again
			}
			if ev.Type == "DELETED" {
				p = nil
			}
			if last = p; ok(p) {
				w.Stop()
				return p
			}
		}
		w.Stop()
	}
	t.Fatalf("pod %s/%s: timed out after %s waiting until %s; last seen: %s", ns, name, timeout, what, describe(last))
	return nil
}

func describe(p *corev1.Pod) string {
	if p == nil {
		return "gone"
	}
	s := fmt.Sprintf("phase=%s node=%q deleting=%v", p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil)
	for _, c := range p.Status.Conditions {
		s += fmt.Sprintf(" %s=%s(%s)", c.Type, c.Status, c.Message)
	}
	for _, c := range p.Status.ContainerStatuses {
		s += fmt.Sprintf(" %s:restarts=%d state=%+v", c.Name, c.RestartCount, c.State)
	}
	return s
}

func running(p *corev1.Pod) bool {
	if p == nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func phase(want corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == want }
}

func gone(p *corev1.Pod) bool { return p == nil }

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
