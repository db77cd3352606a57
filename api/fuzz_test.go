package api

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The fuzz targets send arbitrary bodies through the real handlers and
// store: any input may be refused, but never with a 5xx or a panic.
// Seeds live in testdata/fuzz/<target>/.

func FuzzCreateWorkflow(f *testing.F) {
	f.Add([]byte(`{"name":"x","runNow":true,"config":{"seeds":[{"url":"https://example.com/"}]}}`))
	e := newEnv(f)
	path := e.orgPath("/crawlconfigs/")
	f.Fuzz(func(t *testing.T, body []byte) {
		if r, _ := e.request(asCrawler, "POST", path, body); r.Code >= 500 {
			t.Fatalf("%d for %q: %s", r.Code, body, r.Body)
		}
	})
}

func FuzzPatchWorkflow(f *testing.F) {
	f.Add([]byte(`{"name":null,"tags":[]}`))
	e := newEnv(f)
	cid := e.createWorkflow(asCrawler, workflowBody("fuzzed", false))["id"].(string)
	path := e.orgPath("/crawlconfigs/" + cid)
	f.Fuzz(func(t *testing.T, body []byte) {
		if r, _ := e.request(asCrawler, "PATCH", path, body); r.Code >= 500 {
			t.Fatalf("%d for %q: %s", r.Code, body, r.Body)
		}
	})
}

func FuzzLogin(f *testing.F) {
	f.Add("username=admin%40example.com&password=PASSW0RD%21&grant_type=password", "application/x-www-form-urlencoded")
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body, contentType string) {
		req := httptest.NewRequest("POST", "/api/auth/jwt/login", strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q (%s): %s", rec.Code, body, contentType, rec.Body)
		}
	})
}
