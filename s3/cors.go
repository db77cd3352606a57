package s3

import (
	"context"
	"fmt"
	"net/url"

	"github.com/minio/minio-go/v7/pkg/cors"
)

// corsAllowedHeaders are the request headers a page may send with a
// download: ReplayWeb.page reads WACZ files in ranges, and caches
// revalidate with the conditional headers. Anything else (Authorization
// above all) has no business on a presigned link.
var corsAllowedHeaders = []string{
	"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
}

// corsExposedHeaders are the response headers a page may read beyond the
// CORS-safelisted ones: a ranged reader needs the total size
// (Content-Range), the part's length, the object's version (ETag) and
// whether ranges are served at all.
var corsExposedHeaders = []string{"Content-Range", "Content-Length", "ETag", "Accept-Ranges"}

// corsMaxAgeSeconds is how long a browser may reuse a preflight answer;
// an hour saves a round trip per ranged read without leaving a removed
// origin allowed for long.
const corsMaxAgeSeconds = 3600

// ApplyCORS sets the bucket's CORS rules so that pages on the storage's
// CORSAllowedOrigins can read its objects with GET and HEAD: what a
// download link or ReplayWeb.page needs when the bucket is reached on an
// origin other than the dashboard's (an absolute access endpoint). It
// replaces the bucket's whole CORS configuration. With no origins
// configured it does nothing, so rules set by other means stay.
func (b *Bucket) ApplyCORS(ctx context.Context) error {
	origins := b.cfg.CORSAllowedOrigins
	if len(origins) == 0 {
		return nil
	}
	for _, o := range origins {
		if err := checkOrigin(o); err != nil {
			return fmt.Errorf("storage %s: cors_allowed_origins: %w", b.ep.base, err)
		}
	}
	rules := cors.NewConfig([]cors.Rule{{
		ID:            "trawler-downloads",
		AllowedOrigin: origins,
		AllowedMethod: []string{"GET", "HEAD"},
		AllowedHeader: corsAllowedHeaders,
		ExposeHeader:  corsExposedHeaders,
		MaxAgeSeconds: corsMaxAgeSeconds,
	}})
	if err := b.client.SetBucketCors(ctx, b.ep.bucket, rules); err != nil {
		return b.fail("setting CORS rules of bucket", b.ep.bucket, err)
	}
	return nil
}

// checkOrigin accepts what a browser sends as Origin, scheme://host[:port],
// or "*". A path or a trailing slash would never match any request, so
// it is refused rather than silently leaving the pages without access.
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	// Rebuilding the origin from its parts catches a path, query,
	// fragment, user or trailing slash alike.
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Scheme+"://"+u.Host != o {
		return fmt.Errorf("origin %q: want scheme://host[:port] (no path, no trailing slash) or *", o)
	}
	return nil
}
