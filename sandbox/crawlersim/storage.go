package crawlersim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// storage is the crawler's upload target. It exists only when
// STORE_ENDPOINT_URL is set: without it there is no upload and no
// crawls-done message.
type storage struct {
	endpoint  string  // STORE_ENDPOINT_URL: scheme://host/bucket/[prefix/]
	prefix    string  // STORE_ENDPOINT_URL + STORE_PATH, the start of every filename
	template  string  // STORE_FILENAME, default @ts-@id.wacz
	crawlID   string  // CRAWL_ID, else the hostname (the webhook ignores --crawlId)
	user      *string // STORE_USER; nil when unset, so the key is left out
	webhook   string  // WEBHOOK_URL; empty means upload without notifying
	accessKey string  // STORE_ACCESS_KEY
	secretKey string  // STORE_SECRET_KEY
	region    string  // STORE_REGION
	storePath string  // STORE_PATH
}

func newStorage(env map[string]string, hostname string) *storage {
	endpoint, ok := env["STORE_ENDPOINT_URL"]
	if !ok || endpoint == "" {
		return nil
	}
	s := &storage{
		endpoint:  endpoint,
		prefix:    endpoint + env["STORE_PATH"],
		template:  env["STORE_FILENAME"],
		crawlID:   env["CRAWL_ID"],
		webhook:   env["WEBHOOK_URL"],
		accessKey: env["STORE_ACCESS_KEY"],
		secretKey: env["STORE_SECRET_KEY"],
		region:    env["STORE_REGION"],
		storePath: env["STORE_PATH"],
	}
	if s.template == "" {
		s.template = "@ts-@id.wacz"
	}
	if s.crawlID == "" {
		s.crawlID = hostname
	}
	if u, ok := env["STORE_USER"]; ok {
		s.user = &u
	}
	return s
}

// message builds the crawls-done notification for an uploaded WACZ.
func (s *storage) message(target, hash string, size int64, completed bool) doneMessage {
	return doneMessage{ID: s.crawlID, User: s.user, Filename: s.prefix + target, Hash: hash, Size: size, Completed: completed}
}

// dialer reaches the storage server (the sandbox resolves cluster names).
type dialer = func(ctx context.Context, network, addr string) (net.Conn, error)

// client connects to STORE_ENDPOINT_URL with the STORE_* keys (SigV4,
// path-style, as the crawler's S3 client signs), dialing through dial. It
// returns the bucket and the key prefix of STORE_PATH; call done after.
func (s *storage) client(dial dialer) (c *minio.Client, bucket, prefix string, done func(), err error) {
	u, err := url.Parse(s.endpoint)
	if err != nil || u.Host == "" {
		return nil, "", "", nil, fmt.Errorf("STORE_ENDPOINT_URL %q is not a URL", s.endpoint)
	}
	bucket, keyPrefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	region := s.region
	if region == "" {
		region = "us-east-1"
	}
	transport := &http.Transport{DialContext: dial, ResponseHeaderTimeout: 30 * time.Second}
	c, err = minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(s.accessKey, s.secretKey, ""),
		Secure: u.Scheme == "https", Region: region, BucketLookup: minio.BucketLookupPath,
		Transport: transport, MaxRetries: 2,
	})
	if err != nil {
		return nil, "", "", nil, fmt.Errorf("storage client: %w", err)
	}
	return c, bucket, keyPrefix + s.storePath, transport.CloseIdleConnections, nil
}

// upload PUTs the local file at path to STORE_ENDPOINT_URL + STORE_PATH +
// target.
func (s *storage) upload(ctx context.Context, path, target string, dial dialer) error {
	c, bucket, prefix, done, err := s.client(dial)
	if err != nil {
		return err
	}
	defer done()
	if _, err := c.FPutObject(ctx, bucket, prefix+target, path, minio.PutObjectOptions{ContentType: "application/wacz"}); err != nil {
		return fmt.Errorf("uploading %s to %s: %w", path, s.prefix+target, err)
	}
	return nil
}

// put stores data at STORE_ENDPOINT_URL + STORE_PATH + target.
func (s *storage) put(ctx context.Context, target string, data []byte, dial dialer) error {
	c, bucket, prefix, done, err := s.client(dial)
	if err != nil {
		return err
	}
	defer done()
	if _, err := c.PutObject(ctx, bucket, prefix+target, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/gzip"}); err != nil {
		return fmt.Errorf("uploading %s: %w", s.prefix+target, err)
	}
	return nil
}

// get reads STORE_ENDPOINT_URL + STORE_PATH + target, as the crawler
// downloads an "@" profile; a missing object is an error.
func (s *storage) get(ctx context.Context, target string, dial dialer) ([]byte, error) {
	c, bucket, prefix, done, err := s.client(dial)
	if err != nil {
		return nil, err
	}
	defer done()
	o, err := c.GetObject(ctx, bucket, prefix+target, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", s.prefix+target, err)
	}
	defer o.Close()
	data, err := io.ReadAll(o)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", s.prefix+target, err)
	}
	return data, nil
}

// podStorage is the storage of a pod's process, as a profileStore.
type podStorage struct {
	s    *storage // nil without STORE_ENDPOINT_URL
	dial dialer
}

var errNoStorage = errors.New("STORE_ENDPOINT_URL is not set")

func (p podStorage) put(ctx context.Context, key string, data []byte) error {
	if p.s == nil {
		return errNoStorage
	}
	return p.s.put(ctx, key, data, p.dial)
}

func (p podStorage) get(ctx context.Context, key string) ([]byte, error) {
	if p.s == nil {
		return nil, errNoStorage
	}
	return p.s.get(ctx, key, p.dial)
}

// tsDigits is the crawler's @ts: the ISO timestamp with ":", "T", "Z", "."
// and "-" removed, 17 digits.
func tsDigits(t time.Time) string {
	return strings.NewReplacer(":", "", "T", "", "Z", "", ".", "", "-", "").Replace(isoTime(t))
}

// interpolateFilename replaces the first occurrence of each token, in the
// crawler's order: @ts, @hostname, @hostsuffix (last 14 characters of the
// hostname), @id.
func interpolateFilename(tmpl string, now time.Time, hostname, crawlID string) string {
	suffix := hostname
	if len(suffix) > 14 {
		suffix = suffix[len(suffix)-14:]
	}
	tmpl = strings.Replace(tmpl, "@ts", tsDigits(now), 1)
	tmpl = strings.Replace(tmpl, "@hostname", hostname, 1)
	tmpl = strings.Replace(tmpl, "@hostsuffix", suffix, 1)
	return strings.Replace(tmpl, "@id", crawlID, 1)
}

// splitRedisWebhook splits redis://host:port/db/key into the Redis URL of
// the database and the list key. Splitting on "/" must give exactly five
// parts, otherwise the crawler gives up (exit 17).
func splitRedisWebhook(u string) (dbURL, key string, err error) {
	parts := strings.Split(u, "/")
	if len(parts) != 5 {
		return "", "", fmt.Errorf("redis webhook url must be in format: redis://<host>:<port>/<db>/<key>, got %q", u)
	}
	return strings.Join(parts[:4], "/"), parts[4], nil
}
