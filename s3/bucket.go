package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/trawlerhq/trawler/netpolicy"
)

// Options tune how a Bucket talks to its server.
type Options struct {
	// Transport carries the requests; nil uses a default transport. The
	// sandbox passes one that resolves cluster DNS names.
	Transport http.RoundTripper
	// MaxRetries bounds the attempts of each request (default 3), so an
	// outage fails a call within seconds instead of minutes.
	MaxRetries int
	// CustomAllowed are the internal ranges orgs' own storages may be at
	// (outbound.allowed_cidrs). Their requests ignore Transport and dial
	// through netpolicy's guard, which refuses every other internal
	// address at connect time.
	CustomAllowed netpolicy.AllowList
}

// defaultMaxRetries keeps a call against a dead server to about 1.5 s of
// backoff.
const defaultMaxRetries = 3

// streamPartSize is the multipart part size of uploads of unknown length:
// memory per upload, and 10000 parts make 160 GB the largest object.
const streamPartSize = 16 << 20

// Bucket is one storage's bucket and key prefix. Its methods take keys
// relative to the prefix, which is what crawl files record; every key is
// checked with ValidateKey first.
type Bucket struct {
	name   string
	cfg    Config
	ep     endpoint
	client *minio.Client
	// presigner signs download links; it is client unless links are
	// signed for the access endpoint's host.
	presigner *minio.Client
	// signed is the bucket URL the presigner's links start with, and
	// access what replaces it in the links handed out.
	signed endpoint
	access string
}

// ObjectInfo describes a stored object; Key is relative to the bucket's
// prefix.
type ObjectInfo struct {
	Key          string
	Size         int64
	ETag         string
	LastModified time.Time
}

// New connects a Bucket for cfg. Nothing is sent to the server: signing
// uses the configured region, never a bucket-location lookup.
func New(cfg Config, opts Options) (*Bucket, error) {
	ep, err := parseEndpoint(cfg.StoreEndpointURL())
	if err != nil {
		return nil, err
	}
	b := &Bucket{name: cfg.Name, cfg: cfg, ep: ep, signed: ep, access: cfg.accessEndpoint()}
	if b.client, err = newClient(ep, cfg, opts); err != nil {
		return nil, err
	}
	b.presigner = b.client
	if cfg.presignViaAccess() && b.access != ep.base {
		if b.signed, err = parseEndpoint(b.access); err != nil {
			return nil, fmt.Errorf("access endpoint: %w", err)
		}
		if b.presigner, err = newClient(b.signed, cfg, opts); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func newClient(ep endpoint, cfg Config, opts Options) (*minio.Client, error) {
	retries := opts.MaxRetries
	if retries <= 0 {
		retries = defaultMaxRetries
	}
	c, err := minio.New(ep.host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       ep.secure,
		Transport:    opts.Transport,
		Region:       cfg.region(),
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   retries,
	})
	if err != nil {
		return nil, fmt.Errorf("storage client for %s: %w", ep.base, err)
	}
	return c, nil
}

// Name is the storage's configured name ("" for an org's own storage).
func (b *Bucket) Name() string { return b.name }

// Config is the configuration the bucket was made from.
func (b *Bucket) Config() Config { return b.cfg }

// URL is the bucket and prefix URL, the crawler's STORE_ENDPOINT_URL.
func (b *Bucket) URL() string { return b.ep.base }

func (b *Bucket) object(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return b.ep.prefix + key, nil
}

// EnsureBucket creates the bucket unless it exists.
func (b *Bucket) EnsureBucket(ctx context.Context) error {
	ok, err := b.client.BucketExists(ctx, b.ep.bucket)
	if err != nil {
		return b.fail("checking bucket", b.ep.bucket, err)
	}
	if ok {
		return nil
	}
	if err := b.client.MakeBucket(ctx, b.ep.bucket, minio.MakeBucketOptions{Region: b.cfg.region()}); err != nil {
		if resp := minio.ToErrorResponse(err); resp.Code == "BucketAlreadyOwnedByYou" || resp.Code == "BucketAlreadyExists" {
			return nil
		}
		return b.fail("creating bucket", b.ep.bucket, err)
	}
	return nil
}

// Put stores size bytes from r under key. A size of -1 streams an
// upload of unknown length in parts.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (ObjectInfo, error) {
	obj, err := b.object(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	opts := minio.PutObjectOptions{ContentType: contentType}
	if size < 0 {
		opts.PartSize = streamPartSize
	}
	info, err := b.client.PutObject(ctx, b.ep.bucket, obj, r, size, opts)
	if err != nil {
		return ObjectInfo{}, b.fail("storing", key, err)
	}
	return ObjectInfo{Key: key, Size: info.Size, ETag: info.ETag, LastModified: info.LastModified}, nil
}

// PresignGet returns a link that downloads key without credentials until
// ttl has passed (at least a second, at most 7 days), for the access
// endpoint: absolute, or relative when the access endpoint is a path.
func (b *Bucket) PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if _, err := b.object(key); err != nil {
		return "", err
	}
	u, err := b.presigner.PresignedGetObject(ctx, b.signed.bucket, b.signed.prefix+key, ttl, nil)
	if err != nil {
		return "", b.fail("signing a link to", key, err)
	}
	link := u.String()
	signedBase := strings.TrimSuffix(b.signed.base, b.signed.prefix) + s3utils.EncodePath(b.signed.prefix)
	rest, ok := strings.CutPrefix(link, signedBase)
	if !ok {
		return "", fmt.Errorf("signing a link to %s: link %s does not start with %s", key, link, signedBase)
	}
	if b.presigner == b.client && b.access != b.ep.base {
		// Signed for the internal endpoint: hand out the access endpoint,
		// which a proxy maps back keeping the signed Host.
		return b.access + rest, nil
	}
	return signedBase + rest, nil
}

// Stat describes the object at key; ErrNotFound if there is none.
func (b *Bucket) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	obj, err := b.object(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := b.client.StatObject(ctx, b.ep.bucket, obj, minio.StatObjectOptions{})
	if err != nil {
		return ObjectInfo{}, b.fail("reading", key, err)
	}
	return ObjectInfo{Key: key, Size: info.Size, ETag: info.ETag, LastModified: info.LastModified}, nil
}

// Object is an open stored object: read it in sequence or at any offset
// (each ReadAt is a ranged GET, so wrap it in a buffer for small reads).
type Object struct {
	*minio.Object
	Info ObjectInfo
}

// Open opens key for reading; ErrNotFound if there is no such object.
func (b *Bucket) Open(ctx context.Context, key string) (*Object, error) {
	obj, err := b.object(key)
	if err != nil {
		return nil, err
	}
	o, err := b.client.GetObject(ctx, b.ep.bucket, obj, minio.GetObjectOptions{})
	if err != nil {
		return nil, b.fail("opening", key, err)
	}
	st, err := o.Stat()
	if err != nil {
		o.Close()
		return nil, b.fail("opening", key, err)
	}
	return &Object{Object: o, Info: ObjectInfo{Key: key, Size: st.Size, ETag: st.ETag, LastModified: st.LastModified}}, nil
}

// Delete removes the objects at keys; keys that are already gone are not
// an error. All keys are checked before anything is removed.
func (b *Bucket) Delete(ctx context.Context, keys ...string) error {
	objs := make([]string, len(keys))
	for i, k := range keys {
		obj, err := b.object(k)
		if err != nil {
			return err
		}
		objs[i] = obj
	}
	if len(objs) == 0 {
		return nil
	}
	ch := make(chan minio.ObjectInfo, len(objs))
	for _, o := range objs {
		ch <- minio.ObjectInfo{Key: o}
	}
	close(ch)
	var errs []error
	for res := range b.client.RemoveObjectsWithResult(ctx, b.ep.bucket, ch, minio.RemoveObjectsOptions{}) {
		if res.Err != nil && minio.ToErrorResponse(res.Err).Code != "NoSuchKey" {
			errs = append(errs, b.fail("deleting", strings.TrimPrefix(res.ObjectName, b.ep.prefix), res.Err))
		}
	}
	return errors.Join(errs...)
}

// List yields the objects whose keys start with prefix, in key order.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		opts := minio.ListObjectsOptions{Prefix: b.ep.prefix + prefix, Recursive: true}
		for o := range b.client.ListObjects(ctx, b.ep.bucket, opts) {
			if o.Err != nil {
				yield(ObjectInfo{}, b.fail("listing", prefix, o.Err))
				return
			}
			info := ObjectInfo{Key: strings.TrimPrefix(o.Key, b.ep.prefix), Size: o.Size, ETag: o.ETag, LastModified: o.LastModified}
			if !yield(info, nil) {
				return
			}
		}
	}
}

// fail wraps a server or network error with what was being done, and
// with ErrNotFound or ErrUnavailable when it is one of those.
func (b *Bucket) fail(doing, key string, err error) error {
	what := fmt.Sprintf("storage %s: %s %s", b.ep.base, doing, key)
	switch kind := classify(err); kind {
	case nil:
		return fmt.Errorf("%s: %w", what, err)
	default:
		return fmt.Errorf("%s: %w: %w", what, kind, err)
	}
}
