package app

import (
	"fmt"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/trawlerhq/trawler/k8s"
)

// CrawlerProxiesConfig reads the crawler proxies: crawler.proxies_file, a
// JSON file re-read whenever it changes (the chart mounts its Secret
// there, so a Helm upgrade adds or removes proxies without a restart), or
// crawler.proxies, a fixed list (YAML in a config file, or JSON from the
// environment or a flag), and crawler.default_proxy. Setting both
// sources, an invalid list, or a default proxy not in the list stops the
// start with an error naming the setting.
func CrawlerProxiesConfig(v *viper.Viper) (*k8s.ProxySource, error) {
	def := v.GetString("crawler.default_proxy")
	list, err := fixedProxies(v)
	if err != nil {
		return nil, err
	}
	file := v.GetString("crawler.proxies_file")
	if file == "" {
		if err := list.Validate(def); err != nil {
			return nil, fmt.Errorf("crawler.proxies: %w", err)
		}
		return k8s.NewProxyList(list, def), nil
	}
	if len(list) > 0 {
		return nil, fmt.Errorf("crawler.proxies and crawler.proxies_file are both set: use one")
	}
	src := k8s.NewProxyFile(file, def)
	current, err := src.Proxies()
	if err != nil {
		return nil, fmt.Errorf("crawler.proxies_file: %w", err)
	}
	if err := current.Validate(def); err != nil {
		return nil, fmt.Errorf("crawler.proxies_file %s: %w", file, err)
	}
	return src, nil
}

// fixedProxies reads crawler.proxies.
func fixedProxies(v *viper.Viper) (k8s.CrawlerProxies, error) {
	var out k8s.CrawlerProxies
	switch raw := v.Get("crawler.proxies").(type) {
	case nil:
	case string:
		if strings.TrimSpace(raw) == "" {
			return nil, nil
		}
		list, err := k8s.ParseCrawlerProxies([]byte(raw))
		if err != nil {
			return nil, fmt.Errorf("crawler.proxies: %w", err)
		}
		out = list
	default:
		if err := v.UnmarshalKey("crawler.proxies", &out, func(dc *mapstructure.DecoderConfig) {
			dc.ErrorUnused = true
		}); err != nil {
			return nil, fmt.Errorf("crawler.proxies: %w", err)
		}
	}
	return out, nil
}
