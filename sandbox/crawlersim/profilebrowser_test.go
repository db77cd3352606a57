package crawlersim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// memStore is a profileStore in memory.
type memStore struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (m *memStore) put(_ context.Context, key string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[key] = data
	return nil
}

func (m *memStore) get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.files[key]
	if !ok {
		return nil, errors.New("NoSuchKey")
	}
	return data, nil
}

// TestProfileBrowser drives the browser's HTTP API as the backend does:
// password, ping, navigate, save (which ends the process), and a second
// browser started from the saved profile.
func TestProfileBrowser(t *testing.T) {
	store := &memStore{files: map[string][]byte{}}
	// A loopback address of its own, so port 9223 is free whatever else
	// runs on this machine.
	host := fmt.Sprintf("127.%d.%d.%d", 64+rand.IntN(190), rand.IntN(256), 1+rand.IntN(254))
	run := func(args ...string) (chan int, func(method, path string, body any) (int, map[string]any)) {
		t.Helper()
		done := make(chan int, 1)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go func() {
			done <- runProfileBrowser(ctx, Options{Args: append([]string{ProfileCommand, "--interactive", "--filename", "/tmp/profile.tar.gz"}, args...),
				Env: map[string]string{"VNC_PASS": "secret"}, ListenHost: host}, store)
		}()
		call := func(method, path string, body any) (int, map[string]any) {
			t.Helper()
			raw, _ := json.Marshal(body)
			deadline := time.Now().Add(10 * time.Second)
			for {
				req, _ := http.NewRequest(method, fmt.Sprintf("http://%s:%d%s", host, profileAPIPort, path), bytes.NewReader(raw))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					if time.Now().After(deadline) {
						t.Fatal(err)
					}
					time.Sleep(20 * time.Millisecond)
					continue
				}
				defer resp.Body.Close()
				var out map[string]any
				data, _ := io.ReadAll(resp.Body)
				if err := json.Unmarshal(data, &out); err != nil {
					t.Fatalf("%s %s: %s", method, path, data)
				}
				return resp.StatusCode, out
			}
		}
		return done, call
	}

	done, call := run("--url", "https://example.com/login")
	if _, out := call("GET", "/vncpass", nil); out["password"] != "secret" {
		t.Fatalf("vncpass %v", out)
	}
	if code, _ := call("POST", "/navigate", map[string]string{"url": "not a url"}); code != 400 {
		t.Fatalf("bad navigate: %d", code)
	}
	if _, out := call("POST", "/navigate", map[string]string{"url": "https://example.org/account?x=1"}); out["success"] != true {
		t.Fatalf("navigate %v", out)
	}
	want := []string{"https://example.com", "https://example.org"}
	if _, out := call("GET", "/ping", nil); out["pong"] != true || fmt.Sprint(out["origins"]) != fmt.Sprint(want) {
		t.Fatalf("ping %v", out)
	}
	code, out := call("POST", "/createProfileJS", map[string]string{"filename": "profile-1.tar.gz"})
	res, _ := out["resource"].(map[string]any)
	if code != 200 || res["path"] != "profile-1.tar.gz" || len(res["hash"].(string)) != 64 || res["bytes"].(float64) < 10 {
		t.Fatalf("save: %d %v", code, out)
	}
	if got := <-done; got != 0 {
		t.Fatalf("exit %d after saving", got)
	}
	origins, err := profileOrigins(store.files["profile-1.tar.gz"])
	if err != nil || !slices.Equal(origins, want) {
		t.Fatalf("saved origins %v %v", origins, err)
	}

	// From the saved profile: its origins are there from the start.
	done, call = run("--url", "https://example.net/", "--profile", "@profile-1.tar.gz")
	if _, out := call("GET", "/ping", nil); !strings.Contains(fmt.Sprint(out["origins"]), "https://example.org") {
		t.Fatalf("origins of a loaded profile: %v", out)
	}
	store.files = map[string][]byte{} // the upload target disappears: saving still answers
	if code, out := call("POST", "/createProfileJS", map[string]string{"filename": "a/b"}); code != 500 || out["error"] == nil {
		t.Fatalf("bad filename: %d %v", code, out)
	}
	if got := <-done; got != 1 {
		t.Fatalf("exit %d after a failed save", got)
	}

	// A missing base profile ends the process.
	done, _ = run("--url", "https://example.net/", "--profile", "@missing.tar.gz")
	if got := <-done; got != 1 {
		t.Fatalf("exit %d with a missing profile", got)
	}
}
