package s3

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// directChunk is how much of a body the direct path hands the kernel at a
// time. Between chunks the stall deadlines move ahead, so a client as slow
// as 1 MiB in proxyStallTimeout (~9 KiB/s) still gets its download.
const directChunk = 1 << 20

// dialFunc dials the storage, as http.Transport.DialContext does.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// directDialer returns how the direct path dials a storage reached over
// plain HTTP through t: t's own dialer (which may hold a connect-time
// guard), or nil when the direct path cannot be taken: TLS, a transport
// that is not an *http.Transport, or one that would go through an HTTP
// proxy.
func directDialer(t http.RoundTripper, scheme, host string) dialFunc {
	ht, ok := t.(*http.Transport)
	if !ok || scheme != "http" {
		return nil
	}
	if ht.Proxy != nil {
		if u, err := ht.Proxy(&http.Request{URL: &url.URL{Scheme: scheme, Host: host}}); err != nil || u != nil {
			return nil
		}
	}
	if ht.DialContext != nil {
		return ht.DialContext
	}
	return (&net.Dialer{Timeout: 30 * time.Second}).DialContext
}

// servesDirect tells whether r takes the direct path: a GET of a whole
// object, the large download that the copy in user space would slow. The
// ranged reads of a replay are small and many; they take the reverse
// proxy, whose connections are kept alive.
func (p *accessProxy) servesDirect(r *http.Request) bool {
	return p.dial != nil && r.Method == http.MethodGet && r.Header.Get("Range") == ""
}

// serveDirect passes a download on over a connection of its own to the
// storage, so that the body goes from socket to socket inside the kernel
// (splice), as the storage's own sendfile does for a direct download:
// the request as storageRequest builds it, the response's allowed
// headers, then the body through the server's io.ReaderFrom. Anything but
// a 200 with a length (errors, 304) is copied as the reverse proxy would.
func (p *accessProxy) serveDirect(w http.ResponseWriter, r *http.Request, dw *deadlineWriter) {
	ctx := r.Context()
	conn, err := p.dial(ctx, "tcp", p.hostPort)
	if err != nil {
		proxyError(w, r, err)
		return
	}
	defer conn.Close()
	// A client that goes away ends the storage's transfer too.
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	_ = conn.SetDeadline(time.Now().Add(proxyHeaderTimeout))
	out := p.storageRequest(r)
	out.Close = true // one download per connection: no pool to keep
	if err := out.Write(conn); err != nil {
		proxyError(w, r, err)
		return
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	res, err := http.ReadResponse(br, out)
	if err != nil {
		proxyError(w, r, err)
		return
	}
	_ = modifyResponse(res)
	for name, values := range res.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(res.StatusCode)
	rf, ok := w.(io.ReaderFrom)
	if res.StatusCode != http.StatusOK || res.ContentLength <= 0 || !ok {
		_ = conn.SetDeadline(time.Now().Add(proxyStallTimeout))
		if _, err := io.CopyBuffer(dw, res.Body, make([]byte, 32<<10)); err != nil {
			panic(http.ErrAbortHandler)
		}
		return
	}
	remaining := res.ContentLength
	head := min(int64(br.Buffered()), remaining)
	if _, err := io.CopyN(dw, br, head); err != nil {
		panic(http.ErrAbortHandler)
	}
	remaining -= head
	for remaining > 0 {
		chunk := min(remaining, directChunk)
		dw.extend()
		_ = conn.SetReadDeadline(time.Now().Add(proxyStallTimeout))
		n, err := rf.ReadFrom(&io.LimitedReader{R: conn, N: chunk})
		remaining -= n
		if err != nil || n < chunk {
			// The body is cut short: abort, so that the client
			// sees a broken download rather than a short one.
			panic(http.ErrAbortHandler)
		}
	}
}
