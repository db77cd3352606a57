package webhook_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/webhook"
)

// loopbackAllowed is the allow-list that lets deliveries reach the
// tests' receivers on loopback, as an operator would set it.
func loopbackAllowed(t *testing.T) netpolicy.AllowList {
	t.Helper()
	a, err := netpolicy.ParseAllowList("127.0.0.0/8, ::1/128")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// syncBuffer is a log sink the Notifier's workers may write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDeliveryRefusesInternalAddress: a receiver named by a host name
// that resolves to loopback is refused when the notification is sent
// (the API only sees the name), and the failure says why; an operator's
// allow-list lets the same receiver through on purpose.
func TestDeliveryRefusesInternalAddress(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed netpolicy.AllowList
		sent    bool
	}{{"default", nil, false}, {"allowed", loopbackAllowed(t), true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t)
			h := newHarness(t, r)
			_, port, _ := net.SplitHostPort(r.srv.Listener.Addr().String())
			url := "http://localhost:" + port + "/finished"
			if err := h.st.SetOrgWebhooks(context.Background(), h.org.ID, map[string]string{store.EventCrawlFinished: url},
				"https://app.example.com"); err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			h.deps.Allowed, h.deps.Log = tc.allowed, slog.New(slog.NewTextHandler(&logs, nil))
			n, _, _ := h.start(testConfig(func(c *webhook.Config) { c.MaxAttempts = 1 }))
			h.finished(n, "crawl-1")
			note := h.wait("attempt", attempts(1))[0]
			if note.Success != tc.sent || (len(r.got()) == 1) != tc.sent {
				t.Fatalf("success %t, receiver got %d requests; want sent %t", note.Success, len(r.got()), tc.sent)
			}
			if !tc.sent && !strings.Contains(logs.String(), "internal address") {
				t.Errorf("the failure does not say the address is internal: %s", logs.String())
			}
		})
	}
}
