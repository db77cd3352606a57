package netpolicy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestControl(t *testing.T) {
	allowed, err := ParseAllowList("10.1.0.0/16, ::1/128")
	if err != nil {
		t.Fatal(err)
	}
	for addr, refused := range map[string]bool{
		"127.0.0.1:80": true, "169.254.169.254:80": true, "[::ffff:127.0.0.1]:443": true, "[fe80::1]:80": true,
		"10.2.0.1:9000": true, "100.64.1.1:80": true, "0.0.0.0:80": true, "/tmp/x.sock": true,
		"10.1.2.3:9000": false, "[::1]:8080": false, "93.184.215.14:443": false, "[2606:4700::1]:443": false,
	} {
		err := allowed.Control("tcp", addr, nil)
		if got := errors.Is(err, ErrInternalAddress); got != refused {
			t.Errorf("Control(%s) = %v, want refused %t", addr, err, refused)
		}
	}
}

// TestTransportRefusesResolvedNames: a name is judged by the address it
// resolves to when the connection is made, not by how it reads.
func TestTransportRefusesResolvedNames(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "secret") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	for _, url := range []string{srv.URL, "http://localhost:" + port + "/"} {
		_, err := (&http.Client{Transport: AllowList{}.Transport()}).Get(url)
		if !errors.Is(err, ErrInternalAddress) {
			t.Errorf("GET %s with an empty allow-list: %v, want ErrInternalAddress", url, err)
		}
	}
	loopback, _ := ParseAllowList("127.0.0.0/8, ::1/128")
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://localhost:"+port+"/", nil)
	resp, err := (&http.Client{Transport: loopback.Transport()}).Do(req)
	if err != nil {
		t.Fatalf("GET with loopback allowed: %v", err)
	}
	_ = resp.Body.Close()
}
