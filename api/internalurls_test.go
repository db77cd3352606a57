package api

import (
	"testing"

	"github.com/trawlerhq/trawler/netpolicy"
)

// The repros: URLs a crawler or profile browser would fetch from
// inside the cluster. Each gets 422 naming the field, wherever a seed or
// a browser URL is given.
var internalURLs = []string{
	"http://169.254.169.254/", "http://127.0.0.1:8080/", "http://[::1]/", "http://10.0.0.5/",
	"http://localhost/", "http://127.1/", "http://2130706433/", "http://[::ffff:169.254.169.254]/",
	"http://100.64.0.1/", "http://[fd00::1]/", "http://0.0.0.0:6379/", "http://224.0.0.1/",
}

const internalMsg = "is an internal address"

func TestSeedsAtInternalAddressesRefused(t *testing.T) {
	e := newEnv(t)
	before := e.workflowCount()
	cid := e.createWorkflow(asCrawler, workflowBody("public", false))["id"].(string)
	for _, u := range internalURLs {
		t.Run(u, func(t *testing.T) {
			body := workflowBody("internal", true)
			body["config"] = map[string]any{"seeds": []any{
				map[string]any{"url": "https://example.com/"}, map[string]any{"url": u}}}
			e.want422(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body),
				`"loc":["body","config","seeds",1,"url"]`, internalMsg)
			e.want422(e.do(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+cid), map[string]any{"config": body["config"]}),
				`"loc":["body","config","seeds",1,"url"]`, internalMsg)
		})
	}
	sitemap := map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/", "sitemap": "http://169.254.169.254/s.xml"}}}
	e.want422(e.do(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+cid), map[string]any{"config": sitemap}),
		`"loc":["body","config","seeds",0,"sitemap"]`, internalMsg)
	// One 422 lists every problem of a body, the address among them.
	both := map[string]any{"name": "two", "scale": 0, "config": map[string]any{"seeds": []any{map[string]any{"url": "http://10.0.0.5/"}}}}
	r := e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), both)
	e.want422(r, `"loc":["body","scale"]`, internalMsg)
	e.want422(r, `"loc":["body","config","seeds",0,"url"]`, "")
	if n := e.workflowCount(); n != before+1 {
		t.Errorf("%d workflows, want only the public one", n-before)
	}
	if calls := e.launcher.callList(); len(calls) != 0 {
		t.Errorf("crawls launched: %v", calls)
	}
	// A public address and a host name pass: names are resolved by the
	// crawler, where the chart's egress policy judges them.
	for _, u := range []string{"http://93.184.215.14/", "http://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/", "https://intranet.example.com/"} {
		body := workflowBody("ok", false)
		body["config"] = map[string]any{"seeds": []any{map[string]any{"url": u}}}
		e.createWorkflow(asCrawler, body)
	}
}

// browserMsg is the 422 message a browser URL gets: hosts without a dot
// fail pydantic's HttpUrl check (a top-level domain) before the address
// is judged.
func browserMsg(u string) string {
	if u == "http://localhost/" || u == "http://2130706433/" {
		return "top-level domain"
	}
	return internalMsg
}

func TestProfileBrowserAtInternalAddressRefused(t *testing.T) {
	e := newEnv(t)
	for _, u := range internalURLs {
		e.want422(e.do(asCrawler, "POST", e.orgPath("/profiles/browser"), map[string]any{"url": u}), `"loc":["body","url"]`, browserMsg(u))
	}
	id := e.launchBrowser(asCrawler, map[string]any{"url": "https://example.com/"})
	e.pod.set(func(p *fakeBrowserPod) { p.up = true })
	for _, u := range internalURLs {
		e.want422(e.do(asCrawler, "POST", e.orgPath("/profiles/browser/"+id+"/navigate"), map[string]any{"url": u}),
			`"loc":["body","url"]`, browserMsg(u))
	}
	e.pod.set(func(p *fakeBrowserPod) {
		if len(p.navigated) != 0 {
			t.Errorf("the browser navigated to %v", p.navigated)
		}
	})
	e.browsers.mu.Lock()
	defer e.browsers.mu.Unlock()
	if n := len(e.browsers.jobs); n != 1 {
		t.Errorf("%d profile browsers launched, want the public one only", n)
	}
}

// The operator's allow-list (crawler.allowed_internal_cidrs) lets chosen
// internal hosts through on purpose, and only those.
func TestAllowedInternalCIDRs(t *testing.T) {
	allowed, err := netpolicy.ParseAllowList("10.0.0.0/24, ::1, 127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(c *Config, _ *Deps) { c.AllowedInternal = allowed })
	for _, u := range []string{"http://10.0.0.5/", "http://[::1]/", "http://localhost:8080/"} {
		body := workflowBody("intranet", false)
		body["config"] = map[string]any{"seeds": []any{map[string]any{"url": u}}}
		e.createWorkflow(asCrawler, body)
	}
	e.launchBrowser(asCrawler, map[string]any{"url": "http://10.0.0.7/login"})
	body := workflowBody("metadata", false)
	body["config"] = map[string]any{"seeds": []any{map[string]any{"url": "http://10.0.1.5/"}}}
	e.want422(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body), `"loc":["body","config","seeds",0,"url"]`, internalMsg)
	body["config"] = map[string]any{"seeds": []any{map[string]any{"url": "http://169.254.169.254/"}}}
	e.want422(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body), `"loc":["body","config","seeds",0,"url"]`, internalMsg)
}
