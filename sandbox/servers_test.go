package sandbox_test

import (
	"context"
	"errors"
	"net/smtp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/trawlerhq/trawler/sandbox"
)

func TestMongoRoundTrip(t *testing.T) {
	ctx := context.Background()
	m, err := sandbox.StartMongo(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop(5 * time.Second) })

	client, err := mongo.Connect(options.Client().ApplyURI(m.URI()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
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
