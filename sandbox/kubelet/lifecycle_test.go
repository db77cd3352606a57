package kubelet_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// A pod with a PriorityClass and a PVC is bound by the real scheduler,
// runs, and succeeds when its program exits 0; a second pod on the same
// PVC sees what the first one wrote.
func TestPodWithPriorityClassAndPVCSucceeds(t *testing.T) {
	env := sandboxEnv(t)
	ctx, client := context.Background(), env.Client
	ns := newNamespace(t, client)
	newPriorityClass(t, client, ns+"-high", 1000)
	_, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	release := make(chan struct{})
	env.Kubelet.Register("test/writer", func(ctx context.Context, c *kubelet.Container) int {
		if err := os.WriteFile(filepath.Join(c.Mounts["/data"], "note"), []byte(c.Env["GREETING"]), 0o644); err != nil {
			fmt.Fprintln(c.Stdout, err)
			return 1
		}
		fmt.Fprintf(c.Stdout, "wrote note as %s\n", c.Hostname)
		<-release
		return 0
	})
	env.Kubelet.Register("test/reader", func(ctx context.Context, c *kubelet.Container) int {
		note, err := os.ReadFile(filepath.Join(c.Mounts["/data"], "note"))
		if err != nil || string(note) != "hello" {
			fmt.Fprintf(c.Stdout, "note = %q, %v\n", note, err)
			return 1
		}
		return 0
	})

	withData := func(pod *corev1.Pod) *corev1.Pod {
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return pod
	}
	writer := withData(testPod("writer", "test/writer:v1", corev1.RestartPolicyOnFailure))
	writer.Spec.PriorityClassName = ns + "-high"
	writer.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "GREETING", Value: "hello"}}
	createPod(t, client, ns, writer)

	pod := waitPod(t, client, ns, "writer", 60*time.Second, "Running and Ready", running)
	if pod.Spec.NodeName == "" || pod.Spec.Priority == nil || *pod.Spec.Priority != 1000 {
		t.Errorf("node %q, priority %v; want a node and priority 1000", pod.Spec.NodeName, pod.Spec.Priority)
	}
	if ip := net.ParseIP(pod.Status.PodIP); ip == nil || !ip.IsLoopback() || pod.Status.PodIP == "127.0.0.1" ||
		pod.Status.HostIP != "127.0.0.1" || pod.Status.StartTime == nil ||
		pod.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("running pod's status: %s", describe(pod))
	}
	pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		t.Errorf("PVC phase %s, volume %q; want Bound", pvc.Status.Phase, pvc.Spec.VolumeName)
	}
	if pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{}); err != nil ||
		pv.Status.Phase != corev1.VolumeBound {
		t.Errorf("PV %s: %v, %v; want Bound", pvc.Spec.VolumeName, pv, err)
	}

	close(release)
	pod = waitPod(t, client, ns, "writer", 30*time.Second, "Succeeded", phase(corev1.PodSucceeded))
	term := pod.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Errorf("terminated state = %+v, want exit 0 Completed", term)
	}
	if logs := env.Kubelet.Logs(ns, "writer", "main"); !strings.Contains(logs, "wrote note as writer") {
		t.Errorf("logs = %q", logs)
	}

	createPod(t, client, ns, withData(testPod("reader", "test/reader", corev1.RestartPolicyNever)))
	waitPod(t, client, ns, "reader", 60*time.Second, "Succeeded (it read the note)", phase(corev1.PodSucceeded))
}

// A program that exits 1 under restartPolicy OnFailure runs again with
// restartCount 1 and the failed run as lastState.
func TestOnFailureRestartsContainer(t *testing.T) {
	env := sandboxEnv(t)
	client := env.Client
	ns := newNamespace(t, client)
	env.Kubelet.Register("test/fail-once", func(ctx context.Context, c *kubelet.Container) int {
		if c.Restarts == 0 {
			return 1
		}
		<-ctx.Done()
		return 0
	})
	createPod(t, client, ns, testPod("flaky", "test/fail-once", corev1.RestartPolicyOnFailure))

	pod := waitPod(t, client, ns, "flaky", 60*time.Second, "running again with restartCount 1",
		func(p *corev1.Pod) bool { return running(p) && p.Status.ContainerStatuses[0].RestartCount == 1 })
	last := pod.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 1 || last.Reason != "Error" {
		t.Errorf("lastState.terminated = %+v, want exit 1 Error", last)
	}
}

// With a node full of low-priority pods, the real scheduler preempts one
// for a higher-priority pod, which then runs.
func TestHigherPriorityPodPreemptsLowerOne(t *testing.T) {
	env := sandboxEnv(t)
	ctx, client := context.Background(), env.Client
	ns := newNamespace(t, client)
	newPriorityClass(t, client, ns+"-low", -10)
	newPriorityClass(t, client, ns+"-high", 100)
	node := env.Kubelet.NodeNames()[1]
	stopped := make(chan string, 2)
	env.Kubelet.Register("test/victim", func(ctx context.Context, c *kubelet.Container) int {
		<-ctx.Done()
		stopped <- c.Pod.Name
		return 0
	})

	// Each pod asks for half the node's CPU: two fill it.
	onNode := func(name, class string) *corev1.Pod {
		pod := testPod(name, "test/victim", corev1.RestartPolicyAlways)
		pod.Spec.PriorityClassName = class
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		return pod
	}
	for _, name := range []string{"low-0", "low-1"} {
		createPod(t, client, ns, onNode(name, ns+"-low"))
	}
	for _, name := range []string{"low-0", "low-1"} {
		waitPod(t, client, ns, name, 60*time.Second, "Running", running)
	}

	createPod(t, client, ns, onNode("high", ns+"-high"))
	var victim string
	select {
	case victim = <-stopped:
	case <-time.After(60 * time.Second):
		t.Fatal("no low-priority pod was stopped for the high-priority one")
	}
	waitPod(t, client, ns, victim, 30*time.Second, "gone (preempted)", gone)
	pod := waitPod(t, client, ns, "high", 60*time.Second, "Running", running)
	if pod.Spec.NodeName != node {
		t.Errorf("high pod on %q, want %q", pod.Spec.NodeName, node)
	}
	survivor := map[string]string{"low-0": "low-1", "low-1": "low-0"}[victim]
	if p, err := client.CoreV1().Pods(ns).Get(ctx, survivor, metav1.GetOptions{}); err != nil || !running(p) {
		t.Errorf("the other low pod %s should still run: %s, %v", survivor, describe(p), err)
	}
	select {
	case name := <-stopped:
		t.Errorf("a second pod (%s) was stopped; only one had to go", name)
	default:
	}
}

// Deleting an owner with background propagation makes the real garbage
// collector delete the owned pods, which the kubelet stops and removes.
func TestGarbageCollectorDeletesOwnedPods(t *testing.T) {
	env := sandboxEnv(t)
	ctx, client := context.Background(), env.Client
	ns := newNamespace(t, client)
	owner, err := client.CoreV1().ConfigMaps(ns).Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		Controller: new(true)}
	stopped := make(chan string, 2)
	env.Kubelet.Register("test/owned", func(ctx context.Context, c *kubelet.Container) int {
		<-ctx.Done()
		stopped <- c.Pod.Name
		return 0
	})
	for _, name := range []string{"owned-0", "owned-1"} {
		pod := testPod(name, "test/owned", corev1.RestartPolicyAlways)
		pod.OwnerReferences = []metav1.OwnerReference{ref}
		createPod(t, client, ns, pod)
		waitPod(t, client, ns, name, 60*time.Second, "Running", running)
	}

	err = client.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name,
		metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"owned-0", "owned-1"} {
		waitPod(t, client, ns, name, 60*time.Second, "deleted by the garbage collector", gone)
	}
	if len(stopped) != 2 {
		t.Errorf("%d programs saw their context cancelled, want 2", len(stopped))
	}
}
