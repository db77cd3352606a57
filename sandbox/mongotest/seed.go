package mongotest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// SeedCrawls inserts into db n ended crawls of workflow cid in org oid, started by
// userID, quickly (insertMany in batches of 1000, no per-crawl workflow
// updates): realistic documents with a config, stats and one file, mostly
// complete with some failed and canceled, started one minute apart going
// back from now, deterministic for a given n. It returns their ids, oldest
// first. Workflow and org stats are not recomputed.
func (db *DB) SeedCrawls(ctx context.Context, oid, cid, userID uuid.UUID, n int) ([]string, error) {
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	now := time.Now().UTC().Truncate(time.Second)
	ids := make([]string, 0, n)
	batch := make([]any, 0, 1000)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if _, err := db.Raw().Collection("crawls").InsertMany(ctx, batch); err != nil {
			return fmt.Errorf("seeding crawls: %w", err)
		}
		batch = batch[:0]
		return nil
	}
	for i := range n {
		c := seedCrawl(rng, i, now.Add(-time.Duration(n-i)*time.Minute), oid, cid, userID)
		ids = append(ids, c.ID)
		batch = append(batch, c)
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	return ids, flush()
}

func seedCrawl(rng *rand.Rand, i int, started time.Time, oid, cid, userID uuid.UUID) *store.Crawl {
	state := store.StateComplete
	switch r := rng.IntN(10); {
	case r == 0:
		state = store.StateFailed
	case r == 1:
		state = store.StateCanceled
	case r < 4:
		state = store.StatePartialComplete
	}
	finished := started.Add(time.Duration(30+rng.IntN(600)) * time.Second)
	size := int64(1_000_000 + rng.IntN(50_000_000))
	seed := fmt.Sprintf("https://example-%d.org/", i%50)
	name := fmt.Sprintf("crawl %d", i)
	id := fmt.Sprintf("manual-%s-%06d", started.Format("20060102150405"), i)
	return &store.Crawl{
		ID: id, Type: store.TypeCrawl, UserID: userID, OID: oid, CID: cid, CIDRev: 1,
		Name: &name, Started: started, Finished: &finished, State: state,
		Stats: &store.CrawlStats{Found: 120, Done: 100, Size: size},
		Files: []store.CrawlFile{{
			Filename: fmt.Sprintf("%s/%s-0.wacz", oid, id), Hash: fmt.Sprintf("%064x", i), Size: size,
		}},
		Errors: []string{}, CollectionIDs: []uuid.UUID{}, Tags: []string{"seed", fmt.Sprintf("t%d", i%7)},
		FileSize: size, FileCount: 1, JobType: "custom", Scale: 1, Manual: true,
		Config: store.RawCrawlConfig{
			Seeds: []store.Seed{{URL: seed}}, ScopeType: "prefix", Depth: -1, Limit: 100,
		},
		FirstSeed: seed,
	}
}
