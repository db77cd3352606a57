package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// fakeBrowsers keeps ProfileJobs in memory, labelled as k8s.Launcher
// labels them.
type fakeBrowsers struct {
	mu    sync.Mutex
	jobs  map[string]*trawlerv1.ProfileJob
	pings map[string]int
}

func newFakeBrowsers() *fakeBrowsers {
	return &fakeBrowsers{jobs: map[string]*trawlerv1.ProfileJob{}, pings: map[string]int{}}
}

func (f *fakeBrowsers) LaunchProfileBrowser(_ context.Context, req k8s.ProfileRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	labels := map[string]string{k8s.LabelBrowser: req.Spec.ID, k8s.LabelOrg: req.Spec.OID, k8s.LabelUser: req.Spec.UserID}
	if req.BaseProfileID != "" {
		labels[k8s.LabelBaseProfile] = req.BaseProfileID
	}
	if req.ProxyID != "" {
		labels[k8s.LabelProxyID] = req.ProxyID
	}
	f.jobs[req.Spec.ID] = &trawlerv1.ProfileJob{ObjectMeta: metav1.ObjectMeta{Name: k8s.ProfileJobName(req.Spec.ID), Labels: labels}, Spec: req.Spec}
	return nil
}

func (f *fakeBrowsers) GetProfileBrowser(_ context.Context, id string) (*trawlerv1.ProfileJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pj, ok := f.jobs[id]
	if !ok {
		return nil, fmt.Errorf("profilejob-%s: %w", id, k8s.ErrProfileJobNotFound)
	}
	return pj.DeepCopy(), nil
}

func (f *fakeBrowsers) PingProfileBrowser(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.jobs[id]; !ok {
		return fmt.Errorf("profilejob-%s: %w", id, k8s.ErrProfileJobNotFound)
	}
	f.pings[id]++
	return nil
}

func (f *fakeBrowsers) DeleteProfileBrowser(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.jobs[id]; !ok {
		return fmt.Errorf("profilejob-%s: %w", id, k8s.ErrProfileJobNotFound)
	}
	delete(f.jobs, id)
	return nil
}

func (f *fakeBrowsers) job(id string) *trawlerv1.ProfileJob {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.jobs[id]
}

func (f *fakeBrowsers) pingCount(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pings[id]
}

var _ BrowserLauncher = (*fakeBrowsers)(nil)

// fakeBrowserPod answers the profile browser pod's HTTP API for every
// browser; until it is up, dialing it fails as a pod that is not running.
type fakeBrowserPod struct {
	srv *httptest.Server

	mu        sync.Mutex
	up        bool
	failSave  bool
	origins   []string
	navigated []string
	hosts     []string // the Host of each request: the pod's DNS name
	saved     []string
}

func newFakeBrowserPod(t testing.TB) *fakeBrowserPod {
	p := &fakeBrowserPod{origins: []string{"https://example.com"}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeBrowserPod) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	p.mu.Lock()
	up := p.up
	p.mu.Unlock()
	if !up {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", IsNotFound: true}}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, p.srv.Listener.Addr().String())
}

func (p *fakeBrowserPod) set(f func(p *fakeBrowserPod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *fakeBrowserPod) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hosts = append(p.hosts, r.Host)
	var body map[string]string
	_ = json.NewDecoder(r.Body).Decode(&body)
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch r.URL.Path {
	case "/vncpass":
		reply(200, map[string]string{"password": "vnc-secret"})
	case "/ping":
		reply(200, map[string]any{"pong": true, "origins": p.origins})
	case "/navigate":
		p.navigated = append(p.navigated, body["url"])
		reply(200, map[string]bool{"success": true})
	case "/createProfileJS":
		if p.failSave {
			reply(500, map[string]string{"error": "browser closed"})
			return
		}
		p.saved = append(p.saved, body["filename"])
		reply(200, map[string]any{"resource": map[string]any{"path": body["filename"], "hash": "abc", "bytes": 1234},
			"origins": p.origins})
	default:
		http.NotFound(w, r)
	}
}

func (p *fakeBrowserPod) hostsSeen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string{}, p.hosts...)
}

// browserHost is the DNS name the API must call browser id by.
func browserHost(id string) string {
	return strings.TrimPrefix(k8s.BrowserURL(id, "crawlers", "cluster.local"), "http://")
}
