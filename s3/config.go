package s3

import (
	"fmt"
	"net/url"
	"strings"
)

// Config is one S3-compatible storage, as Browsertrix describes it: an
// entry of the chart's `storages` list (Name set, EndpointURL without the
// bucket, BucketName set) or an org's own storage (EndpointURL with the
// bucket and an optional key prefix, BucketName empty).
type Config struct {
	Name      string `json:"name" mapstructure:"name"`
	AccessKey string `json:"access_key" mapstructure:"access_key"`
	SecretKey string `json:"secret_key" mapstructure:"secret_key"`
	// BucketName, when set, is appended to EndpointURL.
	BucketName string `json:"bucket_name" mapstructure:"bucket_name"`
	// EndpointURL is where trawler and crawler pods reach the storage:
	// scheme://host[:port]/ plus, when BucketName is empty, bucket/[prefix/].
	EndpointURL string `json:"endpoint_url" mapstructure:"endpoint_url"`
	// AccessEndpointURL is the same bucket (and prefix) as a browser
	// reaches it, when that differs: an absolute URL, or a path such as
	// "/data/" served by a proxy in front of the API. Empty: the endpoint.
	AccessEndpointURL string `json:"access_endpoint_url" mapstructure:"access_endpoint_url"`
	Region            string `json:"region" mapstructure:"region"`
	// UseAccessForPresign signs download links for the access endpoint's
	// host directly (true), or for the internal endpoint with the access
	// endpoint then swapped in for its prefix (false: only works behind a
	// proxy that keeps the internal Host header). Nil: true for an
	// absolute access endpoint, false for a relative one.
	UseAccessForPresign *bool `json:"use_access_for_presign" mapstructure:"use_access_for_presign"`
	// CORSAllowedOrigins are the origins (scheme://host[:port], or "*")
	// whose pages may read the bucket's objects when browsers reach it
	// on another origin than the dashboard's; ApplyCORS writes them into
	// the bucket's CORS rules. Empty: the rules are left as they are.
	CORSAllowedOrigins []string `json:"cors_allowed_origins,omitempty" mapstructure:"cors_allowed_origins"`
}

// defaultRegion is signed into requests when a storage names none;
// S3-compatible servers that ignore regions accept it.
const defaultRegion = "us-east-1"

// StoreEndpointURL is the URL of the bucket and prefix, ending in "/": the
// crawler's STORE_ENDPOINT_URL, to which it appends STORE_PATH and the
// file name.
func (c Config) StoreEndpointURL() string {
	u := c.EndpointURL
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	if c.BucketName != "" {
		u += c.BucketName + "/"
	}
	return u
}

// accessEndpoint is the access endpoint, defaulting to the endpoint.
func (c Config) accessEndpoint() string {
	if c.AccessEndpointURL == "" {
		return c.StoreEndpointURL()
	}
	if strings.HasSuffix(c.AccessEndpointURL, "/") {
		return c.AccessEndpointURL
	}
	return c.AccessEndpointURL + "/"
}

// presignViaAccess tells whether links are signed for the access
// endpoint's host (see UseAccessForPresign).
func (c Config) presignViaAccess() bool {
	if c.UseAccessForPresign != nil {
		return *c.UseAccessForPresign
	}
	return isAbsolute(c.accessEndpoint())
}

func isAbsolute(u string) bool { return strings.Contains(u, "://") }

func (c Config) region() string {
	if c.Region == "" {
		return defaultRegion
	}
	return c.Region
}

// CrawlerEnv is the content of the storage's Secret storage-<name> in the
// crawler namespace: the STORE_* variables browsertrix-crawler 0.11 and
// the profile browser read.
func (c Config) CrawlerEnv() map[string]string {
	use := "0"
	if c.presignViaAccess() {
		use = "1"
	}
	return map[string]string{
		"STORE_ENDPOINT_URL":           c.StoreEndpointURL(),
		"STORE_ACCESS_KEY":             c.AccessKey,
		"STORE_SECRET_KEY":             c.SecretKey,
		"STORE_ACCESS_ENDPOINT_URL":    c.accessEndpoint(),
		"STORE_USE_ACCESS_FOR_PRESIGN": use,
		"STORE_REGION":                 c.Region,
	}
}

// endpoint is a parsed bucket URL: scheme://host/bucket/prefix/.
type endpoint struct {
	base   string // scheme://host/bucket/prefix/, as given
	secure bool
	host   string
	bucket string
	prefix string // "" or "dir/.../"
}

// parseEndpoint splits a bucket URL; the first path segment is the bucket
// and the rest, if any, a key prefix.
func parseEndpoint(raw string) (endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return endpoint{}, fmt.Errorf("storage endpoint %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return endpoint{}, fmt.Errorf("storage endpoint %q: want http(s)://host/bucket/", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return endpoint{}, fmt.Errorf("storage endpoint %q: no credentials, query or fragment allowed", raw)
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if bucket == "" {
		return endpoint{}, fmt.Errorf("storage endpoint %q: no bucket in the path", raw)
	}
	if prefix != "" {
		if err := ValidateKey(prefix); err != nil {
			return endpoint{}, fmt.Errorf("storage endpoint %q: key prefix: %w", raw, err)
		}
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
	}
	base := u.Scheme + "://" + u.Host + "/" + bucket + "/" + prefix
	return endpoint{base: base, secure: u.Scheme == "https", host: u.Host, bucket: bucket, prefix: prefix}, nil
}
