package crawls

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"

	"github.com/trawlerhq/trawler/app"
	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/webhook"
)

// unreachableKubeconfig lets `trawler serve --operator=false` start
// without a cluster: its Kubernetes clients are built but not used.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`

// TestWebhookDeliverySurvivesKill records a crawlFinished event, starts
// trawler, kills it (SIGKILL) while it is posting the notification, and
// starts it again: the new process delivers the notification, and only
// the completed attempt is counted.
func TestWebhookDeliverySurvivesKill(t *testing.T) {
	bin := e2etest.Binary(t)
	dir := t.TempDir()
	ctx := context.Background()
	mongo, err := sandbox.StartMongo(ctx, dir)
	if errors.Is(err, sandbox.ErrBinaryMissing) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mongo.Stop(5 * time.Second) }()
	st, err := store.Open(ctx, mongo.URI(), "webhook_restart")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if err := st.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}

	// The receiver holds its first request until the test lets go, so the
	// first trawler dies in the middle of that delivery.
	inFlight, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	requests := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		first := requests == 1
		mu.Unlock()
		if first {
			close(inFlight)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer recv.Close()
	defer close(release)

	org := &store.Org{ID: uuid.New(), Name: "restart"}
	if err := st.CreateOrg(ctx, org); err != nil {
		t.Fatal(err)
	}
	if err := st.SetOrgWebhooks(ctx, org.ID, map[string]string{store.EventCrawlFinished: recv.URL}, "https://app.example.com"); err != nil {
		t.Fatal(err)
	}
	// The event, stored as the operator of any replica stores it.
	v, err := app.LoadConfig("", pflag.NewFlagSet("test", pflag.ContinueOnError))
	if err != nil {
		t.Fatal(err)
	}
	events, err := webhook.New(app.WebhookConfig(v), webhook.Deps{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := events.CrawlFinished(ctx, &store.Crawl{ID: "crawl-restart", OID: org.ID, State: store.StateComplete}); err != nil {
		t.Fatal(err)
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--operator=false", "--api.listen=127.0.0.1:0", "--mongo.uri="+mongo.URI(),
			"--mongo.database=webhook_restart", "--kubernetes.kubeconfig="+kubeconfig,
			"--webhooks.timeout=2s", "--webhooks.poll_interval=500ms",
			"--outbound.allowed_cidrs=127.0.0.0/8,::1/128") // the receiver is on loopback
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}

	first := start()
	select {
	case <-inFlight:
	case <-time.After(60 * time.Second):
		t.Fatal("the first trawler never posted the notification")
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	second := start()
	notes, _, err := st.ListNotifications(ctx, org.ID, store.Paging{})
	if err != nil || len(notes) != 1 {
		t.Fatalf("notifications %v, %v", notes, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	var note *store.Notification
	for {
		if note, err = st.GetNotification(ctx, org.ID, notes[0].ID); err != nil {
			t.Fatal(err)
		}
		if note.Success {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered after the restart: %+v", note)
		}
		time.Sleep(100 * time.Millisecond) // polling the store, with a deadline
	}
	if note.Attempts != 1 {
		t.Errorf("attempts %d, want 1 (the killed attempt never finished)", note.Attempts)
	}
	mu.Lock()
	if requests != 2 {
		t.Errorf("receiver got %d requests, want 2 (cut off, then delivered)", requests)
	}
	mu.Unlock()
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
