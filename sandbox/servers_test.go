package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"net/smtp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/trawlerhq/trawler/sandbox"
)

// startMongo starts a mongotestd of its own for t and connects to it.
func startMongo(t *testing.T) (*sandbox.Mongo, *mongo.Client) {
	t.Helper()
	m, err := sandbox.StartMongo(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop(5 * time.Second) })
	client, err := mongo.Connect(options.Client().ApplyURI(m.URI()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return m, client
}

func TestMongoRoundTrip(t *testing.T) {
	ctx := context.Background()
	m, client := startMongo(t)
	coll := client.Database("roundtrip").Collection("things")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "a", "n": 1}); err != nil {
		t.Fatal(err)
	}
	var got struct{ N int }
	if err := coll.FindOne(ctx, bson.M{"_id": "a"}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.N != 1 {
		t.Fatalf("n = %d, want 1", got.N)
	}

	// Data survives a restart of the server: tests use this to simulate outages.
	if err := m.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := coll.CountDocuments(ctx, bson.M{}); err != nil || n != 1 {
		t.Fatalf("after restart: count = %d, %v; want 1", n, err)
	}
}

// TestMongoConcurrentWritesAreAtomic: the sandbox's clients use several
// connections, so mongotestd must not lose updates made concurrently over
// them (stock FerretDB v1 does: its updates read, modify and write back
// without isolation), nor hand one queued document to two claimers.
func TestMongoConcurrentWritesAreAtomic(t *testing.T) {
	ctx := context.Background()
	_, client := startMongo(t)
	coll := client.Database("atomic").Collection("things")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "counter", "n": 0}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := coll.InsertOne(ctx, bson.M{"_id": fmt.Sprintf("job-%02d", i), "claimed": false}); err != nil {
			t.Fatal(err)
		}
	}

	const workers, incs = 8, 50
	var wg sync.WaitGroup
	var claims atomic.Int64
	errs := make(chan error, workers*2)
	for range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range incs {
				if _, err := coll.UpdateOne(ctx, bson.M{"_id": "counter"}, bson.M{"$inc": bson.M{"n": 1}}); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for {
				err := coll.FindOneAndUpdate(ctx, bson.M{"claimed": false}, bson.M{"$set": bson.M{"claimed": true}}).Err()
				if errors.Is(err, mongo.ErrNoDocuments) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				claims.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var got struct{ N int }
	if err := coll.FindOne(ctx, bson.M{"_id": "counter"}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.N != workers*incs {
		t.Errorf("n = %d after %d concurrent $inc, want %d", got.N, workers*incs, workers*incs)
	}
	if c := claims.Load(); c != 20 {
		t.Errorf("%d claims of 20 queued documents, want 20", c)
	}
}

// TestMongoBulkUpdateLetsOtherWritesIn: a single-document write made
// while a bulk update of many documents runs ends before the bulk does,
// as on MongoDB, which interleaves a bulk's statements with other
// clients' writes. The operator's progress and exec-count batches are
// such bulks and its state transitions such single writes: when
// mongotestd ran a bulk whole under its write lock, a stop waited for a
// batch of other crawls' page counts.
func TestMongoBulkUpdateLetsOtherWritesIn(t *testing.T) {
	ctx := context.Background()
	_, client := startMongo(t)
	db := client.Database("interleave")
	const n = 300
	docs := make([]any, n)
	models := make([]mongo.WriteModel, n)
	for i := range n {
		docs[i] = bson.M{"_id": i, "v": 0}
		models[i] = mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": i}).SetUpdate(bson.M{"$set": bson.M{"v": 1}})
	}
	bulk := db.Collection("bulk")
	if _, err := bulk.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	single := db.Collection("single")
	if _, err := single.InsertOne(ctx, bson.M{"_id": "state", "v": 0}); err != nil {
		t.Fatal(err)
	}
	value := func(id int) int {
		t.Helper()
		var d struct{ V int }
		if err := bulk.FindOne(ctx, bson.M{"_id": id}).Decode(&d); err != nil {
			t.Fatal(err)
		}
		return d.V
	}

	done := make(chan error, 1)
	go func() {
		_, err := bulk.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for value(0) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the bulk's first statement not applied after 30s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := single.FindOneAndUpdate(ctx, bson.M{"_id": "state"}, bson.M{"$set": bson.M{"v": 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	if value(n-1) != 0 {
		t.Errorf("the single write ended after the whole bulk of %d updates", n)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if value(n-1) != 1 {
		t.Error("the bulk's last statement not applied")
	}
}

// TestMongoOpenCursorsLeaveRoomForWrites: cursors a client leaves open
// (one whose context ended before the reply came never learns the cursor's
// ID) must not hold mongotestd's SQLite connections. Stock FerretDB keeps a
// connection per open cursor, from a pool of 100: with 100 left open every
// later query waited forever, and a write holding the write lock with it
// (the 10,000-crawl run's deadlock).
func TestMongoOpenCursorsLeaveRoomForWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, client := startMongo(t)
	coll := client.Database("cursors").Collection("things")
	for i := range 5 {
		if _, err := coll.InsertOne(ctx, bson.M{"_id": i}); err != nil {
			t.Fatal(err)
		}
	}
	const open = 150
	for i := range open {
		cur, err := coll.Find(ctx, bson.M{}, options.Find().SetBatchSize(1))
		if err != nil {
			t.Fatalf("find %d with %d cursors open: %v", i+1, i, err)
		}
		t.Cleanup(func() { _ = cur.Close(context.Background()) })
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "after"}); err != nil {
		t.Fatalf("insert with %d cursors open: %v", open, err)
	}
	if n, err := coll.CountDocuments(ctx, bson.M{}); err != nil || n != 6 {
		t.Fatalf("count with %d cursors open = %d, %v; want 6", open, n, err)
	}
}

func TestRedisRoundTrip(t *testing.T) {
	ctx := context.Background()
	r, err := sandbox.StartRedis(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(5 * time.Second) })

	opts, err := redis.ParseURL(r.URL(3))
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	defer client.Close()
	if err := client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := client.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("get = %q, %v; want v", v, err)
	}
}

func TestMailpitRoundTrip(t *testing.T) {
	ctx := context.Background()
	m, err := sandbox.StartMailpit(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop(5 * time.Second) })
	msg := "From: a@example.com\r\nTo: b@example.com\r\nSubject: Round trip\r\n\r\nhello http://x.example/link\r\n"
	if err := smtp.SendMail(m.SMTPAddr(), nil, "a@example.com", []string{"b@example.com"}, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	var msgs []sandbox.MailSummary
	err = sandbox.WaitFor(ctx, 10*time.Second, 20*time.Millisecond, m.Process, func(ctx context.Context) error {
		if msgs, err = m.Messages(ctx, `to:"b@example.com"`); err == nil && len(msgs) == 0 {
			err = errors.New("no message yet")
		}
		return err
	})
	if err != nil || len(msgs) != 1 || msgs[0].Subject != "Round trip" {
		t.Fatalf("messages %+v, %v", msgs, err)
	}
	full, err := m.Message(ctx, msgs[0].ID)
	if err != nil || !strings.Contains(full.Text, "http://x.example/link") {
		t.Fatalf("message %+v, %v", full, err)
	}
}
