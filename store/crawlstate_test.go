package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestSetCrawlState(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	wf := mustWorkflow(t, m, uuid.New(), "wf", "https://a.example/")
	mustCrawl(t, m, wf, "c", now())
	at := now()
	stats := &store.CrawlStats{Found: 3, Done: 2, Size: 10}

	tests := []struct {
		name        string
		to          string
		from        []string
		extra       store.CrawlStateExtra
		wantUpdated bool
		wantState   string
	}{
		{"OKRunning", store.StateRunning, []string{store.StateStarting, store.StateWaitingCapacity}, store.CrawlStateExtra{}, true, store.StateRunning},
		{"OKSameStateAgain", store.StateRunning, store.RunningStates, store.CrawlStateExtra{}, true, store.StateRunning},
		{"NotAllowedAdoptsStored", store.StateWaitingOrgLimit, []string{store.StateStarting}, store.CrawlStateExtra{}, false, store.StateRunning},
		{"OKComplete", store.StateComplete, store.RunningStates, store.CrawlStateExtra{Finished: &at, Stats: stats}, true, store.StateComplete},
		{"LostRaceAfterFinish", store.StateCanceled, store.ActiveStates, store.CrawlStateExtra{Finished: &at}, false, store.StateComplete},
		{"AnyFromEmptyAllowed", store.StateComplete, nil, store.CrawlStateExtra{}, true, store.StateComplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, cur, err := m.SetCrawlState(ctx, "c", tt.to, tt.from, tt.extra)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.wantUpdated || cur.State != tt.wantState {
				t.Fatalf("updated %v state %s, want %v %s", ok, cur.State, tt.wantUpdated, tt.wantState)
			}
			if h := cur.History(); h[len(h)-1].State != tt.wantState {
				t.Fatalf("history %+v ends elsewhere than %s", h, tt.wantState)
			}
			if f := tt.extra.Finished; f != nil && (cur.Finished == nil || !cur.Finished.Equal(*f)) {
				t.Fatalf("finished %v, want %v", cur.Finished, *f)
			}
		})
	}
	t.Run("FinishedAndStatsStored", func(t *testing.T) {
		c, err := m.GetCrawlByID(ctx, "c")
		if err != nil || c.Finished == nil || !c.Finished.Equal(at) || *c.Stats != *stats {
			t.Fatalf("crawl %+v, %v", c, err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, _, err := m.SetCrawlState(ctx, "nope", store.StateRunning, nil, store.CrawlStateExtra{}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestRecordCrawlProgress: the operator's one progress write per sync
// carries the stats, the pods' view or both, and keeps the final stats of
// an ended crawl while still taking its pods' last view.
func TestRecordCrawlProgress(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	wf := mustWorkflow(t, m, uuid.New(), "wf", "https://a.example/")
	mustCrawl(t, m, wf, "c", now())
	code := int32(137)
	pods := map[string]store.PodStatus{
		"0":     {Phase: "Failed", ExitCode: &code, Reason: "OOMKilled", MemoryUsed: 900, MemoryAlloc: 1000, LastUpdated: now()},
		"redis": {Phase: "Running"},
	}
	s := store.CrawlStats{Found: 5, Done: 1, Size: 100}
	record := func(step string, stats *store.CrawlStats, pods map[string]store.PodStatus, want bool) {
		t.Helper()
		if wrote, err := m.RecordCrawlProgress(ctx, "c", stats, pods); err != nil || wrote != want {
			t.Fatalf("%s: wrote %v, %v; want %v", step, wrote, err, want)
		}
	}
	get := func() *store.Crawl {
		t.Helper()
		c, err := m.GetCrawlByID(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	record("stats", &s, nil, true)
	record("the same stats", &s, nil, false)
	if c := get(); *c.Stats != s || len(c.Pods) != 0 {
		t.Fatalf("after stats: stats %+v pods %+v", c.Stats, c.Pods)
	}
	record("pods", nil, pods, true)
	c := get()
	if *c.Stats != s || c.Pods["0"].Reason != "OOMKilled" || *c.Pods["0"].ExitCode != 137 || c.Pods["redis"].Phase != "Running" {
		t.Fatalf("after pods: stats %+v pods %+v", c.Stats, c.Pods)
	}
	s.Done = 2
	pods["redis"] = store.PodStatus{Phase: "Succeeded"}
	record("both", &s, pods, true)
	if c := get(); *c.Stats != s || c.Pods["redis"].Phase != "Succeeded" {
		t.Fatalf("after both: stats %+v pods %+v", c.Stats, c.Pods)
	}
	record("nothing", nil, nil, false)

	at := now()
	if _, _, err := m.SetCrawlState(ctx, "c", store.StateCanceled, nil, store.CrawlStateExtra{Finished: &at}); err != nil {
		t.Fatal(err)
	}
	record("stats after the end", &store.CrawlStats{Found: 9}, nil, false)
	record("pods after the end, with stats", &store.CrawlStats{Found: 9}, map[string]store.PodStatus{"0": {Phase: "Succeeded"}}, true)
	if c := get(); *c.Stats != s || len(c.Pods) != 1 || c.Pods["0"].Phase != "Succeeded" {
		t.Fatalf("after the end: stats %+v, want %+v; pods %+v", c.Stats, s, c.Pods)
	}

	for _, tc := range []struct {
		name  string
		stats *store.CrawlStats
		pods  map[string]store.PodStatus
	}{{"stats", &s, nil}, {"pods", nil, pods}, {"both", &s, pods}} {
		if _, err := m.RecordCrawlProgress(ctx, "nope", tc.stats, tc.pods); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing crawl, %s: %v", tc.name, err)
		}
	}
}

// TestRecordCrawlsProgress: the operator's batched progress write gives
// each crawl its stats, its pods' view or both, in one bulk write, skips
// a crawl that is gone, and keeps the pods' view of an ended crawl.
func TestRecordCrawlsProgress(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "ended"} {
		mustCrawl(t, m, mustWorkflow(t, m, uuid.New(), id, "https://a.example/"), id, now())
	}
	at := now()
	if _, _, err := m.SetCrawlState(ctx, "ended", store.StateComplete, nil, store.CrawlStateExtra{Finished: &at}); err != nil {
		t.Fatal(err)
	}
	pods := map[string]store.PodStatus{"0": {Phase: "Running", CPUUsedMilli: 250}}
	n, err := m.RecordCrawlsProgress(ctx, []store.CrawlProgress{
		{CrawlID: "a", Stats: &store.CrawlStats{Found: 5, Done: 1, Size: 100}},
		{CrawlID: "b", Stats: &store.CrawlStats{Found: 7, Done: 2}, Pods: pods},
		{CrawlID: "ended", Pods: map[string]store.PodStatus{"0": {Phase: "Succeeded"}}},
		{CrawlID: "gone", Stats: &store.CrawlStats{Found: 1}},
	})
	if err != nil || n < 3 {
		t.Fatalf("matched %d, %v; want the three crawls there", n, err)
	}
	get := func(id string) *store.Crawl {
		t.Helper()
		c, err := m.GetCrawlByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := get("a"); c.Stats == nil || *c.Stats != (store.CrawlStats{Found: 5, Done: 1, Size: 100}) || len(c.Pods) != 0 {
		t.Errorf("a: stats %+v pods %+v", c.Stats, c.Pods)
	}
	if c := get("b"); c.Stats == nil || c.Stats.Done != 2 || c.Pods["0"].CPUUsedMilli != 250 {
		t.Errorf("b: stats %+v pods %+v", c.Stats, c.Pods)
	}
	if c := get("ended"); c.State != store.StateComplete || c.Pods["0"].Phase != "Succeeded" {
		t.Errorf("ended: state %s pods %+v", c.State, c.Pods)
	}
	if _, err := m.GetCrawlByID(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing crawl was created: %v", err)
	}
	if n, err := m.RecordCrawlsProgress(ctx, nil); n != 0 || err != nil {
		t.Errorf("nothing: %d, %v", n, err)
	}
}

func TestAddCrawlFile(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	wf := mustWorkflow(t, m, uuid.New(), "wf", "https://a.example/")
	mustCrawl(t, m, wf, "c", now())
	f := store.CrawlFile{Filename: "oid/c-0.wacz", Hash: "h", Size: 10}

	tests := []struct {
		name string
		file store.CrawlFile
		want store.FileResult
	}{
		{"OK", f, store.FileResult{Added: 1, AddedSize: 10, FileCount: 1, FileSize: 10}},
		{"Replay", f, store.FileResult{Added: 0, FileCount: 1, FileSize: 10}},
		{"Second", store.CrawlFile{Filename: "oid/c-1.wacz", Size: 5}, store.FileResult{Added: 1, AddedSize: 5, FileCount: 2, FileSize: 15}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.AddCrawlFile(ctx, "c", tt.file)
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	t.Run("Batch", func(t *testing.T) {
		// Known names and repeats within the batch are recorded once.
		batch := []store.CrawlFile{f, {Filename: "oid/c-2.wacz", Size: 1}, {Filename: "oid/c-2.wacz", Size: 1}, {Filename: "oid/c-3.wacz", Size: 2}}
		got, err := m.AddCrawlFiles(ctx, "c", batch)
		if want := (store.FileResult{Added: 2, AddedSize: 3, FileCount: 4, FileSize: 18}); err != nil || got != want {
			t.Fatalf("got %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := m.AddCrawlFile(ctx, "nope", f); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	c, err := m.GetCrawlByID(ctx, "c")
	if err != nil || len(c.Files) != 4 || c.Files[0] != f {
		t.Fatalf("files %+v, %v", c.Files, err)
	}
}

// TestAddCrawlFileCountsBytesStored: the org's bytesStored rises with each
// file as it is recorded (a replay adds nothing) and falls when the crawl
// is deleted.
func TestAddCrawlFileCountsBytesStored(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	wf := mustWorkflow(t, m, org.ID, "wf", "https://a.example/")
	mustCrawl(t, m, wf, "c", now())
	bytes := func() int64 {
		o, err := m.GetOrg(ctx, org.ID)
		if err != nil {
			t.Fatal(err)
		}
		return o.BytesStored
	}
	for i, want := range []int64{10, 30, 30} {
		f := store.CrawlFile{Filename: fmt.Sprintf("oid/c-%d.wacz", min(i, 1)), Size: int64(10 * (i + 1))}
		if _, err := m.AddCrawlFile(ctx, "c", f); err != nil {
			t.Fatal(err)
		}
		if got := bytes(); got != want {
			t.Fatalf("after file %d: bytesStored %d, want %d", i, got, want)
		}
	}
	if _, err := m.DeleteCrawls(ctx, org.ID, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if got := bytes(); got != 0 {
		t.Fatalf("after delete: bytesStored %d, want 0", got)
	}
}

// TestPushCrawlFilesAddsToBytesStored: PushCrawlFiles records the files
// (once each) and adds their size to the org's bytesStored without the
// org's scan; a replay (the files already there: a crash or a timeout may
// have come between the two writes) leaves the org owed a recomputation,
// which the next post-crawl tasks make however lately one ran; otherwise
// they heal what drifted only once ten recomputations' time has passed.
func TestPushCrawlFilesAddsToBytesStored(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	wf := mustWorkflow(t, m, org.ID, "wf", "https://a.example/")
	bytesStored := func() int64 { t.Helper(); return orgBytesStored(t, m, org.ID) }
	drift := func() {
		t.Helper()
		if r, err := m.Raw().Collection("organizations").UpdateOne(ctx, bson.M{"_id": org.ID}, bson.M{"$set": bson.M{"bytesStored": 3}}); err != nil || r.ModifiedCount != 1 {
			t.Fatalf("drifting the org's bytesStored: %+v, %v", r, err)
		}
	}
	finish := func(id string, recounted time.Time, took time.Duration) {
		t.Helper()
		at := time.Now()
		if _, _, err := m.SetCrawlState(ctx, id, store.StateComplete, store.StartingStates, store.CrawlStateExtra{Finished: &at}); err != nil {
			t.Fatal(err)
		}
		m.DateOrgBytesRecount(org.ID, recounted, took)
		if _, err := m.RunPostCrawlTasks(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	mustCrawl(t, m, wf, "c", now())
	f := store.CrawlFile{Filename: "oid/c-0.wacz", Size: 10}
	res, err := m.PushCrawlFiles(ctx, "c", []store.CrawlFile{f})
	if want := (store.FileResult{Added: 1, AddedSize: 10, FileCount: 1, FileSize: 10}); err != nil || res != want {
		t.Fatalf("push: %+v, %v; want %+v", res, err, want)
	}
	if got := bytesStored(); got != 10 {
		t.Fatalf("after the push: bytesStored %d, want 10", got)
	}

	drift()
	res, err = m.PushCrawlFiles(ctx, "c", []store.CrawlFile{f})
	if want := (store.FileResult{FileCount: 1, FileSize: 10}); err != nil || res != want {
		t.Fatalf("replay: %+v, %v; want %+v", res, err, want)
	}
	if got := bytesStored(); got != 3 {
		t.Fatalf("after the replay: bytesStored %d, want 3 (owed to the post-crawl tasks, not scanned)", got)
	}
	// A recomputation ended just now, but it started an hour ago, before
	// the replay.
	finish("c", time.Now(), time.Hour)
	if got := bytesStored(); got != 10 {
		t.Fatalf("post-crawl tasks after the replay: bytesStored %d, want 10 (owed, recomputed)", got)
	}

	drift()
	mustCrawl(t, m, wf, "d", now())
	finish("d", time.Now(), time.Hour)
	if got := bytesStored(); got != 3 {
		t.Fatalf("post-crawl tasks right after a recomputation: bytesStored %d, want 3 (left)", got)
	}
	mustCrawl(t, m, wf, "e", now())
	finish("e", time.Now().Add(-time.Minute), time.Second)
	if got := bytesStored(); got != 10 {
		t.Fatalf("post-crawl tasks ten recomputations' time later: bytesStored %d, want 10 (healed)", got)
	}
}

// TestPresignedURLCache: links are cached on the files once the file list
// is final, never while the operator may still add files.
func TestPresignedURLCache(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	wf := mustWorkflow(t, m, org.ID, "wf", "https://a.example/")
	mustCrawl(t, m, wf, "c", now())
	finish(t, m, "c", store.StateComplete, now(), 10, 20)
	exp := now().Add(time.Hour)
	urls := map[string]store.PresignedURL{"c-a.wacz": {URL: "http://s3/c-a?sig", ExpireAt: exp}, "other.wacz": {URL: "x"}}

	if ok, err := m.SetCrawlFilePresignedURLs(ctx, "c", urls); ok || err != nil {
		t.Fatalf("before the post-crawl tasks: wrote=%v, %v; want no write", ok, err)
	}
	if _, err := m.RunPostCrawlTasks(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.SetCrawlFilePresignedURLs(ctx, "c", urls); !ok || err != nil {
		t.Fatalf("wrote=%v, %v", ok, err)
	}
	c, err := m.GetCrawlByID(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Files[0], c.Files[1]
	if a.PresignedURL == nil || *a.PresignedURL != "http://s3/c-a?sig" || a.ExpireAt == nil || !a.ExpireAt.Equal(exp) ||
		b.PresignedURL != nil || b.ExpireAt != nil || a.Size != 10 || b.Size != 20 || c.FileCount != 2 {
		t.Fatalf("files %+v %+v", a, b)
	}
	if _, err := m.SetCrawlFilePresignedURLs(ctx, "nope", urls); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing crawl: %v", err)
	}
}

func TestCrawlErrors(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	line := func(i int) string { return fmt.Sprintf(`{"message":"e%d"}`, i) }
	lines := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, line(i))
		}
		return out
	}
	steps := []struct {
		name    string
		seq     int64
		lines   []string
		wantErr error
	}{
		{"OK", 0, lines(0, 3), nil},
		{"Replay", 0, lines(0, 3), nil},
		{"Overlap", 2, lines(2, 5), nil},
		{"IdenticalLinesKept", 5, []string{line(4)}, nil},
		{"ErrGap", 8, lines(8, 9), store.ErrConflict},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := m.AddCrawlErrors(ctx, "c", st.seq, st.lines); !errors.Is(err, st.wantErr) {
				t.Fatalf("err = %v, want %v", err, st.wantErr)
			}
		})
	}
	got, total, err := m.ListCrawlErrors(ctx, "c", store.Paging{Page: 2, PageSize: 4})
	want := []string{line(4), line(4)}
	if err != nil || total != 6 || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("page 2: %v total %d, %v; want %v total 6", got, total, err, want)
	}
	if _, total, _ := m.ListCrawlErrors(ctx, "other", store.Paging{}); total != 0 {
		t.Fatalf("other crawl has %d errors", total)
	}

	// The operator's report comes after the crawler's lines, even those
	// the crawler writes later, and a replay adds nothing.
	for range 2 {
		if err := m.AddOperatorCrawlErrors(ctx, "c", []string{"why", "log"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.AddCrawlErrors(ctx, "c", 6, lines(6, 7)); err != nil {
		t.Fatal(err)
	}
	got, total, err = m.ListCrawlErrors(ctx, "c", store.Paging{Page: 2, PageSize: 4})
	if want := []string{line(4), line(4), line(6), "why"}; err != nil || total != 9 || !slices.Equal(got, want) {
		t.Fatalf("with the operator's report: %v total %d, %v; want %v total 9", got, total, err, want)
	}
}

// TestConcurrentRecording has several goroutines record the same files and
// the same error batches, as a restarted operator racing its predecessor
// would: each must land exactly once.
func TestConcurrentRecording(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	wf := mustWorkflow(t, m, uuid.New(), "wf", "https://a.example/")
	mustCrawl(t, m, wf, "c", now())
	const workers, files = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*files*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range files {
				// Each worker goes through the files in its own order.
				n := (i + w) % files
				f := store.CrawlFile{Filename: fmt.Sprintf("f%d.wacz", n), Size: int64(n + 1)}
				if _, err := m.AddCrawlFile(ctx, "c", f); err != nil {
					errs <- err
				}
				batch := []string{fmt.Sprintf("e%d", 2*i), fmt.Sprintf("e%d", 2*i+1)}
				if err := m.AddCrawlErrors(ctx, "c", int64(2*i), batch); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c, err := m.GetCrawlByID(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	wantSize := int64(files * (files + 1) / 2)
	if len(c.Files) != files || c.FileCount != files || c.FileSize != wantSize {
		t.Fatalf("files %d count %d size %d, want %d %d %d", len(c.Files), c.FileCount, c.FileSize, files, files, wantSize)
	}
	lines, total, err := m.ListCrawlErrors(ctx, "c", store.Paging{})
	if err != nil || total != 2*files {
		t.Fatalf("errors total %d, %v", total, err)
	}
	for i, l := range lines {
		if l != fmt.Sprintf("e%d", i) {
			t.Fatalf("error %d = %q", i, l)
		}
	}
}

// TestOrgBytesStoredCoalesces: files recorded while the org's bytesStored
// recomputation runs share the next one (one set of sums for many files),
// and it counts every one of them.
func TestOrgBytesStoredCoalesces(t *testing.T) {
	ctx := context.Background()
	var cmds mongotest.Commands
	m := mongotest.Open(t, cmds.Option())
	org := mustOrg(t, m, "bytes-batch")
	const crawls = 20
	for i := range crawls {
		wf := mustWorkflow(t, m, org.ID, fmt.Sprintf("wf%d", i), "https://example.com/")
		mustCrawl(t, m, wf, fmt.Sprintf("c%d", i), now())
	}

	cmds.Reset()
	release := m.HoldOrgBytesLock(org.ID)
	errs := make(chan error, crawls)
	for i := range crawls {
		go func() {
			_, err := m.AddCrawlFile(ctx, fmt.Sprintf("c%d", i), store.CrawlFile{Filename: fmt.Sprintf("c%d.wacz", i), Size: 100})
			errs <- err
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for m.OrgBytesCallers(org.ID) != crawls {
		if time.Now().After(deadline) {
			release()
			t.Fatalf("%d calls wait for the recomputation, want %d", m.OrgBytesCallers(org.ID), crawls)
		}
		time.Sleep(10 * time.Millisecond)
	}
	release()
	for range crawls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := cmds.Count("aggregate", "crawls"); n != 1 {
		t.Errorf("%d sums of the org's crawls for %d files recorded together, want 1", n, crawls)
	}
	if o, err := m.GetOrg(ctx, org.ID); err != nil || o.BytesStored != crawls*100 {
		t.Fatalf("bytesStored %v, %v; want %d", o, err, crawls*100)
	}
}
