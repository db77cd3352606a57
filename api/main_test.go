package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// TestMain starts one Mongo-wire server (unless MONGO_URI points at a
// real MongoDB), one redis-server and one Mailpit (for the tests that read
// e-mails, see newMailEnv) for the package. FerretDB serves one query at a
// time per client (maxPoolSize=1): queued requests of the benchmark wait
// longer than the driver's default 30 s.
func TestMain(m *testing.M) {
	mongotest.Main(m, mongotest.Options{Redis: true, Mailpit: true, URIParams: "&serverSelectionTimeoutMS=600000"})
}

// dialRedis stands in for cluster DNS: every crawl's Redis is the
// package's redis-server.
func dialRedis(t testing.TB) func(ctx context.Context, network, _ string) (net.Conn, error) {
	addr := mongotest.RedisAddr(t)
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

const testSecret = "test-secret"

// fakeLauncher records launcher calls; failures can be injected.
type fakeLauncher struct {
	mu       sync.Mutex
	launched []k8s.CrawlRequest
	calls    []string // "stop <id>", "cancel <id>", "scale <id> <n>", "restart <id>", "pause <id>", "resume <id>"
	gone     map[string]bool
	fail     error
}

func (f *fakeLauncher) record(call, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if f.fail != nil {
		return f.fail
	}
	if f.gone[id] {
		return fmt.Errorf("crawljob-%s: %w", id, k8s.ErrCrawlJobNotFound)
	}
	return nil
}

func (f *fakeLauncher) LaunchCrawl(_ context.Context, req k8s.CrawlRequest) error {
	if err := f.record("launch "+req.Spec.ID, req.Spec.ID); err != nil {
		return err
	}
	f.mu.Lock()
	f.launched = append(f.launched, req)
	f.mu.Unlock()
	return nil
}
func (f *fakeLauncher) StopCrawl(_ context.Context, id string) error { return f.record("stop "+id, id) }
func (f *fakeLauncher) CancelCrawl(_ context.Context, id string) error {
	return f.record("cancel "+id, id)
}
func (f *fakeLauncher) ScaleCrawl(_ context.Context, id string, n int32) error {
	return f.record(fmt.Sprintf("scale %s %d", id, n), id)
}
func (f *fakeLauncher) PauseCrawl(_ context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return f.record("resume "+id, id)
	}
	return f.record("pause "+id, id)
}
func (f *fakeLauncher) RestartCrawl(_ context.Context, id string, _ []byte) error {
	return f.record("restart "+id, id)
}

// lastPause reports whether the last pause or resume call for id was a
// pause.
func (f *fakeLauncher) lastPause(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		switch f.calls[i] {
		case "pause " + id:
			return true
		case "resume " + id:
			return false
		}
	}
	return false
}

func (f *fakeLauncher) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.calls...)
}

func (f *fakeLauncher) setGone(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone == nil {
		f.gone = map[string]bool{}
	}
	f.gone[id] = true
}

var _ CrawlLauncher = (*fakeLauncher)(nil)
var _ Store = (*store.Mongo)(nil)

// env is one API on its own database, with the superuser, the default org
// and one member of each role.
type env struct {
	t        testing.TB
	store    *mongotest.DB
	srv      *Server
	launcher *fakeLauncher
	browsers *fakeBrowsers
	pod      *fakeBrowserPod
	org      uuid.UUID // the default org
	tokens   map[string]string
	metrics  *prometheus.Registry // the API's metrics
	// redisHook records the API's crawl Redis calls on metrics.
	redisHook redis.Hook
}

// Role names used by the tests' tokens.
const (
	asAdmin    = "superuser"
	asOwner    = "owner"
	asCrawler  = "crawler"
	asViewer   = "viewer"
	asOutsider = "non-member"
	// asAnonymous sends no token.
	asAnonymous = "anonymous"
)

// testConfig is the config every test starts from: the defaults of the
// settings table in ../config.go, as main passes them (the one place tests
// spell them; keep it in step with the table), with a fixed secret and a
// page limit.
func testConfig() Config {
	return Config{
		CrawlerChannels: k8s.CrawlerChannels{
			{ID: "default", Image: "webrecorder/browsertrix-crawler:latest", ImagePullPolicy: "Always", Protocol: "0.11"},
			{ID: "test", Image: testChannelImage, Protocol: "1.x"},
		},
		JWTSecret: []byte(testSecret), TokenLifetime: 1440 * time.Minute,
		MaxCrawlScale: 3, MaxPagesPerCrawl: 4, PausedCrawlLimit: 10080 * time.Minute,
		DefaultFilenameTemplate: "@ts-@hostsuffix.wacz",
		CrawlerNamespace:        "crawlers", ClusterDomain: "cluster.local",
		InviteLifetime: 7 * 24 * time.Hour, PresignDuration: time.Hour,
		SuperuserEmail: "admin@example.com", SuperuserPassword: "PASSW0RD!",
		DefaultOrgName:             "My Organization",
		DefaultBehaviorTimeSeconds: 300, DefaultPageLoadTimeSeconds: 120,
		ScheduleRescan:          30 * time.Second,
		EventsPollInterval:      500 * time.Millisecond,
		EventsKeepAlive:         15 * time.Second,
		Logger:                  slog.New(slog.NewTextHandler(io.Discard, nil)),
		LoginFailuresPerAccount: 5, LoginFailuresPerAddress: 50, LoginFailureWindow: 15 * time.Minute,
		LoginAccountMaxDelay: 30 * time.Second,
		// bcrypt at its default cost was 83 % of the package's CPU time.
		PasswordHashCost: bcrypt.MinCost,
	}
}

// testChannelImage is the image of the tests' second crawler channel,
// "test", which leaves its pull policy to the default.
const testChannelImage = "webrecorder/browsertrix-crawler:edge"

func newEnv(t testing.TB) *env { return newEnvWith(t, nil) }

// newEnvWith is newEnv with the configuration and collaborators changed
// by adjust first.
func newEnvWith(t testing.TB, adjust func(*Config, *Deps)) *env {
	t.Helper()
	return newEnvOn(t, mongotest.Open(t), adjust)
}

// newEnvOn is newEnvWith on the store db (opened, say, with the store's
// metrics); the API registers its metrics on e.metrics.
func newEnvOn(t testing.TB, db *mongotest.DB, adjust func(*Config, *Deps)) *env {
	t.Helper()
	e := &env{t: t, store: db, launcher: &fakeLauncher{}, browsers: newFakeBrowsers(),
		pod: newFakeBrowserPod(t), tokens: map[string]string{}, metrics: prometheus.NewRegistry()}
	hook, err := crawlredis.NewMetrics(e.metrics)
	if err != nil {
		t.Fatal(err)
	}
	e.redisHook = hook
	cfg := testConfig()
	deps := e.deps()
	deps.Metrics = e.metrics // the servers the tests build from e.deps() have registries of their own
	if adjust != nil {
		adjust(&cfg, &deps)
	}
	e.srv = New(cfg, deps)
	t.Cleanup(e.srv.WaitForBackground)
	ctx := context.Background()
	if err := e.srv.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	def, err := e.store.GetDefaultOrg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.org = def.ID
	e.tokens[asAdmin] = e.login("admin@example.com", "PASSW0RD!")
	for _, u := range []struct {
		name string
		role store.Role
	}{{asOwner, store.RoleOwner}, {asCrawler, store.RoleCrawler}, {asViewer, store.RoleViewer}} {
		e.addUser(e.org, u.name, u.role)
	}
	other := e.mustJSON(asAdmin, "POST", "/api/orgs/create", map[string]any{"name": "Other Org"}, 200)
	e.addUser(uuid.MustParse(other["id"].(string)), asOutsider, store.RoleOwner)
	return e
}

// deps are the fakes and real parts the env's server runs on (its
// metrics registry aside).
func (e *env) deps() Deps {
	return Deps{Store: e.store.Mongo, Launcher: e.launcher, Browsers: e.browsers,
		RedisDialer: dialRedis(e.t), BrowserDialer: e.pod.dial, RedisHook: e.redisHook}
}

// addUser creates user name with role in org oid and logs them in.
func (e *env) addUser(oid uuid.UUID, name string, role store.Role) {
	e.t.Helper()
	email := name + "@example.com"
	e.mustJSON(asAdmin, "POST", "/api/orgs/"+oid.String()+"/add-user",
		map[string]any{"email": email, "password": "pw-" + name, "name": name, "role": role}, 200)
	e.tokens[name] = e.login(email, "pw-"+name)
}

func (e *env) login(email, password string) string {
	e.t.Helper()
	form := url.Values{"username": {email}, "password": {password}, "grant_type": {"password"}}
	req := httptest.NewRequest("POST", "/api/auth/jwt/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		e.t.Fatalf("login %s: %d %s", email, rec.Code, rec.Body)
	}
	var tok tokenOut
	if err := json.Unmarshal(rec.Body.Bytes(), &tok); err != nil {
		e.t.Fatal(err)
	}
	return tok.AccessToken
}

// resp is a decoded response.
type resp struct {
	Code int
	Body []byte
}

// JSON decodes the body into a generic value.
func (r resp) JSON() any {
	var v any
	_ = json.Unmarshal(r.Body, &v)
	return v
}

// do sends a request as role (a key of e.tokens, or "" for no token).
func (e *env) do(as, method, path string, body any) resp {
	e.t.Helper()
	r, err := e.request(as, method, path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// request is do without the test helper calls, for fuzz targets.
func (e *env) request(as, method, path string, body any) (resp, error) {
	return e.requestCtx(context.Background(), as, method, path, body)
}

// doWithin is do for a route that streams: the client leaves after d, and
// the response is what the server sent until then.
func (e *env) doWithin(d time.Duration, as, method, path string) resp {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := e.requestCtx(ctx, as, method, path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) requestCtx(ctx context.Context, as, method, path string, body any) (resp, error) {
	rec, err := e.record(ctx, as, method, path, body)
	if err != nil {
		return resp{}, err
	}
	return resp{Code: rec.Code, Body: rec.Body.Bytes()}, nil
}

// doRaw is do with the whole response, headers included.
func (e *env) doRaw(as, method, path string, body any) *httptest.ResponseRecorder {
	e.t.Helper()
	rec, err := e.record(context.Background(), as, method, path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// typedBody is a request body with its own content type.
type typedBody struct {
	contentType string
	data        []byte
}

func (e *env) record(ctx context.Context, as, method, path string, body any) (*httptest.ResponseRecorder, error) {
	var rd io.Reader
	contentType := "application/json"
	switch b := body.(type) {
	case typedBody:
		rd, contentType = bytes.NewReader(b.data), b.contentType
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequestWithContext(ctx, method, path, rd)
	req.Header.Set("Content-Type", contentType)
	if tok, ok := e.tokens[as]; ok {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	return rec, nil
}

// mustJSON sends a request, checks the status and decodes an object.
func (e *env) mustJSON(as, method, path string, body any, want int) map[string]any {
	e.t.Helper()
	r := e.do(as, method, path, body)
	if r.Code != want {
		e.t.Fatalf("%s %s as %s: status %d, want %d: %s", method, path, as, r.Code, want, r.Body)
	}
	m, _ := r.JSON().(map[string]any)
	return m
}

// wantDetail checks status and {"detail": detail}.
func (e *env) wantDetail(r resp, status int, detail string) {
	e.t.Helper()
	var body struct {
		Detail any `json:"detail"`
	}
	_ = json.Unmarshal(r.Body, &body)
	if r.Code != status || body.Detail != detail {
		e.t.Fatalf("got %d %s, want %d {\"detail\":%q}", r.Code, r.Body, status, detail)
	}
}

// orgPath is a path under the default org.
func (e *env) orgPath(rest string) string { return "/api/orgs/" + e.org.String() + rest }

// workflowBody is a minimal valid workflow.
func workflowBody(name string, runNow bool) map[string]any {
	return map[string]any{
		"name": name, "runNow": runNow,
		"config": map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/"}}},
	}
}

// createWorkflow creates a workflow as role and returns the response.
func (e *env) createWorkflow(as string, body map[string]any) map[string]any {
	e.t.Helper()
	return e.mustJSON(as, "POST", e.orgPath("/crawlconfigs/"), body, 200)
}

// startCrawl creates a workflow that runs now and returns (cid, crawl id).
func (e *env) startCrawl(as, name string) (string, string) {
	e.t.Helper()
	out := e.createWorkflow(as, workflowBody(name, true))
	id, _ := out["run_now_job"].(string)
	if id == "" {
		e.t.Fatalf("no crawl started: %v", out)
	}
	return out["id"].(string), id
}

// setState moves a crawl as the operator would.
func (e *env) setState(id, state string) {
	e.t.Helper()
	extra := store.CrawlStateExtra{}
	if store.IsFinished(state) {
		now := time.Now().UTC().Truncate(time.Second)
		extra.Finished = &now
	}
	if _, _, err := e.store.SetCrawlState(context.Background(), id, state, nil, extra); err != nil {
		e.t.Fatal(err)
	}
	if store.IsFinished(state) {
		if _, err := e.store.RunPostCrawlTasks(context.Background(), id); err != nil {
			e.t.Fatal(err)
		}
	}
}

func get(m any, path ...string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

var errTest = errors.New("injected failure")
