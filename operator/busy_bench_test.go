package operator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/client-go/tools/cache"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	informers "github.com/trawlerhq/trawler/k8s/generated/informers/externalversions"
	"github.com/trawlerhq/trawler/store"
)

// BenchmarkBusyCrawls (issue 11): 100 crawls crawling at once, their
// pages changing every 100 ms, for 60 s. It counts the CrawlJob status
// writes at the apiserver (apiserver_request_total) and the operator's
// MongoDB writes with a command monitor, and measures how soon state
// changes made meanwhile show in the CrawlJob status. Goals: at most 0.6
// status writes per second per crawl, state changes visible within 1 s
// (p99).
func BenchmarkBusyCrawls(b *testing.B) {
	const (
		crawls = 100
		tick   = 100 * time.Millisecond
		window = 60 * time.Second
	)
	h := newHarness(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	mongoCommands := &commandCounts{n: map[string]int64{}}
	monitored := h.commandCountingStore(mongoCommands)
	cfg := stubConfig(h.config(), h.env.Redis.Addr())
	deps := h.deps()
	deps.Store = monitored
	h.startOperatorWith(cfg, deps)
	jobs := h.benchJobs(crawls)

	// The state of every CrawlJob as the apiserver last told it, with the
	// time it arrived.
	type seen struct {
		state string
		at    time.Time
	}
	var mu sync.Mutex
	states := map[string]seen{}
	f := informers.NewSharedInformerFactoryWithOptions(h.trawler, 0, informers.WithNamespace(h.ns))
	inf := f.Trawler().V1().CrawlJobs().Informer()
	note := func(obj any) {
		j := obj.(*trawlerv1.CrawlJob)
		mu.Lock()
		if states[j.Spec.ID].state != j.Status.State {
			states[j.Spec.ID] = seen{j.Status.State, time.Now()}
		}
		mu.Unlock()
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, o any) { note(o) }})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	h.createJobs(jobs)
	h.waitFor("every crawl running", 3*time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, j := range jobs {
			if states[j.Spec.ID].state != store.StateRunning {
				return false
			}
		}
		return true
	})

	// The crawlers: every tick each crawl finds and finishes a page.
	rdb := redis.NewClient(&redis.Options{Addr: h.env.Redis.Addr()})
	defer rdb.Close()
	crawling := make(chan struct{})
	go func() {
		defer close(crawling)
		t := time.NewTicker(tick)
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pipe := rdb.Pipeline()
			for _, j := range jobs {
				k := crawlredis.Keys(j.Spec.ID)
				pipe.SAdd(ctx, k.Seen(), fmt.Sprintf("https://example.com/%d", n+1))
				pipe.Incr(ctx, k.Done())
				pipe.HIncrBy(ctx, k.Size(), k8s.CrawlerName(j.Spec.ID, 0), 50_000)
			}
			_, _ = pipe.Exec(ctx)
		}
	}()
	time.Sleep(5 * time.Second) // a steady flow before counting

	statusWrites := func() float64 {
		b.Helper()
		return h.apiServerRequestsBy(func(l map[string]string) string {
			if l["resource"] == "crawljobs" && l["subresource"] == "status" && l["verb"] != "GET" && l["verb"] != "WATCH" && l["verb"] != "LIST" {
				return "status writes"
			}
			return ""
		})["status writes"]
	}
	b.ResetTimer()
	status0, mongo0 := statusWrites(), mongoCommands.writes()
	start := time.Now()

	// Meanwhile, state changes: an instance goes to pending-wait and back
	// to running; each change is timed until the CrawlJob shows it.
	rng := rand.New(rand.NewPCG(11, 1149))
	var lat []time.Duration
	for time.Since(start) < window {
		j := jobs[rng.IntN(len(jobs))]
		id := j.Spec.ID
		for _, st := range []string{store.StatePendingWait, store.StateRunning} {
			at := time.Now()
			if err := rdb.HSet(ctx, crawlredis.Keys(id).Status(), k8s.CrawlerName(id, 0), st).Err(); err != nil {
				b.Fatal(err)
			}
			h.waitFor(id+" "+st, 30*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return states[id].state == st
			})
			mu.Lock()
			lat = append(lat, states[id].at.Sub(at))
			mu.Unlock()
		}
		time.Sleep(time.Duration(200+rng.IntN(400)) * time.Millisecond)
	}
	for time.Since(start) < window {
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	status1, mongo1 := statusWrites(), mongoCommands.writes()
	b.StopTimer()
	cancel()
	<-crawling

	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	statusRate := (status1 - status0) / elapsed.Seconds()
	mongoRate := float64(mongo1-mongo0) / elapsed.Seconds()
	b.ReportMetric(statusRate, "status-writes/s")
	b.ReportMetric(statusRate/crawls, "status-writes/s/crawl")
	b.ReportMetric(mongoRate, "mongo-writes/s")
	b.ReportMetric(float64(pct(0.99).Milliseconds()), "ms-state-p99")
	b.Logf("%d crawls, pages every %v, for %v: %.1f CrawlJob status writes/s (%.2f per crawl), %.1f MongoDB writes/s; "+
		"%d state changes seen in p50 %v p90 %v p99 %v max %v",
		crawls, tick, elapsed.Round(time.Second), statusRate, statusRate/crawls, mongoRate,
		len(lat), pct(0.5), pct(0.9), pct(0.99), lat[len(lat)-1])
}
