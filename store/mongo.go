package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// Collection names, as upstream (Browsertrix) names them, plus trawler's own
// crawl_errors, crawl_usage and login_attempts. Webhook notifications live
// in "webhooks", as upstream.
const (
	collUsers       = "users"
	collOrgs        = "organizations"
	collConfigs     = "crawl_configs"
	collRevisions   = "configs_revs"
	collCrawls      = "crawls"
	collCrawlErrors = "crawl_errors"
	collCrawlUsage  = "crawl_usage"
	collCollections = "collections"
	collInvites     = "invites"
	collWebhooks    = "webhooks"
	collProfiles    = "profiles"
	collFileUploads = "file_uploads"
	// collLoginAttempts holds trawler's login throttle counters.
	collLoginAttempts = "login_attempts"
)

// Mongo is the MongoDB implementation of the store. It is safe for
// concurrent use. Every method is bounded by its ctx.
type Mongo struct {
	client *mongo.Client
	db     *mongo.Database

	crawlLocks [64]sync.Mutex // striped by crawl id, see lockCrawl
	orgLocks   [16]sync.Mutex // striped by org id, see lockOrg
	orgCharges orgCharges
	orgBytes   orgBytesRecomputes

	kindMu    sync.Mutex // guards kindKnown and isFerret
	kindKnown bool
	isFerret  bool
}

// Open connects to the MongoDB (or FerretDB) server at uri and uses database
// dbName. It does not wait for the server: the driver connects lazily, so
// trawler can start while MongoDB is still coming up; call Ping or
// EnsureIndexes to wait for it.
//
// Against FerretDB v1 the uri must carry maxPoolSize=1: FerretDB loses
// concurrent updates made over several connections.
//
// Errors: only a malformed uri or options.
func Open(ctx context.Context, uri, dbName string, opts ...Option) (*Mongo, error) {
	co := options.Client().ApplyURI(uri).SetRegistry(Registry())
	for _, o := range opts {
		if err := o(co); err != nil {
			return nil, err
		}
	}
	client, err := mongo.Connect(co)
	if err != nil {
		return nil, fmt.Errorf("connecting to mongodb: %w", err)
	}
	return &Mongo{client: client, db: client.Database(dbName)}, nil
}

// WithCommandMonitor observes every command the store sends (to count or
// time them); it replaces the monitor WithMetrics sets.
func WithCommandMonitor(m *event.CommandMonitor) Option {
	return func(o *options.ClientOptions) error {
		o.SetMonitor(m)
		return nil
	}
}

// WithTimeout bounds every operation whose context has no earlier
// deadline, server selection and waiting for a connection included. Without
// it an operation during an outage waits for the context alone (and server
// selection for the driver's 30 s).
func WithTimeout(d time.Duration) Option {
	return func(o *options.ClientOptions) error {
		o.SetTimeout(d)
		return nil
	}
}

// IsUnavailable reports an error caused by the server not answering in
// time or the connection failing, as opposed to one about the request.
func IsUnavailable(err error) bool {
	var sel topology.ServerSelectionError
	return mongo.IsTimeout(err) || mongo.IsNetworkError(err) || errors.As(err, &sel)
}

// Close disconnects from the server.
func (m *Mongo) Close(ctx context.Context) error {
	if err := m.client.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnecting from mongodb: %w", err)
	}
	return nil
}

// Ping checks that the server answers (for /readyz).
func (m *Mongo) Ping(ctx context.Context) error {
	if err := m.client.Ping(ctx, nil); err != nil {
		return fmt.Errorf("pinging mongodb: %w", err)
	}
	return nil
}

func (m *Mongo) coll(name string) *mongo.Collection { return m.db.Collection(name) }

// Registry is a BSON registry that encodes github.com/google/uuid.UUID as
// binary subtype 4 (the "standard" representation upstream uses), so
// domain types can hold uuid.UUID directly. Open installs it on the client.
func Registry() *bson.Registry {
	reg := bson.NewRegistry()
	t := reflect.TypeOf(uuid.UUID{})
	reg.RegisterTypeEncoder(t, bson.ValueEncoderFunc(encodeUUID))
	reg.RegisterTypeDecoder(t, bson.ValueDecoderFunc(decodeUUID))
	return reg
}

func encodeUUID(_ bson.EncodeContext, vw bson.ValueWriter, v reflect.Value) error {
	id := v.Interface().(uuid.UUID)
	return vw.WriteBinaryWithSubtype(id[:], bson.TypeBinaryUUID)
}

func decodeUUID(_ bson.DecodeContext, vr bson.ValueReader, v reflect.Value) error {
	switch vr.Type() {
	case bson.TypeNull:
		v.Set(reflect.ValueOf(uuid.Nil))
		return vr.ReadNull()
	case bson.TypeString:
		// Tolerate ids written as strings (e.g. by hand in a shell).
		s, err := vr.ReadString()
		if err != nil {
			return err
		}
		id, err := uuid.Parse(s)
		if err != nil {
			return fmt.Errorf("decoding uuid: %w", err)
		}
		v.Set(reflect.ValueOf(id))
		return nil
	case bson.TypeBinary:
		data, subtype, err := vr.ReadBinary()
		if err != nil {
			return err
		}
		if subtype != bson.TypeBinaryUUID && subtype != bson.TypeBinaryUUIDOld {
			return fmt.Errorf("decoding uuid: binary subtype %d", subtype)
		}
		id, err := uuid.FromBytes(data)
		if err != nil {
			return fmt.Errorf("decoding uuid: %w", err)
		}
		v.Set(reflect.ValueOf(id))
		return nil
	default:
		return fmt.Errorf("decoding uuid: unexpected BSON type %s", vr.Type())
	}
}

// lockCrawl serialises this process's conditional writes to crawl id
// (read, check in Go, write), and returns the unlock function.
func (m *Mongo) lockCrawl(id string) func() {
	h := fnv.New32a()
	h.Write([]byte(id))
	mu := &m.crawlLocks[h.Sum32()%uint32(len(m.crawlLocks))]
	mu.Lock()
	return mu.Unlock
}

// condFilter is the filter of a conditional write to crawl id whose
// condition cond the caller has already checked under lockCrawl.
//
// On MongoDB the condition stays in the filter, so the write remains a
// compare-and-set against other processes. FerretDB v1 gets {_id} alone:
// it uses an index only for a filter that is exactly {_id: <string>} and
// otherwise scans and decodes the whole collection (seconds with 10,000
// crawls), and it has no isolation between connections anyway, so the
// condition in the filter would add nothing to the in-process lock.
func (m *Mongo) condFilter(ctx context.Context, id string, cond bson.M) bson.M {
	filter := bson.M{"_id": id}
	if m.ferret(ctx) {
		return filter
	}
	for k, v := range cond {
		filter[k] = v
	}
	return filter
}

// ferret reports whether the server is FerretDB, asking it once. If it
// cannot tell, it answers false: MongoDB's filters are correct on both.
func (m *Mongo) ferret(ctx context.Context) bool {
	m.kindMu.Lock()
	defer m.kindMu.Unlock()
	if m.kindKnown {
		return m.isFerret
	}
	raw, err := m.db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	if err != nil {
		return false
	}
	_, err = raw.LookupErr("ferretdbVersion")
	m.isFerret, m.kindKnown = err == nil, true
	return m.isFerret
}

// isDuplicate reports a unique-index violation. Real MongoDB says 11000;
// FerretDB v1 says so on inserts only and answers code 1 "UNIQUE constraint
// failed" when an update or findAndModify causes the duplicate.
func isDuplicate(err error) bool {
	if mongo.IsDuplicateKeyError(err) {
		return true
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// notFoundOr maps mongo.ErrNoDocuments to err and wraps anything else.
func notFoundOr(err error, notFound error, what string) error {
	if errors.Is(err, mongo.ErrNoDocuments) {
		return notFound
	}
	return fmt.Errorf("%s: %w", what, err)
}
