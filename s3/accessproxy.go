package s3

import (
	"context"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// AccessPath is the path, such as "/data/", under which a proxy on
// trawler's own origin must serve this bucket for its download links to
// work: the storage's access endpoint when that is a path and links are
// signed for the internal endpoint. It is "" when links point at the
// storage itself (no access endpoint, or an absolute one), so nothing
// needs serving.
func (b *Bucket) AccessPath() string {
	if isAbsolute(b.access) || b.cfg.presignViaAccess() || !strings.HasPrefix(b.access, "/") {
		return ""
	}
	return b.access
}

// proxyCopyBuffer is the size of the buffers the access proxy copies
// bodies with: large enough that a download costs few system calls (1 MiB
// took the proxy's extra CPU per GiB from ~0.25 s to ~0.1 s against 256
// KiB in BenchmarkAccessProxy1GiB), pooled so that memory stays flat with
// many downloads.
const proxyCopyBuffer = 1 << 20

// proxyStallTimeout is how long a download may make no progress before
// its connection is dropped; the server's own write timeout is lifted so
// that long downloads are not cut off.
const proxyStallTimeout = 2 * time.Minute

// proxyHeaderTimeout bounds the wait for the storage's response headers,
// so that a hung server turns into a 503 rather than a hung request.
const proxyHeaderTimeout = 30 * time.Second

// forwardedRequestHeaders are the only request headers the proxy passes
// on: ranges and conditions. Never Authorization or Cookie: trawler adds
// no credentials, the storage checks the link's own signature.
var forwardedRequestHeaders = []string{
	"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
}

// forwardedResponseHeaders are the only response headers passed back to
// the browser: what downloads, ranged reads and caches need, nothing of
// the storage's own (request ids, server names, amz metadata).
var forwardedResponseHeaders = []string{
	"Content-Type", "Content-Length", "Content-Range", "Content-Encoding", "Content-Language",
	"Content-Disposition", "Accept-Ranges", "ETag", "Last-Modified", "Cache-Control", "Expires",
}

// accessProxy serves a bucket at its AccessPath on trawler's own origin,
// as a streaming pass-through to the storage (see NewAccessProxy).
type accessProxy struct {
	path     string // the access path, "/data/"
	upstream string // "/bucket/prefix/", escaped as links are signed
	host     string // the storage's host, which links are signed for
	hostPort string // host with its port, to dial
	scheme   string
	proxy    *httputil.ReverseProxy
	dial     dialFunc // the direct path's dialer; nil: reverse proxy only
}

// NewAccessProxy returns a handler that serves the download links of b
// (see AccessPath) by passing each request on to the storage:
//
//   - GET and HEAD only; other methods get 405. A HEAD is sent to the
//     storage as the GET the link is signed for, and its body dropped;
//   - only keys under the bucket's own prefix, checked with ValidateKey:
//     anything else (a path outside AccessPath, the bucket itself, "..",
//     S3 sub-resources such as ?acl) gets 404;
//   - the storage checks the link's signature, and its answers, such as
//     403 for an expired or tampered link, pass through; trawler adds no
//     credentials and forwards no Authorization or Cookie header, only
//     Range and the conditional headers;
//   - bodies stream, never held in memory: a whole-object GET over plain
//     HTTP from socket to socket in the kernel (serveDirect), anything
//     else through pooled buffers; the server's write timeout is lifted
//     while data flows;
//   - a storage that cannot be reached gets 503 {"detail":"storage_unavailable"}.
//
// transport carries the requests to the storage (nil: a default one);
// pass the Options.Transport the bucket was made with.
//
// Mount it in front of any http.ServeMux, not inside one: a mux cleans
// paths, answering a path with ".." with a redirect to its cleaned form,
// which would both hide the 404 and change the signed path. For example:
//
//	if p := bucket.AccessPath(); p != "" {
//		proxy := s3.NewAccessProxy(bucket, transport)
//		root = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//			if strings.HasPrefix(r.URL.Path, p) {
//				proxy.ServeHTTP(w, r)
//				return
//			}
//			mux.ServeHTTP(w, r)
//		})
//	}
//
// When b has no AccessPath every request gets 404.
func NewAccessProxy(b *Bucket, transport http.RoundTripper) http.Handler {
	if transport == nil {
		transport = defaultProxyTransport()
	}
	p := &accessProxy{
		path:     b.AccessPath(),
		upstream: "/" + b.ep.bucket + "/" + s3utils.EncodePath(b.ep.prefix),
		host:     b.ep.host,
		scheme:   "http",
	}
	if b.ep.secure {
		p.scheme = "https"
	}
	p.hostPort = p.host
	if _, _, err := net.SplitHostPort(p.host); err != nil {
		p.hostPort = net.JoinHostPort(p.host, "80")
	}
	p.dial = directDialer(transport, p.scheme, p.host)
	p.proxy = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      transport,
		ModifyResponse: modifyResponse,
		ErrorHandler:   proxyError,
		BufferPool:     copyBuffers{},
		ErrorLog:       log.New(slogWriter{}, "", 0),
	}
	return p
}

// defaultProxyTransport is http.DefaultTransport with a bound on the wait
// for headers, room for the many parallel ranged reads of a replay, and
// no transparent decompression: bytes pass through as stored.
func defaultProxyTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = proxyHeaderTimeout
	t.MaxIdleConnsPerHost = 32
	t.DisableCompression = true
	return t
}

// ServeHTTP checks the method and the key, then passes the request on.
func (p *accessProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeDetail(w, http.StatusMethodNotAllowed, "method_not_allowed")
		return
	}
	if _, ok := p.key(r); !ok {
		writeDetail(w, http.StatusNotFound, "not_found")
		return
	}
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
	dw.extend()
	if p.servesDirect(r) {
		p.serveDirect(w, r, dw)
		return
	}
	p.proxy.ServeHTTP(dw, r)
}

// key returns the escaped key of the request's path, relative to the
// bucket's prefix, when the path is under the access path, names a valid
// key and the query holds no S3 sub-resource.
func (p *accessProxy) key(r *http.Request) (string, bool) {
	if p.path == "" {
		return "", false
	}
	key, ok := strings.CutPrefix(r.URL.Path, p.path)
	if !ok || ValidateKey(key) != nil {
		return "", false
	}
	rawKey, ok := strings.CutPrefix(r.URL.EscapedPath(), p.path)
	if !ok {
		return "", false
	}
	if dec, err := url.PathUnescape(rawKey); err != nil || dec != key {
		return "", false
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", false
	}
	for name := range q {
		if !allowedQueryParam(name) {
			return "", false
		}
	}
	return rawKey, true
}

// allowedQueryParam tells the query parameters of a presigned object
// download: the signature's, and GetObject's own options. Anything else
// (acl, tagging, uploads, list-type, ...) would turn the request into
// another S3 operation.
func allowedQueryParam(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasPrefix(lower, "x-amz-") || strings.HasPrefix(lower, "response-") ||
		lower == "versionid" || lower == "partnumber" || lower == "x-id"
}

// rewrite builds the storage request (see storageRequest); a HEAD is
// sent as the GET the link is signed for.
func (p *accessProxy) rewrite(pr *httputil.ProxyRequest) {
	out := p.storageRequest(pr.In)
	if pr.In.Method == http.MethodHead {
		// Links are signed for GET, and the method is part of the
		// signature: a strict S3 refuses them for HEAD. Ask for the
		// GET, then drop its body (modifyResponse).
		out = out.WithContext(context.WithValue(out.Context(), headRequest{}, true))
	}
	pr.Out = out
}

// storageRequest is the GET of in's key from the storage: the signed host
// and path, the query as signed, and only the allowed headers.
func (p *accessProxy) storageRequest(in *http.Request) *http.Request {
	rawKey, _ := p.key(in) // checked in ServeHTTP
	rawPath := p.upstream + rawKey
	path, _ := url.PathUnescape(rawPath) // checked in key
	out := (&http.Request{
		Method:     http.MethodGet,
		URL:        &url.URL{Scheme: p.scheme, Host: p.host, Path: path, RawPath: rawPath, RawQuery: in.URL.RawQuery},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Host:       p.host,
		Header:     http.Header{},
	}).WithContext(in.Context())
	for _, h := range forwardedRequestHeaders {
		if v := in.Header.Values(h); len(v) > 0 {
			out.Header[h] = v
		}
	}
	out.Header.Set("Accept-Encoding", "identity")
	out.Header.Set("User-Agent", "trawler-access-proxy")
	return out
}

// headRequest marks, in the context of a storage request, that the
// browser asked for HEAD.
type headRequest struct{}

// modifyResponse keeps only the allowed response headers, and makes sure
// a stored object never runs as a page of trawler's origin.
func modifyResponse(res *http.Response) error {
	h := http.Header{}
	for _, name := range forwardedResponseHeaders {
		if v := res.Header.Values(name); len(v) > 0 {
			h[name] = v
		}
	}
	if enc := storedEncoding(h.Values("Content-Encoding")); enc != "" {
		h.Set("Content-Encoding", enc)
	} else {
		h.Del("Content-Encoding")
	}
	// Objects are crawled or uploaded content: opened directly, an HTML
	// one would otherwise run scripts with the dashboard's origin.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	res.Header = h
	res.Trailer = nil
	if head, _ := res.Request.Context().Value(headRequest{}).(bool); head {
		// Closing the body early costs the connection, not a download.
		res.Body.Close()
		res.Body = http.NoBody
	}
	return nil
}

// storedEncoding is the Content-Encoding of the object's bytes. Some S3
// servers keep "aws-chunked", the framing of a streamed upload, as if it
// were the object's encoding; the bytes they return are not framed, and a
// browser must not be told they are.
func storedEncoding(values []string) string {
	var kept []string
	for _, v := range values {
		for _, token := range strings.Split(v, ",") {
			token = strings.TrimSpace(token)
			if token != "" && !strings.EqualFold(token, "aws-chunked") {
				kept = append(kept, token)
			}
		}
	}
	return strings.Join(kept, ", ")
}

// proxyError answers a failed round trip: 503 when the storage cannot be
// reached, nothing when the client has gone.
func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client went away; no one reads an answer
	}
	slog.Warn("storage access proxy", "path", r.URL.Path, "err", err)
	writeDetail(w, http.StatusServiceUnavailable, "storage_unavailable")
}

// slogWriter sends the reverse proxy's own log lines to the default
// slog logger of the moment.
type slogWriter struct{}

func (slogWriter) Write(p []byte) (int, error) {
	slog.Warn("storage access proxy: " + strings.TrimSpace(string(p)))
	return len(p), nil
}

func writeDetail(w http.ResponseWriter, code int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(`{"detail":"` + detail + `"}`))
}

// copyBuffers pools the body copy buffers.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { return new([proxyCopyBuffer]byte) }}

func (copyBuffers) Get() []byte { return copyBufferPool.Get().(*[proxyCopyBuffer]byte)[:] }

func (copyBuffers) Put(b []byte) {
	if cap(b) == proxyCopyBuffer {
		copyBufferPool.Put((*[proxyCopyBuffer]byte)(b[:proxyCopyBuffer]))
	}
}

// deadlineWriter replaces the server's write timeout with a stall
// timeout: each write pushes the deadline proxyStallTimeout ahead (at
// most once a second), so a download of any size runs as long as it
// makes progress.
type deadlineWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	extended time.Time
}

func (d *deadlineWriter) extend() {
	now := time.Now()
	if now.Sub(d.extended) < time.Second {
		return
	}
	d.extended = now
	_ = d.rc.SetWriteDeadline(now.Add(proxyStallTimeout)) // unsupported writers have no deadline
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	d.extend()
	return d.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
