package kubelet

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
)

// TestServicesAndProbesWithFakeClient: a pod listens on its own address;
// its readiness probe gates the Ready condition and the Service's
// endpoints (for Dial and for /etc/hosts), and a failing liveness probe
// restarts a container.
func TestServicesAndProbesWithFakeClient(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	var ready atomic.Bool
	web := func(ctx context.Context, c *Container) int {
		l, err := net.Listen("tcp", net.JoinHostPort(c.PodIP, "8080"))
		if err != nil {
			t.Errorf("listening on the pod's address: %v", err)
			return 1
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
			if !ready.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, c.Pod.Name) })
		srv := &http.Server{Handler: mux}
		go func() { <-ctx.Done(); srv.Close() }()
		_ = srv.Serve(l)
		return 0
	}
	k, err := Start(ctx, client, Options{
		Dir:      t.TempDir(),
		Backoff:  Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond},
		Programs: map[string]Program{"web": web, "idle": waitForStop},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()

	_, err = client.CoreV1().Services("ns").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := client.CoreV1().Pods("ns")
	_, err = pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "uid-web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "sandbox-node-0", Containers: []corev1.Container{{
			Name: "web", Image: "web", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
				ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	get := func() (*corev1.Pod, error) { return pods.Get(ctx, "web-1", metav1.GetOptions{}) }
	pod := waitFake(t, get, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	ip := pod.Status.PodIP
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsLoopback() || ip == nodeIP {
		t.Fatalf("pod IP %q, want an address of its own in 127.0.0.0/8", ip)
	}
	if podReady(pod) {
		t.Fatal("Ready before its readiness probe succeeded")
	}
	if _, err := k.DNS().Dial(ctx, "tcp", "web.ns.svc.cluster.local:80"); err == nil {
		t.Error("the Service routed to a pod that is not ready")
	}

	ready.Store(true)
	waitFake(t, get, podReady)
	// The kubelet routes by its informer's view, which follows the API.
	hc := &http.Client{Transport: &http.Transport{DialContext: k.DNS().Dial}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := hc.Get("http://web.ns.svc.cluster.local/")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "web-1" {
				t.Errorf("through the Service: %q", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("through the Service: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A pod with a hostname and subdomain is reached by its own name.
	_, err = pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-2", UID: "uid-web-2"},
		Spec: corev1.PodSpec{NodeName: "sandbox-node-0", Hostname: "web-2", Subdomain: "webs",
			Containers: []corev1.Container{{Name: "web", Image: "web"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFake(t, func() (*corev1.Pod, error) { return pods.Get(ctx, "web-2", metav1.GetOptions{}) },
		func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := hc.Get("http://web-2.webs.ns.svc.cluster.local:8080/")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "web-2" {
				t.Errorf("by the pod's name: %q", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("by the pod's name: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := k.DNS().Dial(ctx, "tcp", "web-3.webs.ns.svc.cluster.local:8080"); err == nil {
		t.Error("a pod that does not exist answered")
	}

	hosts := string(k.Hosts("ns", "client", "127.1.1.1"))
	if want := ip + "\tweb.ns.svc.cluster.local web.ns.svc web.ns web\n"; !strings.Contains(hosts, want) {
		t.Errorf("hosts file lacks %q:\n%s", want, hosts)
	}
	if other := string(k.Hosts("other", "client", "127.1.1.1")); !strings.Contains(other, ip+"\tweb.ns.svc.cluster.local web.ns.svc\n") {
		t.Errorf("hosts file of another namespace:\n%s", other)
	}

	// Nothing listens on the liveness port: the container is restarted.
	_, err = pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sick", UID: "uid-sick"},
		Spec: corev1.PodSpec{NodeName: "sandbox-node-0", TerminationGracePeriodSeconds: new(int64(0)),
			Containers: []corev1.Container{{Name: "c", Image: "idle",
				LivenessProbe: &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
					ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9)}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFake(t, func() (*corev1.Pod, error) { return pods.Get(ctx, "sick", metav1.GetOptions{}) }, func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount >= 1
	})
}
