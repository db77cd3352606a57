package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestSameResults runs the same queries and writes against two mongotestd
// binaries, $MONGOTESTD_OLD (e.g. built from unpatched FerretDB) and
// $MONGOTESTD_NEW, and requires identical answers, including the order of
// unsorted results and which document single-document writes pick. The data
// is chosen to trip a filter pushdown: arrays holding the value, values of
// other types with the same JSON text, escapes, duplicate filter keys, ...
//
//	MONGOTESTD_OLD=/tmp/old/mongotestd MONGOTESTD_NEW=/tmp/new/mongotestd go test -run SameResults -v
func TestSameResults(t *testing.T) {
	oldBin, newBin := os.Getenv("MONGOTESTD_OLD"), os.Getenv("MONGOTESTD_NEW")
	if oldBin == "" || newBin == "" {
		t.Skip("set MONGOTESTD_OLD and MONGOTESTD_NEW")
	}
	ctx := context.Background()
	a, b := startColl(t, oldBin), startColl(t, newBin)

	oid := bson.ObjectID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	bin4 := bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}
	bin0 := bson.Binary{Subtype: 0, Data: []byte("0123456789abcdef")}
	b64 := "MDEyMzQ1Njc4OWFiY2RlZg==" // base64 of bin4's bytes
	values := []any{
		"x", "y", "a&b<c>", "é\u2028\"q\"\\", "", b64, oid.Hex(), "true", "1",
		bson.A{"x", "z"}, bson.A{bson.D{{Key: "a", Value: "x"}}}, bson.A{}, bson.A{bin4}, bson.A{true},
		bson.D{{Key: "a", Value: "x"}}, nil, int32(1), int64(1), 1.0, true, false,
		bin4, bin0, oid, bson.NewDateTimeFromTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		// For the decoder: edge values of each type.
		int32(math.MaxInt32), int32(math.MinInt32), int64(math.MaxInt64), int64(-1 << 53), int64(0),
		math.Copysign(0, -1), 1.5, 1e300, // no NaN (FerretDB 1.24.2 drops the connection) or Inf (refused)
		bson.NewDateTimeFromTime(time.Date(1960, 1, 2, 3, 4, 5, 6e6, time.UTC)),
		bson.D{}, bson.A{bson.D{}}, bson.D{{Key: "b", Value: bson.D{{Key: "c", Value: bson.A{int32(1), "\x01ctl"}}}}},
		bson.Regex{Pattern: "^x", Options: "i"}, bson.Timestamp{T: 1, I: 2}, "\x01ctl\t", "0", "-1", "日本",
	}
	var docs []any
	for i, v := range values {
		docs = append(docs,
			bson.D{{Key: "_id", Value: fmt.Sprintf("s%02d", i)}, {Key: "f", Value: v}, {Key: "g", Value: values[(i+3)%len(values)]}, {Key: "n", Value: i}},
			bson.D{{Key: "_id", Value: int32(100 + i)}, {Key: "f", Value: v}, {Key: "n", Value: i}},
			bson.D{{Key: "_id", Value: bson.Binary{Subtype: 4, Data: []byte(fmt.Sprintf("id-%012d", i))}}, {Key: "f_2", Value: v}, {Key: "a-b", Value: v}, {Key: "n", Value: i}},
		)
	}
	docs = append(docs,
		bson.D{{Key: "_id", Value: bin4}, {Key: "n", Value: 101}},
		bson.D{{Key: "_id", Value: oid}, {Key: "n", Value: 102}},
		// No _id: b64 or oid.Hex(): FerretDB's _id index takes them for bin4 and oid.
		bson.D{{Key: "_id", Value: 1.0}, {Key: "n", Value: 104}},
		bson.D{{Key: "_id", Value: true}, {Key: "n", Value: 105}},
		bson.D{{Key: "_id", Value: bson.ObjectID{9}}, {Key: "n", Value: 106}, {Key: "f", Value: "x"}},
	)
	// Insert in an order that differs from _id order, so the natural order matters.
	for i := len(docs) - 1; i >= 0; i -= 2 {
		insertBoth(t, a, b, docs[i])
	}
	for i := len(docs) - 2; i >= 0; i -= 2 {
		insertBoth(t, a, b, docs[i])
	}

	var filters []bson.D
	for _, v := range values {
		for _, k := range []string{"f", "f_2", "a-b", "g", "_id"} {
			filters = append(filters,
				bson.D{{Key: k, Value: v}},
				bson.D{{Key: k, Value: bson.D{{Key: "$eq", Value: v}}}},
				bson.D{{Key: k, Value: bson.D{{Key: "$in", Value: bson.A{v, "x"}}}}},
				bson.D{{Key: k, Value: bson.D{{Key: "$in", Value: bson.A{v, nil}}}}},
				bson.D{{Key: k, Value: bson.D{{Key: "$ne", Value: v}}}},
				bson.D{{Key: k, Value: v}, {Key: "n", Value: bson.D{{Key: "$gte", Value: 3}}}},
			)
		}
	}
	filters = append(filters,
		bson.D{{Key: "f", Value: "x"}, {Key: "f", Value: "y"}},
		bson.D{{Key: "f", Value: "x"}, {Key: "g", Value: "x"}},
		bson.D{{Key: "_id", Value: "s00"}, {Key: "f", Value: "x"}},
		bson.D{{Key: "_id", Value: "s00"}, {Key: "f", Value: "y"}},
		bson.D{{Key: "_id", Value: bin4}, {Key: "n", Value: 101}},
		bson.D{{Key: "f.a", Value: "x"}},
		bson.D{{Key: "f.0", Value: "x"}},
		bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "f", Value: "x"}}, bson.D{{Key: "g", Value: "y"}}}}},
		bson.D{{Key: "f", Value: bson.D{{Key: "$in", Value: bson.A{}}}}},
		bson.D{{Key: "f", Value: bson.D{{Key: "$eq", Value: "x"}, {Key: "$ne", Value: "y"}}}},
		bson.D{{Key: "f", Value: bson.D{{Key: "$regex", Value: "^x"}}}},
		bson.D{{Key: "f", Value: bson.A{"x", "z"}}},
		bson.D{{Key: "f", Value: bson.D{{Key: "a", Value: "x"}}}},
		bson.D{{Key: "f", Value: bson.D{{Key: "$exists", Value: true}}}, {Key: "f", Value: "x"}},
	)

	for _, f := range filters {
		name := fmt.Sprint(f)
		same(t, "find "+name, func(c *mongo.Collection) any {
			return documents(c.Find(ctx, f))
		}, a, b)
		same(t, "count "+name, func(c *mongo.Collection) any {
			n, err := c.CountDocuments(ctx, f)
			return fmt.Sprint(n, err)
		}, a, b)
		same(t, "aggregate "+name, func(c *mongo.Collection) any {
			return documents(c.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: f}}, {{Key: "$project", Value: bson.D{{Key: "n", Value: 1}}}}}))
		}, a, b)
	}
	// Writes change both collections the same way; read everything back after each.
	all := func(c *mongo.Collection) any {
		return documents(c.Find(ctx, bson.D{}))
	}
	for i, f := range filters {
		name := fmt.Sprint(f)
		switch i % 4 {
		case 0:
			same(t, "updateOne "+name, func(c *mongo.Collection) any {
				r, err := c.UpdateOne(ctx, f, bson.D{{Key: "$inc", Value: bson.D{{Key: "u", Value: 1}}}})
				return fmt.Sprint(r, err)
			}, a, b)
		case 1:
			same(t, "findOneAndUpdate "+name, func(c *mongo.Collection) any {
				raw, err := c.FindOneAndUpdate(ctx, f, bson.D{{Key: "$inc", Value: bson.D{{Key: "w", Value: 1}}}}).Raw()
				return fmt.Sprint(raw, err)
			}, a, b)
		case 2:
			same(t, "updateMany "+name, func(c *mongo.Collection) any {
				r, err := c.UpdateMany(ctx, f, bson.D{{Key: "$inc", Value: bson.D{{Key: "m", Value: 1}}}})
				return fmt.Sprint(r, err)
			}, a, b)
		case 3:
			if i%8 == 3 {
				same(t, "deleteOne "+name, func(c *mongo.Collection) any {
					r, err := c.DeleteOne(ctx, f)
					return fmt.Sprint(r, err)
				}, a, b)
			}
		}
		same(t, "all after write "+name, all, a, b)
	}
	same(t, "replaceOne upsert", func(c *mongo.Collection) any {
		r, err := c.ReplaceOne(ctx, bson.D{{Key: "_id", Value: "new"}, {Key: "f", Value: "x"}}, bson.D{{Key: "n", Value: 1}},
			options.Replace().SetUpsert(true))
		return fmt.Sprint(r, err)
	}, a, b)
	same(t, "deleteMany", func(c *mongo.Collection) any {
		r, err := c.DeleteMany(ctx, bson.D{{Key: "f", Value: "x"}})
		return fmt.Sprint(r, err)
	}, a, b)
	same(t, "all at the end", all, a, b)
}

func insertBoth(t *testing.T, a, b *mongo.Collection, doc any) {
	t.Helper()
	for _, c := range []*mongo.Collection{a, b} {
		if _, err := c.InsertOne(context.Background(), doc); err != nil {
			t.Fatalf("insert %v: %v", doc, err)
		}
	}
}

func same(t *testing.T, what string, f func(*mongo.Collection) any, a, b *mongo.Collection) {
	t.Helper()
	if ra, rb := fmt.Sprint(f(a)), fmt.Sprint(f(b)); ra != rb {
		t.Errorf("%s:\n old: %s\n new: %s", what, ra, rb)
	}
}

func startColl(t *testing.T, bin string) *mongo.Collection {
	t.Helper()
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-dir", t.TempDir())
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no orphan if we die
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(withQuery(strings.TrimSpace(line), "maxPoolSize=1")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	c := client.Database("same").Collection("c")
	// Indexes let SQLite answer a pushed-down filter in index order.
	if _, err := c.Indexes().CreateMany(context.Background(), []mongo.IndexModel{
		{Keys: bson.D{{Key: "f", Value: 1}}}, {Keys: bson.D{{Key: "g", Value: -1}, {Key: "n", Value: 1}}},
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// documents reads a cursor to the end, or says why it could not, in a
// form the two servers' answers can be compared by.
func documents(cur *mongo.Cursor, err error) any {
	if err != nil {
		return "error: " + err.Error()
	}
	var res []bson.Raw
	if err := cur.All(context.Background(), &res); err != nil {
		return "error: " + err.Error()
	}
	return res
}
