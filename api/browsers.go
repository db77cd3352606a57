package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/trawlerhq/trawler/k8s"
)

// The HTTP API of a profile browser pod (browsertrix-crawler 0.11's
// create-login-profile --interactive, port 9223), as the backend calls it
// (upstream-api-more.md §1.3).

// Timeouts of calls to a browser pod: saving a profile tars and uploads
// it, everything else answers at once.
const (
	browserCallTimeout = 10 * time.Second
	browserSaveTimeout = 2 * time.Minute
	// maxBrowserReply bounds what is read of a pod's answer.
	maxBrowserReply = 1 << 20
)

// errWaitingForBrowser is upstream's answer while a browser pod cannot be
// reached yet: HTTP 200 with a detail, which the frontend polls through.
func errWaitingForBrowser(cause error) error {
	return &apiError{status: http.StatusOK, detail: "waiting_for_browser", cause: cause}
}

// browserPods calls profile browser pods by their cluster DNS names.
type browserPods struct {
	client            *http.Client
	namespace, domain string
}

// newBrowserPods dials with dial when set (the sandbox), else the network.
func newBrowserPods(namespace, domain string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *browserPods {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if dial != nil {
		transport.DialContext = dial
	}
	return &browserPods{client: &http.Client{Transport: transport}, namespace: namespace, domain: domain}
}

// call sends in (when not nil) as JSON to the browser's path and decodes
// its JSON answer, whatever its status, into out. A browser that cannot be
// reached or answers something else than JSON is still starting:
// errWaitingForBrowser.
func (b *browserPods) call(ctx context.Context, timeout time.Duration, method, browserID, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding browser request: %w", err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, k8s.BrowserURL(browserID, b.namespace, b.domain)+path, body)
	if err != nil {
		return fmt.Errorf("browser request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return errWaitingForBrowser(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBrowserReply))
	if err != nil {
		return errWaitingForBrowser(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return errWaitingForBrowser(fmt.Errorf("browser %s %s answered %d: %w", method, path, resp.StatusCode, err))
	}
	return nil
}

// vncPassword is GET /vncpass.
func (b *browserPods) vncPassword(ctx context.Context, browserID string) (string, error) {
	var out struct {
		Password string `json:"password"`
	}
	err := b.call(ctx, browserCallTimeout, http.MethodGet, browserID, "/vncpass", nil, &out)
	return out.Password, err
}

// ping is GET /ping: the origins the browser has visited.
func (b *browserPods) ping(ctx context.Context, browserID string) ([]string, error) {
	var out struct {
		Origins []string `json:"origins"`
	}
	err := b.call(ctx, browserCallTimeout, http.MethodGet, browserID, "/ping", nil, &out)
	return out.Origins, err
}

// navigate is POST /navigate; the pod's answer does not matter.
func (b *browserPods) navigate(ctx context.Context, browserID, url string) error {
	var out map[string]any
	return b.call(ctx, browserCallTimeout, http.MethodPost, browserID, "/navigate", map[string]string{"url": url}, &out)
}

// savedProfile is what POST /createProfileJS answers: the uploaded file
// (nil when saving failed) and the origins visited.
type savedProfile struct {
	Resource *struct {
		Path  string `json:"path"`
		Hash  string `json:"hash"`
		Bytes int64  `json:"bytes"`
	} `json:"resource"`
	Origins []string `json:"origins"`
}

// saveProfile is POST /createProfileJS: the pod saves its profile, uploads
// it to storage as filename (under its STORE_PATH) and exits.
func (b *browserPods) saveProfile(ctx context.Context, browserID, filename string) (*savedProfile, error) {
	var out savedProfile
	err := b.call(ctx, browserSaveTimeout, http.MethodPost, browserID, "/createProfileJS", map[string]string{"filename": filename}, &out)
	return &out, err
}
