package k8s

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Names shared by the chart, which renders the proxies' objects in the
// crawler namespace (upstream's btrix-proxies sub-chart), and the
// operator, which mounts them into crawler and profile browser pods.
const (
	// ProxiesSecretName holds "<id>-private-key" and "<id>-known-hosts"
	// of each SSH proxy, and "host-proxies.json" when hosts are matched.
	ProxiesSecretName = "proxies"
	// ForceUserAndGroupSecretName holds the passwd and group files that
	// name the crawler's uid and gid, which ssh needs.
	ForceUserAndGroupSecretName = "force-user-and-group-name"
	// ProxiesMountPath is where crawler pods see ProxiesSecretName.
	ProxiesMountPath = "/tmp/proxies/"
	// HostProxiesFile is the crawler's --proxyServerConfig: proxies chosen
	// by host regex. It exists only when the chart sets matchHosts.
	HostProxiesFile = ProxiesMountPath + "host-proxies.json"
	// ProxyMatchHostsConfigMapName is the ConfigMap whose presence says
	// that the chart configured matchHosts.
	ProxyMatchHostsConfigMapName = "has-proxy-match-hosts"
)

// LabelProxyID holds, on a ProfileJob, the proxy the user chose for the
// browser (upstream's label proxyid).
const LabelProxyID = "proxyid"

// ProxyPrivateKeyFile is the crawler's --sshProxyPrivateKeyFile of proxy id.
func ProxyPrivateKeyFile(id string) string { return ProxiesMountPath + id + "-private-key" }

// ProxyKnownHostsFile is the crawler's --sshProxyKnownHostsFile of proxy id.
func ProxyKnownHostsFile(id string) string { return ProxiesMountPath + id + "-known-hosts" }

// CrawlerProxy is one configured egress proxy crawls may go through, as
// upstream's chart value proxies lists it (and its crawler_proxies.json
// holds it). The SSH keys are read only to know whether the proxy has
// them: the crawler reads them from ProxiesSecretName, and no answer of
// trawler's contains them.
type CrawlerProxy struct {
	ID          string `json:"id" mapstructure:"id"`
	URL         string `json:"url" mapstructure:"url"`
	Label       string `json:"label" mapstructure:"label"`
	Description string `json:"description,omitempty" mapstructure:"description"`
	CountryCode string `json:"country_code,omitempty" mapstructure:"country_code"`
	// Shared proxies are open to every org that allows shared proxies.
	Shared           bool   `json:"shared,omitempty" mapstructure:"shared"`
	SSHPrivateKey    string `json:"ssh_private_key,omitempty" mapstructure:"ssh_private_key"`
	SSHHostPublicKey string `json:"ssh_host_public_key,omitempty" mapstructure:"ssh_host_public_key"`
}

// HasPrivateKey reports an SSH proxy with a private key file.
func (p CrawlerProxy) HasPrivateKey() bool { return p.SSHPrivateKey != "" }

// HasHostPublicKey reports an SSH proxy with a known-hosts file.
func (p CrawlerProxy) HasHostPublicKey() bool { return p.SSHHostPublicKey != "" }

// CrawlerProxies is the configured proxy list, in configuration order.
type CrawlerProxies []CrawlerProxy

// proxyIDPattern is upstream's: lowercase letters, digits and dashes;
// kept to 63 so an id fits a label value (profile jobs carry it).
var proxyIDPattern = regexp.MustCompile(`^[a-z0-9-]{1,63}$`)

// proxySchemes are the URL schemes the crawler can use: an SSH tunnel,
// SOCKS or an HTTP proxy.
var proxySchemes = []string{"ssh", "socks4", "socks4a", "socks5", "socks5h", "http"}

// Validate reports every problem of the list: malformed or duplicate ids,
// URLs the crawler cannot use, missing labels, and a defaultID that is
// not in the list.
func (ps CrawlerProxies) Validate(defaultID string) error {
	var problems []error
	seen := map[string]bool{}
	for i, p := range ps {
		at := fmt.Sprintf("proxy %d (%q)", i, p.ID)
		switch {
		case !proxyIDPattern.MatchString(p.ID):
			problems = append(problems, fmt.Errorf("%s: id must be 1-63 lowercase letters, digits or '-'", at))
		case seen[p.ID]:
			problems = append(problems, fmt.Errorf("%s: id given twice", at))
		}
		seen[p.ID] = true
		if u, err := url.Parse(p.URL); err != nil || u.Host == "" || !slices.Contains(proxySchemes, u.Scheme) {
			problems = append(problems, fmt.Errorf("%s: url must be a %s URL with a host", at, strings.Join(proxySchemes, ", ")))
		}
		if strings.TrimSpace(p.Label) == "" {
			problems = append(problems, fmt.Errorf("%s: label is empty", at))
		}
	}
	if defaultID != "" && !seen[defaultID] {
		problems = append(problems, fmt.Errorf("the default proxy %q is not in the list", defaultID))
	}
	return errors.Join(problems...)
}

// Lookup returns the proxy with id and whether it is configured.
func (ps CrawlerProxies) Lookup(id string) (CrawlerProxy, bool) {
	for _, p := range ps {
		if p.ID == id {
			return p, true
		}
	}
	return CrawlerProxy{}, false
}

// ParseCrawlerProxies reads a JSON list of proxies; unknown keys are
// errors, so a misspelt key does not silently drop a key file.
func ParseCrawlerProxies(data []byte) (CrawlerProxies, error) {
	var out CrawlerProxies
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("not a JSON list of proxies: %w", err)
	}
	return out, nil
}

// ProxySource is the configured proxy list as it is now. A Helm upgrade
// rewrites the mounted file in place, and the next read sees it, so
// adding or removing a proxy needs no restart (as upstream). A nil
// source has no proxies.
type ProxySource struct {
	path      string
	fixed     CrawlerProxies
	defaultID string

	mu    sync.Mutex
	stamp fileStamp
	list  CrawlerProxies
}

// fileStamp tells whether a file changed since it was read.
type fileStamp struct {
	mod  time.Time
	size int64
}

// NewProxyFile reads the proxies from the JSON file at path whenever it
// changes; a missing file means no proxies. defaultID is the proxy of
// crawls that name none ("" for none).
func NewProxyFile(path, defaultID string) *ProxySource {
	return &ProxySource{path: path, defaultID: defaultID}
}

// NewProxyList is a fixed list of proxies; defaultID as NewProxyFile's.
func NewProxyList(list CrawlerProxies, defaultID string) *ProxySource {
	return &ProxySource{fixed: list, defaultID: defaultID}
}

// Proxies returns the current list. A file that has become unreadable or
// invalid is an error, and the list read last is returned with it, so a
// bad edit does not take proxies away from running crawls.
func (s *ProxySource) Proxies() (CrawlerProxies, error) {
	if s == nil {
		return nil, nil
	}
	if s.path == "" {
		return s.fixed, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fi, err := os.Stat(s.path)
	if errors.Is(err, os.ErrNotExist) {
		s.stamp, s.list = fileStamp{}, nil
		return nil, nil
	}
	if err != nil {
		return s.list, fmt.Errorf("crawler proxies: %w", err)
	}
	stamp := fileStamp{mod: fi.ModTime(), size: fi.Size()}
	if stamp == s.stamp {
		return s.list, nil
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return s.list, fmt.Errorf("crawler proxies: %w", err)
	}
	list, err := ParseCrawlerProxies(data)
	if err == nil {
		err = list.Validate("")
	}
	if err != nil {
		return s.list, fmt.Errorf("crawler proxies %s: %w", s.path, err)
	}
	s.stamp, s.list = stamp, list
	return list, nil
}

// DefaultID is the proxy of crawls that name none, "" for none.
func (s *ProxySource) DefaultID() string {
	if s == nil {
		return ""
	}
	return s.defaultID
}
