package app

import (
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/trawlerhq/trawler/api"
	trawlerfake "github.com/trawlerhq/trawler/k8s/generated/clientset/versioned/fake"
	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/webhook"
)

// TestDefaultsFillEveryConfig: the settings table is the only home of the
// defaults, so its defaults alone must give the operator a config it
// accepts and set every field of the API's config that a setting maps to.
func TestDefaultsFillEveryConfig(t *testing.T) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	BindConfigFlags(fs)
	v, err := LoadConfig("", fs)
	if err != nil {
		t.Fatal(err)
	}
	opCfg, err := operatorConfig(v)
	if err != nil {
		t.Fatal(err)
	}
	deps := operator.Deps{Kube: kubefake.NewSimpleClientset(), Trawler: trawlerfake.NewSimpleClientset(),
		Store: (*store.Mongo)(nil)}
	if _, err := operator.New(opCfg, deps); err != nil {
		t.Errorf("operator rejects the default settings: %v", err)
	}

	if _, err := webhook.New(WebhookConfig(v), webhook.Deps{Store: (*store.Mongo)(nil)}); err != nil {
		t.Errorf("webhook notifier rejects the default settings: %v", err)
	}

	apiCfg, err := apiConfig(v, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// Fields whose zero value is a valid default, or that no setting maps.
	zeroOK := map[string]bool{"MaxPagesPerCrawl": true, "RegistrationEnabled": true,
		"AppOrigin": true, "PasswordHashConcurrency": true, "PasswordHashCost": true, "TrustedProxies": true,
		"AllowedInternal": true, "AllowedOutbound": true}
	rv := reflect.ValueOf(apiCfg)
	for i := range rv.NumField() {
		if name := rv.Type().Field(i).Name; !zeroOK[name] && rv.Field(i).IsZero() {
			t.Errorf("api.Config.%s is zero with the default settings", name)
		}
	}
}

// TestSocksProxySettings: the chart's TRAWLER_CRAWLER_SOCKS_PROXY_* reach
// the operator (which renders SOCKS_HOST and SOCKS_PORT, 9050 when no port
// is given).
func TestSocksProxySettings(t *testing.T) {
	t.Setenv("TRAWLER_CRAWLER_SOCKS_PROXY_HOST", "tor.proxy")
	t.Setenv("TRAWLER_CRAWLER_SOCKS_PROXY_PORT", "1080")
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	BindConfigFlags(fs)
	v, err := LoadConfig("", fs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := operatorConfig(v)
	if err != nil {
		t.Fatal(err)
	}
	if c.SocksProxyHost != "tor.proxy" || c.SocksProxyPort != 1080 {
		t.Errorf("socks proxy %q:%d", c.SocksProxyHost, c.SocksProxyPort)
	}
}

// TestAPISettingsChecked: event-stream timings that would break streams
// (no keep-alive, one slower than proxies allow, no poll) and a seed-file
// cleanup schedule that is no cron expression stop the start.
func TestAPISettingsChecked(t *testing.T) {
	for _, bad := range []struct{ name, value string }{
		{"api.events_keepalive", "0s"}, {"api.events_keepalive", "16s"}, {"api.events_poll_interval", "0s"},
		{"seed_files.cleanup_schedule", "every sunday"},
	} {
		name, value := bad.name, bad.value
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		BindConfigFlags(fs)
		if err := fs.Parse([]string{"--" + name + "=" + value}); err != nil {
			t.Fatal(err)
		}
		v, err := LoadConfig("", fs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := apiConfig(v, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want an error naming the setting", name, value, err)
		}
	}
}

// TestAllowedInternalCIDRs: each allow-list (crawls', and that of the
// requests trawler makes itself) reaches the API, and a value that is not
// a list of ranges stops the start rather than allowing nothing (or
// everything) in silence.
func TestAllowedInternalCIDRs(t *testing.T) {
	for key, field := range map[string]func(api.Config) netpolicy.AllowList{
		"crawler.allowed_internal_cidrs": func(c api.Config) netpolicy.AllowList { return c.AllowedInternal },
		"outbound.allowed_cidrs":         func(c api.Config) netpolicy.AllowList { return c.AllowedOutbound },
	} {
		for value, wantErr := range map[string]bool{"10.0.0.0/8, fd00::1": false, "10.0.0.0/8, intranet": true} {
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			BindConfigFlags(fs)
			if err := fs.Parse([]string{"--" + key + "=" + value}); err != nil {
				t.Fatal(err)
			}
			v, err := LoadConfig("", fs)
			if err != nil {
				t.Fatal(err)
			}
			c, err := apiConfig(v, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if wantErr {
				if err == nil || !strings.Contains(err.Error(), key) {
					t.Errorf("%s=%q: err %v, want one naming the setting", key, value, err)
				}
				continue
			}
			if err != nil || len(field(c)) != 2 || field(c)[0].String() != "10.0.0.0/8" {
				t.Errorf("%s=%q: %v, %v", key, value, field(c), err)
			}
		}
	}
}
