package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandlerServesDashboard(t *testing.T) {
	srv := httptest.NewServer(Handler(Config{MaxScale: 4}))
	defer srv.Close()
	for path, want := range map[string]string{
		"/":            "<title>trawler</title>",
		"/app.js":      `from "./api.js"`,
		"/api.js":      "/api/auth/jwt/login",
		"/crawl.js":    "crawlEvents",
		"/home.js":     "crawlconfigs",
		"/chart.js":    "polyline",
		"/ui.js":       "confirmAction",
		"/style.css":   "border-collapse",
		"/config.json": `{"maxScale":4}`,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body without %q", path, resp.StatusCode, want)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q", path, cc)
		}
		if strings.HasSuffix(path, ".js") && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
			t.Errorf("GET %s: Content-Type %q (modules need a JavaScript type)", path, resp.Header.Get("Content-Type"))
		}
	}
}
