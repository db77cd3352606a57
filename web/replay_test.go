package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func fetch(t *testing.T, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Redirects are checked, not followed.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestReplayEntryPoints(t *testing.T) {
	for _, tc := range []struct{ configured, base string }{
		{"", DefaultReplayBaseURL},
		{"https://rwp.example.org/2.5.3/", "https://rwp.example.org/2.5.3/"},
		{"http://127.0.0.1:9999/rwp", "http://127.0.0.1:9999/rwp/"},
	} {
		srv := httptest.NewServer(Handler(Config{MaxScale: 2, ReplayBaseURL: tc.configured}))

		// The service worker, as ReplayWeb.page's embed registers it.
		resp, body := fetch(t, "GET", srv.URL+"/replay/sw.js?serveIndex=1")
		if want := `importScripts("` + tc.base + `sw.js");` + "\n"; resp.StatusCode != 200 || body != want {
			t.Errorf("base %q: sw.js: %d %q, want %q", tc.configured, resp.StatusCode, body, want)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
			t.Errorf("sw.js: Content-Type %q", ct)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("sw.js: Cache-Control %q", cc)
		}

		resp, _ = fetch(t, "GET", srv.URL+"/replay/ui.js")
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != tc.base+"ui.js" {
			t.Errorf("base %q: ui.js: %d to %q", tc.configured, resp.StatusCode, loc)
		}

		// The frame's page, before the worker serves it.
		for _, path := range []string{"/replay/", "/replay/index.html", "/replay/index.html?source=x&embed=replayonly"} {
			resp, body := fetch(t, "GET", srv.URL+path)
			if resp.StatusCode != 200 || !strings.Contains(body, `<script src="./ui.js"></script>`) ||
				!strings.Contains(body, "<replay-app-main></replay-app-main>") {
				t.Errorf("%s: %d %q", path, resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("%s: Content-Type %q", path, ct)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
				t.Errorf("%s: Cache-Control %q", path, cc)
			}
		}
		resp, body = fetch(t, "HEAD", srv.URL+"/replay/sw.js")
		if resp.StatusCode != 200 || body != "" {
			t.Errorf("HEAD sw.js: %d %q", resp.StatusCode, body)
		}

		// Nothing else is under /replay/, and the base is not in config.json.
		if resp, _ := fetch(t, "GET", srv.URL+"/replay"); resp.Header.Get("Location") != "/replay/" {
			t.Errorf("/replay: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		for _, path := range []string{"/replay/other.js", "/replay/sub/sw.js", "/replay/index.htm"} {
			if resp, _ := fetch(t, "GET", srv.URL+path); resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s: %d, want 404", path, resp.StatusCode)
			}
		}
		if resp, _ := fetch(t, "POST", srv.URL+"/replay/sw.js"); resp.StatusCode == 200 {
			t.Errorf("POST sw.js: %d", resp.StatusCode)
		}
		if _, body := fetch(t, "GET", srv.URL+"/config.json"); body != `{"maxScale":2}` {
			t.Errorf("config.json: %s", body)
		}
		srv.Close()
	}
}

func TestReplayBaseIsEscaped(t *testing.T) {
	srv := httptest.NewServer(Handler(Config{ReplayBaseURL: `https://x.example/"); alert(1); ("</script>`}))
	defer srv.Close()
	_, body := fetch(t, "GET", srv.URL+"/replay/sw.js")
	if want := `importScripts("https://x.example/\"); alert(1); (\"\u003c/script\u003e/sw.js");` + "\n"; body != want {
		t.Errorf("sw.js = %s, want %s", body, want)
	}
}
