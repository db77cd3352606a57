package app

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/trawlerhq/trawler/api"
)

// testViper is the settings table's defaults with overrides.
func testViper(t *testing.T, overrides map[string]any) *viper.Viper {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	BindConfigFlags(fs)
	v, err := LoadConfig("", fs)
	if err != nil {
		t.Fatal(err)
	}
	for k, val := range overrides {
		v.Set(k, val)
	}
	return v
}

// A client that sent its headers and then its body a byte at a time, or
// not at all, held its connection forever: the server had no read
// timeout. Now the whole request must arrive within api.read_timeout.
func TestSlowClientsAreCutOff(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	v := testViper(t, map[string]any{"api.listen": "127.0.0.1:0", "api.read_timeout": 500 * time.Millisecond,
		"api.read_header_timeout": 500 * time.Millisecond})
	apiSrv := api.New(api.Config{JWTSecret: []byte("x"), Logger: logger}, api.Deps{})
	listening := make(chan string, 1)
	servers, err := startHTTP(v, apiSrv, nil, prometheus.NewRegistry(), listening, make(chan error, 1), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, srv := range servers {
			_ = srv.Close()
		}
	})
	addr := <-listening

	for name, request := range map[string]string{
		"SlowBody": "POST /api/auth/jwt/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
			"Content-Length: 1000\r\n\r\nusername=a",
		"SlowHeaders": "GET /healthz HTTP/1.1\r\nHost: x\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, request); err != nil {
				t.Fatal(err)
			}
			// The server must give up on us long before we give up on it.
			start := time.Now()
			_ = conn.SetReadDeadline(start.Add(10 * time.Second))
			_, err = io.Copy(io.Discard, bufio.NewReader(conn))
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("connection still open after %v", time.Since(start))
			}
		})
	}
}
