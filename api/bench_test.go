package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/trawlerhq/trawler/store"
)

const (
	benchCrawls    = 10_000
	benchClients   = 16
	benchPerClient = 2
)

// BenchmarkListCrawls measures GET /api/orgs/{oid}/crawls (the default
// page of 1000, and pages of 100) over real HTTP with 10,000 crawls in
// the store, at 16 concurrent clients, next to the same count + find issued directly
// through the driver. It reports p50/p99 latency and
// requests/s of both and the p99 ratio (goal <= 1.5). Run by `make bench`.
func BenchmarkListCrawls(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	cid := e.createWorkflow(asCrawler, workflowBody("bench", false))["id"].(string)
	me := e.mustJSON(asCrawler, "GET", "/api/users/me", nil, 200)
	if _, err := e.store.SeedCrawls(ctx, e.org, uuid.MustParse(cid), uuid.MustParse(me["id"].(string)), benchCrawls); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(e.srv.Handler())
	defer ts.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchClients}}
	for _, size := range []int{1000, 100} {
		b.Run(fmt.Sprintf("pageSize=%d", size), func(b *testing.B) {
			url := fmt.Sprintf("%s%s?pageSize=%d", ts.URL, e.orgPath("/crawls"), size)
			viaAPI := func() error { return getOK(hc, url, e.tokens[asCrawler]) }
			direct := directListCrawls(e.store.Raw(), e.org, int64(size))
			if err := viaAPI(); err != nil { // warm up, and check the route works
				b.Fatal(err)
			}
			b.ResetTimer()
			var api, drv stats
			for range b.N {
				api.add(measure(viaAPI))
				drv.add(measure(direct))
			}
			b.StopTimer()
			api.report(b, "api")
			drv.report(b, "direct")
			b.ReportMetric(float64(api.p(0.99))/float64(drv.p(0.99)), "p99-ratio")
		})
	}
}

// getOK GETs url with a bearer token and reads the whole body.
func getOK(hc *http.Client, url, token string) error {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if res.StatusCode != 200 {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return nil
}

// directListCrawls is the store's query for the first page, issued
// through the driver on the store's own client (same pool, same codecs);
// the two phases run one after the other, so they never share it at once.
func directListCrawls(db *mongo.Database, oid uuid.UUID, pageSize int64) func() error {
	coll := db.Collection("crawls")
	filter := bson.M{"type": bson.M{"$in": bson.A{store.TypeCrawl, nil}}, "oid": oid}
	opts := options.Find().SetProjection(bson.M{"files": 0, "errors": 0}).SetLimit(pageSize)
	return func() error {
		ctx := context.Background()
		if _, err := coll.CountDocuments(ctx, filter); err != nil {
			return err
		}
		cur, err := coll.Find(ctx, filter, opts)
		if err != nil {
			return err
		}
		var items []store.Crawl
		return cur.All(ctx, &items)
	}
}

// stats are request latencies and the wall time they took.
type stats struct {
	lat      []time.Duration
	wall     time.Duration
	errs     int
	firstErr error
}

func (s *stats) add(o stats) {
	s.lat, s.wall, s.errs = append(s.lat, o.lat...), s.wall+o.wall, s.errs+o.errs
	if s.firstErr == nil {
		s.firstErr = o.firstErr
	}
}

func (s *stats) p(q float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	sorted := slices.Clone(s.lat)
	slices.Sort(sorted)
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func (s *stats) report(b *testing.B, name string) {
	if s.errs > 0 {
		b.Errorf("%s: %d failed requests, first: %v", name, s.errs, s.firstErr)
	}
	b.ReportMetric(float64(s.p(0.5).Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(s.p(0.99).Microseconds())/1000, name+"-p99-ms")
	b.ReportMetric(float64(len(s.lat))/s.wall.Seconds(), name+"-req/s")
}

// measure runs fn from benchClients goroutines, benchPerClient times each.
func measure(fn func() error) stats {
	var (
		mu  sync.Mutex
		out stats
		wg  sync.WaitGroup
	)
	start := time.Now()
	for range benchClients {
		wg.Go(func() {
			for range benchPerClient {
				t0 := time.Now()
				err := fn()
				d := time.Since(t0)
				mu.Lock()
				out.lat = append(out.lat, d)
				if err != nil {
					out.errs++
					if out.firstErr == nil {
						out.firstErr = err
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	out.wall = time.Since(start)
	return out
}

const (
	loginBenchGood    = 40  // logins timed for logins per second
	loginBenchAttack  = 16  // concurrent bad logins
	loginBenchMeCalls = 300 // /users/me requests timed, at most...
	// ... and for at most this long (a starved API answers few).
	loginBenchMeTime = 15 * time.Second
)

// BenchmarkLoginUnderAttack measures logins per second and what 16
// concurrent bad logins do to everyone else: the p50/p99 of GET
// /api/users/me, over real HTTP, with no load and while the bad logins
// run (goal: p99 < 50 ms under attack). Each bad login names a new
// account and the limits are raised, so every attempt costs a full
// bcrypt comparison: the worst case, as from many addresses. The
// "unbounded" run gives bcrypt 64 slots, as good as none (how it was
// before), for comparison. Run by `make bench`.
func BenchmarkLoginUnderAttack(b *testing.B) {
	for _, run := range []struct {
		name  string
		slots int
	}{{"slots=default", 0}, {"slots=unbounded", 64}} {
		b.Run(run.name, func(b *testing.B) { benchLoginUnderAttack(b, run.slots) })
	}
}

func benchLoginUnderAttack(b *testing.B, slots int) {
	e := newEnv(b)
	cfg := testConfig()
	cfg.LoginFailuresPerAccount, cfg.LoginFailuresPerAddress = 1<<30, 1<<30
	cfg.PasswordHashConcurrency = slots
	cfg.PasswordHashCost = 0 // bcrypt's default, as in production
	srv := New(cfg, Deps{Store: e.store.Mongo, Launcher: e.launcher})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: loginBenchAttack + 2}}
	login := func(user, password string) error {
		form := url.Values{"username": {user}, "password": {password}}
		res, err := hc.PostForm(ts.URL+"/api/auth/jwt/login", form)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		if res.StatusCode != 200 && res.StatusCode != 400 {
			return fmt.Errorf("login: status %d", res.StatusCode)
		}
		return nil
	}
	me := func() error { return getOK(hc, ts.URL+"/api/users/me", e.tokens[asViewer]) }
	timeMe := func() stats {
		var s stats
		start := time.Now()
		for range loginBenchMeCalls {
			if time.Since(start) > loginBenchMeTime {
				break
			}
			t0 := time.Now()
			err := me()
			s.lat = append(s.lat, time.Since(t0))
			if err != nil {
				s.errs++
				s.firstErr = err
			}
		}
		s.wall = time.Since(start)
		return s
	}
	if err := me(); err != nil { // warm up, and check the route works
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for range loginBenchGood {
			if err := login("viewer@example.com", "pw-viewer"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(loginBenchGood)/time.Since(start).Seconds(), "logins/s")

		idle := timeMe()
		idle.report(b, "me-idle")

		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		bad := 0
		attackStart := time.Now()
		for i := range loginBenchAttack {
			wg.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := login(fmt.Sprintf("guess-%d-%d@example.com", i, n), "wrong"); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					bad++
					mu.Unlock()
				}
			})
		}
		attacked := timeMe()
		close(stop)
		wg.Wait()
		attacked.report(b, "me-attacked")
		b.ReportMetric(float64(bad)/time.Since(attackStart).Seconds(), "bad-logins/s")
	}
}
