// Command perf times the operations trawler's store leans on against a
// mongotestd binary, on a collection of crawl-like documents. It is a
// separate module so that its driver does not change mongotestd's own
// dependency graph.
//
//	cd hack/tools/mongotestd/perf
//	go run . -bin ~/.cache/trawler/testbin/<dir>/mongotestd -n 10000
//
// Every client uses ?maxPoolSize=1, as trawler does against FerretDB.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func main() {
	bin := flag.String("bin", "", "mongotestd binary to start (or -uri)")
	uri := flag.String("uri", "", "URI of a running server instead of -bin")
	n := flag.Int("n", 10_000, "crawl documents to insert")
	orgs := flag.Int("orgs", 1, "orgs the crawls are spread over (the timed org gets n/orgs)")
	reps := flag.Int("reps", 5, "repetitions of each timed operation")
	indexes := flag.Bool("indexes", false, "also create non-unique indexes on oid+started and state, as on MongoDB")
	flag.Parse()
	if err := run(*bin, *uri, *n, *orgs, *reps, *indexes); err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(1)
	}
}

func run(bin, uri string, n, orgs, reps int, withIndexes bool) error {
	ctx := context.Background()
	serverCPU := func() time.Duration { return 0 }
	serverPeakRSS := func() string { return "?" }
	if uri == "" {
		dir, err := os.MkdirTemp("", "mongotestd-perf-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-dir", dir)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no orphan if we die
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		serverCPU = func() time.Duration { return procCPU(cmd.Process.Pid) }
		serverPeakRSS = func() string { return procPeakRSS(cmd.Process.Pid) }
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			return fmt.Errorf("reading URI: %w", err)
		}
		uri = strings.TrimSpace(line)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(withQuery(uri, "maxPoolSize=1")))
	if err != nil {
		return err
	}
	defer client.Disconnect(ctx)
	coll := client.Database("perf").Collection("crawls")
	_ = coll.Drop(ctx)

	if withIndexes {
		if _, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
			{Keys: bson.D{{Key: "oid", Value: 1}, {Key: "started", Value: -1}}},
			{Keys: bson.D{{Key: "state", Value: 1}}},
		}); err != nil {
			return err
		}
	}

	orgIDs := make([]uuid.UUID, orgs)
	for i := range orgIDs {
		orgIDs[i] = uuid.New()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now().UTC().Truncate(time.Millisecond)
	ids := make([]string, 0, n)
	t0 := time.Now()
	batch := make([]any, 0, 500)
	for i := range n {
		d := crawlDoc(rng, i, now.Add(-time.Duration(n-i)*time.Minute), orgIDs[i%orgs])
		ids = append(ids, d[0].Value.(string))
		batch = append(batch, d)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				return fmt.Errorf("insert: %w", err)
			}
			batch = batch[:0]
		}
	}
	size, _ := bson.Marshal(crawlDoc(rng, 0, now, orgIDs[0]))
	fmt.Printf("inserted %d docs (~%d B each, %d orgs) in %v\n", n, len(size), orgs, time.Since(t0).Round(time.Millisecond))
	oid := orgIDs[0]
	perOrg := (n + orgs - 1) / orgs

	pick := func() string { return ids[rng.IntN(len(ids))] }
	timeit := func(name string, f func() error) error {
		var ds, cpu []time.Duration
		for range reps {
			t, c := time.Now(), serverCPU()
			if err := f(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			ds = append(ds, time.Since(t))
			cpu = append(cpu, serverCPU()-c)
		}
		slices.Sort(ds)
		slices.Sort(cpu)
		fmt.Printf("%-44s median %9v  min %9v  max %9v  server CPU median %9v\n", name,
			ds[len(ds)/2].Round(10*time.Microsecond), ds[0].Round(10*time.Microsecond),
			ds[len(ds)-1].Round(10*time.Microsecond), cpu[len(cpu)/2])
		return nil
	}
	steps := []struct {
		name string
		f    func() error
	}{
		{"findOne {_id}", func() error {
			return coll.FindOne(ctx, bson.D{{Key: "_id", Value: pick()}}).Err()
		}},
		{"updateOne {_id} $set", func() error {
			r, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: pick()}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "stats.done", Value: rng.IntN(1000)}}}})
			if err == nil && r.MatchedCount != 1 {
				err = fmt.Errorf("matched %d", r.MatchedCount)
			}
			return err
		}},
		{"findOneAndUpdate {_id,type,state $in} (CAS)", func() error {
			return coll.FindOneAndUpdate(ctx,
				bson.D{{Key: "_id", Value: pick()}, {Key: "type", Value: "crawl"},
					{Key: "state", Value: bson.D{{Key: "$in", Value: bson.A{"complete", "failed", "partial_complete", "canceled"}}}}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "stats.found", Value: rng.IntN(1000)}}}}).Err()
		}},
		{"deleteOne {_id} + reinsert", func() error {
			id := pick()
			var doc bson.Raw
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil {
				return err
			}
			if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
				return err
			}
			_, err := coll.InsertOne(ctx, doc)
			return err
		}},
		{"countDocuments {oid}", func() error {
			c, err := coll.CountDocuments(ctx, bson.D{{Key: "oid", Value: uuidBin(oid)}})
			if err == nil && c != int64(perOrg) {
				err = fmt.Errorf("count %d, want %d", c, perOrg)
			}
			return err
		}},
		{"find {oid} sort started:-1 skip/limit 1000", func() error {
			cur, err := coll.Find(ctx, bson.D{{Key: "oid", Value: uuidBin(oid)}}, options.Find().
				SetSort(bson.D{{Key: "started", Value: -1}}).SetSkip(1000).SetLimit(1000))
			if err != nil {
				return err
			}
			var docs []bson.Raw
			if err := cur.All(ctx, &docs); err != nil {
				return err
			}
			if want := min(1000, max(0, perOrg-1000)); len(docs) != want {
				return fmt.Errorf("got %d docs, want %d", len(docs), want)
			}
			return nil
		}},
		{"find {type $in [crawl,null], oid} limit 50", func() error {
			cur, err := coll.Find(ctx, bson.D{{Key: "type", Value: bson.D{{Key: "$in", Value: bson.A{"crawl", nil}}}},
				{Key: "oid", Value: uuidBin(oid)}}, options.Find().SetSort(bson.D{{Key: "started", Value: -1}}).SetLimit(50))
			if err != nil {
				return err
			}
			var docs []bson.Raw
			return cur.All(ctx, &docs)
		}},
	}
	for _, s := range steps {
		if err := timeit(s.name, s.f); err != nil {
			return err
		}
	}
	fmt.Println("server peak RSS:", serverPeakRSS())
	return nil
}

// procPeakRSS returns VmHWM of a process (Linux).
func procPeakRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// procCPU returns the user+system CPU time of a process (Linux, 10 ms ticks).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func withQuery(uri, q string) string {
	if strings.Contains(uri, "?") {
		return uri + "&" + q
	}
	return uri + "?" + q
}

func crawlDoc(rng *rand.Rand, i int, started time.Time, oid uuid.UUID) bson.D {
	states := []string{"complete", "complete", "failed", "partial_complete", "canceled"}
	id := fmt.Sprintf("manual-%s-%06d", started.Format("20060102150405"), i)
	size := int64(1_000_000 + rng.IntN(50_000_000))
	seed := fmt.Sprintf("https://example-%d.org/", i%50)
	return bson.D{
		{Key: "_id", Value: id},
		{Key: "type", Value: "crawl"},
		{Key: "oid", Value: uuidBin(oid)},
		{Key: "cid", Value: uuidBin(uuid.New())},
		{Key: "userid", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}},
		{Key: "name", Value: fmt.Sprintf("crawl %d", i)},
		{Key: "started", Value: bson.NewDateTimeFromTime(started)},
		{Key: "finished", Value: bson.NewDateTimeFromTime(started.Add(time.Duration(30+rng.IntN(600)) * time.Second))},
		{Key: "state", Value: states[rng.IntN(len(states))]},
		{Key: "stats", Value: bson.D{{Key: "found", Value: 120}, {Key: "done", Value: 100}, {Key: "size", Value: size}}},
		{Key: "files", Value: bson.A{bson.D{
			{Key: "filename", Value: fmt.Sprintf("%s/%s-0.wacz", oid, id)},
			{Key: "hash", Value: fmt.Sprintf("%064x", i)},
			{Key: "size", Value: size},
		}}},
		{Key: "tags", Value: bson.A{"seed", fmt.Sprintf("t%d", i%7)}},
		{Key: "fileSize", Value: size},
		{Key: "fileCount", Value: 1},
		{Key: "config", Value: bson.D{
			{Key: "seeds", Value: bson.A{bson.D{{Key: "url", Value: seed}}}},
			{Key: "scopeType", Value: "prefix"}, {Key: "depth", Value: -1}, {Key: "limit", Value: 100},
			{Key: "exclude", Value: bson.A{"logout", "signout", "\\.pdf$"}},
		}},
		{Key: "firstSeed", Value: seed},
		{Key: "notes", Value: strings.Repeat(fmt.Sprintf("padding-%d ", i%10), 140)},
	}
}

func uuidBin(u uuid.UUID) bson.Binary { return bson.Binary{Subtype: 4, Data: u[:]} }
