package kubelet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// A pod deleted with a grace period sees its context cancelled at once and
// is gone as soon as its program returns, long before the grace period.
func TestDeletedPodGoneWhenProgramReturns(t *testing.T) {
	env := sandboxEnv(t)
	ctx, client := context.Background(), env.Client
	ns := newNamespace(t, client)
	env.Kubelet.Register("test/polite", func(ctx context.Context, c *kubelet.Container) int {
		<-ctx.Done()
		fmt.Fprintln(c.Stdout, "got SIGTERM, bye")
		return 0
	})
	createPod(t, client, ns, testPod("polite", "test/polite", corev1.RestartPolicyAlways))
	waitPod(t, client, ns, "polite", 60*time.Second, "Running", running)

	began := time.Now()
	err := client.CoreV1().Pods(ns).Delete(ctx, "polite", metav1.DeleteOptions{GracePeriodSeconds: new(int64(60))})
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, client, ns, "polite", 20*time.Second, "gone", gone)
	t.Logf("gone %s after the delete", time.Since(began).Round(time.Millisecond))
	if logs := env.Kubelet.Logs(ns, "polite", "main"); !strings.Contains(logs, "bye") {
		t.Errorf("logs = %q, want the program's goodbye", logs)
	}
}

// A program that ignores the cancelled context is killed after the grace
// period: Killed closes, the container reports 137, and the pod goes.
func TestDeletedPodKilledAfterGracePeriod(t *testing.T) {
	env := sandboxEnv(t)
	ctx, client := context.Background(), env.Client
	ns := newNamespace(t, client)
	type stop struct{ term, kill time.Time }
	stops := make(chan stop, 1)
	env.Kubelet.Register("test/stubborn", func(ctx context.Context, c *kubelet.Container) int {
		<-ctx.Done()
		term := time.Now()
		<-c.Killed
		stops <- stop{term, time.Now()}
		return 0
	})
	createPod(t, client, ns, testPod("stubborn", "test/stubborn", corev1.RestartPolicyAlways))
	waitPod(t, client, ns, "stubborn", 60*time.Second, "Running", running)

	const grace = 2 * time.Second
	began := time.Now()
	err := client.CoreV1().Pods(ns).Delete(ctx, "stubborn",
		metav1.DeleteOptions{GracePeriodSeconds: new(int64(grace / time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	var final *corev1.Pod
	waitPod(t, client, ns, "stubborn", grace+20*time.Second, "gone", func(p *corev1.Pod) bool {
		if p != nil {
			final = p
		}
		return p == nil
	})
	s := <-stops
	if d := s.term.Sub(began); d > grace/2 {
		t.Errorf("context cancelled %s after the delete, want at once", d)
	}
	if d := s.kill.Sub(s.term); d < grace-500*time.Millisecond || d > grace+5*time.Second {
		t.Errorf("Killed closed %s after the context was cancelled, want about %s", d, grace)
	}
	if term := final.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 137 {
		t.Errorf("last status before removal: %s; want exit code 137", describe(final))
	}
}
