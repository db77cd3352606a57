package api

import (
	"net/netip"
	"testing"

	"github.com/trawlerhq/trawler/netpolicy"
)

// loopbackAllowed lets trawler's own requests reach the tests' servers on
// loopback, as an operator allows an internal receiver or storage.
var loopbackAllowed = netpolicy.AllowList{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// TestWebhookURLsAtInternalAddressesRefused: webhook URLs that lead to
// the metadata service or to this host get 422 naming the event, unless
// the operator allows the range (outbound.allowed_cidrs).
func TestWebhookURLsAtInternalAddressesRefused(t *testing.T) {
	internal := []string{"http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:8080/", "http://[::1]:8080/",
		"http://0x7f.0.0.1:8080/", "http://10.0.0.5/hook"}
	e := newEnv(t)
	for _, u := range internal {
		r := e.do(asOwner, "POST", e.orgPath("/event-webhook-urls"), map[string]any{"crawlStarted": "https://example.com/ok", "crawlFinished": u})
		e.want422(r, `"loc":["body","crawlFinished"]`, internalMsg)
	}
	if org := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200); get(org, "webhookUrls", "crawlStarted") != nil {
		t.Errorf("a refused body was stored in part: %v", org["webhookUrls"])
	}

	allowed := newEnvWith(t, func(c *Config, _ *Deps) { c.AllowedOutbound = loopbackAllowed })
	for _, u := range internal[1:3] {
		allowed.mustJSON(asOwner, "POST", allowed.orgPath("/event-webhook-urls"), map[string]any{"crawlFinished": u}, 200)
	}
	for _, u := range []string{internal[0], internal[4]} {
		r := allowed.do(asOwner, "POST", allowed.orgPath("/event-webhook-urls"), map[string]any{"crawlFinished": u})
		allowed.want422(r, `"loc":["body","crawlFinished"]`, internalMsg)
	}
}
