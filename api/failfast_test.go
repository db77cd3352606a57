package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/store"
)

// A JWT whose exp is a numeric string was accepted; RFC 7519 makes it a
// number, and only our own issuer writes our tokens.
func TestTokensNeedNumericTimes(t *testing.T) {
	e := newEnv(t)
	me := e.mustJSON(asViewer, "GET", "/api/users/me", nil, 200)
	sign := func(claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(testSecret))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	future := time.Now().Add(time.Hour).Unix()
	base := func() jwt.MapClaims {
		return jwt.MapClaims{"user_id": me["id"], "aud": []string{tokenAudience}, "exp": future}
	}
	e.tokens["numeric"] = sign(base())
	e.mustJSON("numeric", "GET", "/api/users/me", nil, 200)
	for name, change := range map[string]func(jwt.MapClaims){
		"StringExp": func(c jwt.MapClaims) { c["exp"] = "9999999999" },
		"StringIat": func(c jwt.MapClaims) { c["iat"] = "1" },
		"StringNbf": func(c jwt.MapClaims) { c["nbf"] = "1" },
		"NoExp":     func(c jwt.MapClaims) { delete(c, "exp") },
		"NullExp":   func(c jwt.MapClaims) { c["exp"] = nil },
	} {
		claims := base()
		change(claims)
		e.tokens[name] = sign(claims)
		e.wantDetail(e.do(name, "GET", "/api/users/me", nil), 401, "Unauthorized")
	}
}

// A GET of a crawl whose Redis was paused took 2 s although live stats
// had a 1 s budget: they never add more than their budget to a request.
func TestLiveStatsKeepTheirBudget(t *testing.T) {
	e := newEnv(t)
	_, crawlID := e.startCrawl(asCrawler, "stalled redis")
	e.setState(crawlID, "running")

	rds, err := sandbox.StartRedis(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rds.Stop(5 * time.Second) })
	if err := rds.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rds.Resume() })
	e.srv.redis = newLiveCrawls("crawlers", "cluster.local", func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, rds.Addr())
	}, nil)
	// Well under the Redis client's own 2 s timeouts, which the reads
	// used to wait out.
	e.srv.liveStatsBudget = 200 * time.Millisecond
	for _, path := range []string{"/crawls/" + crawlID, "/crawls", "/crawls/" + crawlID + "/replay.json"} {
		start := time.Now()
		r := e.do(asViewer, "GET", e.orgPath(path), nil)
		if took := time.Since(start); r.Code != 200 || took > time.Second {
			t.Fatalf("GET %s with a stalled Redis: %d after %v, want 200 within the 200 ms budget (+ the database's time)", path, r.Code, took)
		}
	}
}

// A MongoDB that does not answer makes calls fail with 503 within the
// store's timeout instead of hanging on the driver's defaults.
func TestUnreachableDatabaseIs503(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers: a hung server
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	st, err := store.Open(t.Context(), "mongodb://"+ln.Addr().String()+"/?maxPoolSize=1", "hung", store.WithTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	e := &env{t: t, tokens: map[string]string{}}
	e.srv = New(testConfig(), Deps{Store: st, Launcher: &fakeLauncher{}})
	tok, err := e.srv.issueToken([16]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	e.tokens[asViewer] = tok.AccessToken
	for _, call := range []struct{ as, method, path string }{
		{asViewer, "GET", "/api/users/me"},
		{asViewer, "GET", "/api/orgs"},
		{"", "POST", "/api/auth/jwt/login"},
	} {
		start := time.Now()
		var r resp
		if call.method == "POST" {
			r = loginFrom(e.srv, "192.0.2.1:1", "", "admin@example.com", "x")
		} else {
			r = e.do(call.as, call.method, call.path, nil)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("%s %s took %v with a 500 ms store timeout", call.method, call.path, took)
		}
		e.wantDetail(r, 503, "service_unavailable")
	}
}

// /readyz with MongoDB stopped says only that the process cannot serve:
// the cause (the driver's error, naming the server's address) is logged
// and no part of it reaches the public probe's body.
func TestReadyzShowsNoCause(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a stopped server: connections are refused
	st, err := store.Open(t.Context(), "mongodb://"+addr+"/?maxPoolSize=1", "stopped", store.WithTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	var logs bytes.Buffer // the request is served on this goroutine
	cfg := testConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	const cause = "internal-cause-7f3a"
	ready := func(ctx context.Context) error {
		if err := st.Ping(ctx); err != nil {
			return fmt.Errorf("%s: %w", cause, err)
		}
		return nil
	}
	e := &env{t: t, tokens: map[string]string{}}
	e.srv = New(cfg, Deps{Store: st, Launcher: &fakeLauncher{}, Ready: ready})
	r := e.do("", "GET", "/readyz", nil)
	if body := strings.TrimSpace(string(r.Body)); r.Code != 503 || body != `{"detail":"service_unavailable"}` {
		t.Fatalf("/readyz with MongoDB stopped: %d %s", r.Code, body)
	}
	if logged := logs.String(); !strings.Contains(logged, cause) || !strings.Contains(logged, addr) {
		t.Errorf("the cause was not logged: %q", logged)
	}
}

// The HTTP server's write timeout ends a slow response and its read
// timeout a slow request body; a streaming route (a streamOut response,
// an upload's binaryIn or multipartIn body) lifts them for itself and may
// stream for longer.
func TestStreamingRoutesOutlastTheWriteTimeout(t *testing.T) {
	e := newEnv(t)
	slow := func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentType, "text/plain")
		c.Response().WriteHeader(http.StatusOK)
		for range 6 {
			if _, err := c.Response().Write([]byte("tick\n")); err != nil {
				return err
			}
			c.Response().Flush()
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	}
	upload := func(c echo.Context) error {
		n, err := io.Copy(io.Discard, c.Request().Body)
		if err != nil {
			return err
		}
		return c.String(http.StatusOK, strconv.FormatInt(n, 10))
	}
	for _, r := range []route{
		{method: "GET", path: "/test/stream", access: accessPublic, handler: slow, out: streamOut{"text/plain"}},
		{method: "GET", path: "/test/plain", access: accessPublic, handler: slow, out: empty{}},
		{method: "PUT", path: "/test/upload", access: accessPublic, handler: upload, in: binaryIn{}},
		{method: "PUT", path: "/test/form", access: accessPublic, handler: upload, in: multipartIn{"uploads"}},
		{method: "PUT", path: "/test/json", access: accessPublic, handler: upload, in: empty{}},
	} {
		e.srv.echo.Add(r.method, r.path, r.handler, e.srv.middleware(r)...)
	}
	ts := httptest.NewUnstartedServer(e.srv.Handler())
	ts.Config.WriteTimeout, ts.Config.ReadTimeout = 250*time.Millisecond, 250*time.Millisecond
	ts.Start()
	t.Cleanup(ts.Close)
	read := func(path string) (string, error) {
		res, err := http.Get(ts.URL + path)
		if err != nil {
			return "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return string(b), err
	}
	if body, err := read("/test/stream"); err != nil || len(body) != 30 {
		t.Fatalf("streaming route: %q, %v; want all six ticks", body, err)
	}
	if body, err := read("/test/plain"); err == nil && len(body) == 30 {
		t.Fatal("a plain route wrote past the write timeout")
	}

	// A body sent in six pieces over 600 ms.
	send := func(path string) (string, error) {
		pr, pw := io.Pipe()
		go func() {
			for range 6 {
				time.Sleep(100 * time.Millisecond)
				if _, err := pw.Write([]byte("chunk\n")); err != nil {
					return
				}
			}
			pw.Close()
		}()
		req, _ := http.NewRequest("PUT", ts.URL+path, pr)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return string(b), err
	}
	for _, path := range []string{"/test/upload", "/test/form"} {
		if body, err := send(path); err != nil || body != "36" {
			t.Fatalf("upload route %s: %q, %v; want all 36 bytes read", path, body, err)
		}
	}
	if body, err := send("/test/json"); err == nil && body == "36" {
		t.Fatal("a plain route read a body past the read timeout")
	}
}
