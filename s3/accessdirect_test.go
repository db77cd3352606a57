package s3_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/s3"
)

// fakeStorage is a storage on a raw socket: it records the request it is
// sent and answers with the given bytes, so a test sees exactly what the
// direct path writes and how it takes a broken answer.
func fakeStorage(t *testing.T, answer string) (host string, requests <-chan *http.Request) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan *http.Request, 8)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(conn))
			if err == nil {
				got <- req
				_, _ = io.WriteString(conn, answer)
			}
			conn.Close()
		}
	}()
	return ln.Addr().String(), got
}

// fakeProxy serves a bucket at host with the access path /data/ through
// a proxy with the default transport, and signs a link to key.
func fakeProxy(t *testing.T, host, key string) (base, link string) {
	t.Helper()
	b, err := s3.New(s3.Config{EndpointURL: "http://" + host + "/", BucketName: "bkt", AccessKey: "k", SecretKey: "s",
		AccessEndpointURL: "/data/"}, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s3.NewAccessProxy(b, nil))
	t.Cleanup(srv.Close)
	link, err = b.PresignGet(t.Context(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, link
}

func TestAccessProxyDirectRequest(t *testing.T) {
	host, requests := fakeStorage(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n"+
		"X-Amz-Request-Id: 42\r\nServer: fake\r\n\r\nhello")
	base, link := fakeProxy(t, host, "org/f.txt")
	resp, body := do(t, "GET", base+link, "Authorization", "Bearer secret-token", "Cookie", "session=secret",
		"If-None-Match", `"x"`, "Accept-Encoding", "gzip")
	if resp.StatusCode != http.StatusOK || string(body) != "hello" {
		t.Fatalf("GET: %d %q", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Amz-Request-Id") != "" || resp.Header.Get("Server") != "" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("response headers: %v", resp.Header)
	}
	req := <-requests
	// Only the direct path closes its connection: this tells it was taken.
	if !req.Close {
		t.Fatal("whole-object GET did not take the direct path")
	}
	if req.Method != "GET" || req.Host != host || !strings.HasPrefix(req.RequestURI, "/bkt/org/f.txt?") {
		t.Errorf("storage request %s %s%s", req.Method, req.Host, req.RequestURI)
	}
	if req.Header.Get("If-None-Match") != `"x"` || req.Header.Get("Accept-Encoding") != "identity" {
		t.Errorf("storage request headers %v", req.Header)
	}
	for _, h := range []string{"Authorization", "Cookie"} {
		if req.Header.Get(h) != "" {
			t.Errorf("%s reached the storage", h)
		}
	}

	// Ranges keep the reverse proxy and its kept-alive connections.
	if resp, _ := do(t, "GET", base+link, "Range", "bytes=0-1"); resp.StatusCode != http.StatusOK {
		t.Fatalf("Range: %d", resp.StatusCode)
	}
	if req := <-requests; req.Close || req.Header.Get("Range") != "bytes=0-1" {
		t.Errorf("ranged request: Close %v, Range %q", req.Close, req.Header.Get("Range"))
	}
}

func TestAccessProxyDirectAbortsShortBodies(t *testing.T) {
	host, _ := fakeStorage(t, "HTTP/1.1 200 OK\r\nContent-Length: 5000000\r\n\r\nonly this")
	base, link := fakeProxy(t, host, "org/f.txt")
	resp, err := http.Get(base + link)
	if err != nil {
		return // broken before the headers went out: as good
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil {
		t.Fatalf("a body cut short by the storage reached the client as complete (%d bytes)", n)
	}
}

func TestAccessProxyDirectOutlivesTheWriteTimeout(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	data := bytes.Repeat([]byte("0123456789abcdef"), 2<<20) // 32 MiB, more than the sockets buffer
	if _, err := b.Put(ctx, "org/big.bin", bytes.NewReader(data), int64(len(data)), ""); err != nil {
		t.Fatal(err)
	}
	pb := atDataPath(t, b)
	srv := httptest.NewUnstartedServer(s3.NewAccessProxy(pb, nil))
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	link, err := pb.PresignGet(ctx, "org/big.bin", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// A slow client: the download outlasts the server's write timeout.
	time.Sleep(300 * time.Millisecond)
	body, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(body, data) {
		t.Fatalf("slow download: %d of %d bytes, %v", len(body), len(data), err)
	}
}
