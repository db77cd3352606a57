package store

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ErrNoChangeStreams is returned by WatchCrawl when the server has no
// change streams (FerretDB v1, or a MongoDB that is not a replica set):
// callers then poll the crawl instead.
var ErrNoChangeStreams = errors.New("the server has no change streams")

// progressFields are what GetCrawlProgress reads: what a watcher of a
// crawl's progress shows, without the config, files and errors.
var progressFields = bson.M{
	"type": 1, "oid": 1, "state": 1, "stateHistory": 1, "stats": 1, "scale": 1, "stopping": 1,
	"started": 1, "finished": 1, "fileCount": 1, "fileSize": 1, "podStatus": 1,
}

// GetCrawlProgress returns crawl id with only the fields that change as it
// runs (type, oid, state and its history, stats, scale, stopping, started,
// finished, file counters, pod status): the cheap read of a watcher that
// looks at the crawl every fraction of a second.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) GetCrawlProgress(ctx context.Context, id string) (*Crawl, error) {
	var c Crawl
	err := m.coll(collCrawls).FindOne(ctx, bson.M{"_id": id}, options.FindOne().SetProjection(progressFields)).Decode(&c)
	if err != nil {
		return nil, notFoundOr(err, errCrawlNotFound, "finding crawl")
	}
	return &c, nil
}

// WatchCrawl opens a change stream on crawl id. The channel receives a
// value after each change of the document (changes that come faster than
// they are received are coalesced into one) and is closed when ctx ends or
// the stream fails; the caller then reads the crawl again and, if ctx is
// still live, watches anew or polls.
//
// Errors: ErrNoChangeStreams when the server has none; other errors of
// opening the stream, wrapped.
func (m *Mongo) WatchCrawl(ctx context.Context, id string) (<-chan struct{}, error) {
	if m.ferret(ctx) {
		return nil, ErrNoChangeStreams // FerretDB v1 answers NotImplemented
	}
	match := mongo.Pipeline{{{Key: "$match", Value: bson.M{"documentKey._id": id}}}}
	cs, err := m.coll(collCrawls).Watch(ctx, match)
	if err != nil {
		if noChangeStreams(err) {
			return nil, ErrNoChangeStreams
		}
		return nil, fmt.Errorf("watching crawl: %w", err)
	}
	changed := make(chan struct{}, 1)
	go func() {
		defer close(changed)
		defer func() { _ = cs.Close(context.WithoutCancel(ctx)) }()
		for cs.Next(ctx) {
			select {
			case changed <- struct{}{}:
			default: // a change is already pending
			}
		}
	}()
	return changed, nil
}

// noChangeStreams reports the errors of a server without change streams:
// a standalone MongoDB (40573, "only supported on replica sets") or a
// server that does not implement the stage (NotImplemented, 238;
// CommandNotSupported, 115).
func noChangeStreams(err error) bool {
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Code {
	case 40573, 238, 115:
		return true
	}
	return false
}
