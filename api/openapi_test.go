package api

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// TestOpenAPICoversRoutes checks that the served document and the routes
// echo registered are the same set of (method, path).
func TestOpenAPICoversRoutes(t *testing.T) {
	e := newEnv(t)
	r := e.do("", "GET", "/api/openapi.json", nil)
	if r.Code != 200 {
		t.Fatalf("openapi.json: %d", r.Code)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("version %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	registered := map[string]bool{}
	for _, rt := range e.srv.echo.Routes() {
		switch rt.Method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
			registered[rt.Method+" "+openAPIPath(rt.Path)] = true
		}
	}
	diff := func(a, b map[string]bool) []string {
		var out []string
		for k := range a {
			if !b[k] {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	if d := diff(registered, documented); d != nil {
		t.Errorf("registered but not documented: %v", d)
	}
	if d := diff(documented, registered); d != nil {
		t.Errorf("documented but not registered: %v", d)
	}
	if len(registered) < 50 {
		t.Errorf("only %d routes registered", len(registered))
	}
	// Schemas resolve: every $ref names a defined schema.
	var full map[string]any
	_ = json.Unmarshal(r.Body, &full)
	schemas := get(full, "components", "schemas").(map[string]any)
	for _, ref := range refs(full) {
		if _, ok := schemas[strings.TrimPrefix(ref, "#/components/schemas/")]; !ok {
			t.Errorf("dangling $ref %s", ref)
		}
	}
	if _, ok := get(schemas["crawlConfigOut"], "properties").(map[string]any)["lastCrawlStopping"]; !ok {
		t.Errorf("crawlConfigOut schema lacks fields: %v", schemas["crawlConfigOut"])
	}
}

func refs(v any) []string {
	var out []string
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if s, ok := x.(string); ok && k == "$ref" {
				out = append(out, s)
			}
			out = append(out, refs(x)...)
		}
	case []any:
		for _, x := range t {
			out = append(out, refs(x)...)
		}
	}
	return out
}

// TestTrailingSlash: every route answers with and without the slash, and
// never with a redirect.
func TestTrailingSlash(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/api/orgs", "/api/orgs/", e.orgPath("/crawlconfigs"), e.orgPath("/crawlconfigs/")} {
		if r := e.do(asViewer, "GET", p, nil); r.Code != 200 {
			t.Errorf("%s: %d", p, r.Code)
		}
	}
	r := e.do(asCrawler, "POST", e.orgPath("/crawlconfigs"), workflowBody("no slash", false))
	if r.Code != 200 {
		t.Errorf("POST without slash: %d %s", r.Code, r.Body)
	}
	e.wantDetail(e.do(asViewer, "GET", "/api/nothing-here", nil), 404, "Not Found")
}
