package k8s

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// DefaultChannel is the crawler channel of workflows, crawls and profiles
// that name none. Every channel list has it.
const DefaultChannel = "default"

// Crawler protocols: how the operator talks to a channel's image (its
// command line, CRAWL_ARGS, config mount and Redis keys; see
// docs/compatibility.md).
const (
	// ProtocolV011 is browsertrix-crawler 0.11's, the crawler of 2023.
	ProtocolV011 = "0.11"
	// ProtocolV1 is browsertrix-crawler 1.x's.
	ProtocolV1 = "1.x"
)

// CrawlerChannel is one configured crawler image that workflows may pick
// by id (upstream's crawler_channels). The API answers it as
// {"id", "image", "imagePullPolicy"}; Protocol stays server-side.
type CrawlerChannel struct {
	ID    string `json:"id" mapstructure:"id"`
	Image string `json:"image" mapstructure:"image"`
	// ImagePullPolicy is the channel's own pull policy; empty means the
	// crawler default (crawler.image_pull_policy).
	ImagePullPolicy string `json:"imagePullPolicy,omitempty" mapstructure:"imagePullPolicy"`
	// Protocol is the crawler protocol the image speaks: ProtocolV011 or
	// ProtocolV1 (empty is read as ProtocolV011).
	Protocol string `json:"protocol,omitempty" mapstructure:"protocol"`
}

// CrawlerChannels is the configured channel list, in configuration order.
type CrawlerChannels []CrawlerChannel

// channelIDPattern keeps ids usable as label values (profile jobs carry
// their channel as a label) and in URLs.
var channelIDPattern = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)

// pullPolicies are the image pull policies Kubernetes accepts.
var pullPolicies = []string{"Always", "IfNotPresent", "Never"}

// Validate reports every problem of the list: a missing default channel,
// duplicate or malformed ids, an empty image, an unknown pull policy or
// protocol.
func (cs CrawlerChannels) Validate() error {
	var problems []error
	seen := map[string]bool{}
	for i, c := range cs {
		at := fmt.Sprintf("channel %d (%q)", i, c.ID)
		switch {
		case !channelIDPattern.MatchString(c.ID):
			problems = append(problems, fmt.Errorf("%s: id must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", at))
		case seen[c.ID]:
			problems = append(problems, fmt.Errorf("%s: id given twice", at))
		}
		seen[c.ID] = true
		if strings.TrimSpace(c.Image) == "" {
			problems = append(problems, fmt.Errorf("%s: image is empty", at))
		}
		if c.ImagePullPolicy != "" && !slices.Contains(pullPolicies, c.ImagePullPolicy) {
			problems = append(problems, fmt.Errorf("%s: imagePullPolicy %q is not one of %s", at, c.ImagePullPolicy, strings.Join(pullPolicies, ", ")))
		}
		if c.Protocol != "" && c.Protocol != ProtocolV011 && c.Protocol != ProtocolV1 {
			problems = append(problems, fmt.Errorf("%s: protocol %q is not %q or %q", at, c.Protocol, ProtocolV011, ProtocolV1))
		}
	}
	if !seen[DefaultChannel] {
		problems = append(problems, fmt.Errorf("no channel has id %q: it is the channel of workflows that name none", DefaultChannel))
	}
	return errors.Join(problems...)
}

// Lookup returns the channel with id ("" is DefaultChannel) and whether
// it exists.
func (cs CrawlerChannels) Lookup(id string) (CrawlerChannel, bool) {
	if id == "" {
		id = DefaultChannel
	}
	for _, c := range cs {
		if c.ID == id {
			return c, true
		}
	}
	return CrawlerChannel{}, false
}

// WithDefaults returns the list with each channel's empty protocol set to
// ProtocolV011, the protocol of every image before channels existed.
func (cs CrawlerChannels) WithDefaults() CrawlerChannels {
	out := slices.Clone(cs)
	for i := range out {
		if out[i].Protocol == "" {
			out[i].Protocol = ProtocolV011
		}
	}
	return out
}
