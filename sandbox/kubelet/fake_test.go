package kubelet

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestLifecycleWithFakeClient drives a pod through restart and graceful
// deletion against client-go's fake clientset: the kubelet's own logic,
// fast and under -race, without the control plane.
func TestLifecycleWithFakeClient(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	stopped := make(chan struct{})
	k, err := Start(ctx, client, Options{
		Dir:     t.TempDir(),
		Backoff: Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond},
		Programs: map[string]Program{"app": func(ctx context.Context, c *Container) int {
			fmt.Fprintf(c.Stdout, "run %d on %s\n", c.Restarts, c.Hostname)
			if c.Restarts == 0 {
				return 3
			}
			<-ctx.Done()
			close(stopped)
			return 0
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()

	node, err := client.CoreV1().Nodes().Get(ctx, "sandbox-node-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cpu := node.Status.Allocatable.Cpu(); cpu.Value() != 8 {
		t.Errorf("node allocatable cpu = %s, want 8", cpu)
	}

	pods := client.CoreV1().Pods("ns")
	_, err = pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"},
		Spec: corev1.PodSpec{NodeName: "sandbox-node-0", RestartPolicy: corev1.RestartPolicyOnFailure,
			Containers: []corev1.Container{{Name: "c", Image: "app:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := waitFake(t, func() (*corev1.Pod, error) { return pods.Get(ctx, "p", metav1.GetOptions{}) },
		func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return p.Status.Phase == corev1.PodRunning && len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].State.Running != nil
		})
	if last := pod.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ExitCode != 3 || last.Reason != "Error" {
		t.Errorf("lastState.terminated = %+v, want exit 3 Error", last)
	}
	if got, want := k.Logs("ns", "p", "c"), "run 0 on p\nrun 1 on p\n"; got != want {
		t.Errorf("logs = %q, want %q", got, want)
	}
	// PodLogs tails as pods/log?tailLines does: whole lines, the last ones.
	for tail, want := range map[int64]string{0: "run 0 on p\nrun 1 on p\n", 1: "run 1 on p\n", 2: "run 0 on p\nrun 1 on p\n", 5: "run 0 on p\nrun 1 on p\n"} {
		if got, _ := k.PodLogs(ctx, "ns", "p", "c", tail); got != want {
			t.Errorf("PodLogs tail %d = %q, want %q", tail, got, want)
		}
	}

	// What the apiserver does on a graceful delete.
	pod.DeletionTimestamp = new(metav1.Now())
	pod.DeletionGracePeriodSeconds = new(int64(30))
	if _, err := pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("program's context was not cancelled after the delete")
	}
	waitFake(t, func() (*corev1.Pod, error) {
		p, err := pods.Get(ctx, "p", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return p, err
	}, func(p *corev1.Pod) bool { return p == nil })
}

func waitFake(t *testing.T, get func() (*corev1.Pod, error), ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := get()
		if err == nil && ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod never reached the expected state; last: %+v, err %v", p, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A container whose env needs a missing ConfigMap waits with
// CreateContainerConfigError, and starts once the ConfigMap exists.
func TestContainerWaitsForItsConfigMap(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	k, err := Start(ctx, client, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()
	pods := client.CoreV1().Pods("ns")
	_, err = pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"},
		Spec: corev1.PodSpec{NodeName: "sandbox-node-0", Containers: []corev1.Container{{Name: "c", Image: "app",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "later"}}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	get := func() (*corev1.Pod, error) { return pods.Get(ctx, "p", metav1.GetOptions{}) }
	waitFake(t, get, func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodPending && len(cs) == 1 && cs[0].State.Waiting != nil &&
			cs[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	_, err = client.CoreV1().ConfigMaps("ns").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "later"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFake(t, get, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
}
