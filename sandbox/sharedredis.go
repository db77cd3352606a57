package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// SharedRedis stands in for thousands of per-crawl Redis pods in scale
// tests: a few redis-servers, each crawl's Redis one database on one of
// them. A redis-server per pod would cost ~3 MiB and a process each; a
// database costs almost nothing, and keeps the keys every crawl's Redis
// has to itself (crawls-done, errors-ingested) apart.
//
// Its Program runs in the Redis pods: while a pod runs, the pod's DNS
// names resolve to its database, and they stop resolving when it stops,
// as a real pod's do. A pod keeps its database when it is created again
// under the same name (a real one keeps its data on its PVC). Clients
// reach a database through Dial, in this process, or through
// SharedRedisDialer with ResolverURL, in another one (an operator under
// measurement in a child process): the dial connects to the server and
// selects the database before the client speaks, so a client of
// redis://<pod name>/0 works unchanged.
type SharedRedis struct {
	servers   []*Redis
	perServer int
	resolver  *http.Server
	url       string

	mu    sync.Mutex
	slots map[string]RedisDB // by the pod's full DNS name, for good
	live  map[string]RedisDB // by every DNS name of a running pod
}

// RedisDB is one database of a redis-server.
type RedisDB struct {
	Addr string // host:port
	DB   int
}

// StartSharedRedis starts servers redis-servers with perServer databases
// each (their files in dir) and a resolver for other processes.
func StartSharedRedis(ctx context.Context, dir string, servers, perServer int) (*SharedRedis, error) {
	s := &SharedRedis{perServer: perServer, slots: map[string]RedisDB{}, live: map[string]RedisDB{}}
	for i := range servers {
		port, err := FreePort()
		if err != nil {
			s.Stop()
			return nil, err
		}
		sub := filepath.Join(dir, fmt.Sprintf("redis-%d", i))
		r, err := newRedis("127.0.0.1", port, sub, "--save", "", "--appendonly", "no",
			"--databases", strconv.Itoa(perServer), "--maxclients", "20000")
		if err == nil {
			err = os.MkdirAll(sub, 0o755)
		}
		if err == nil {
			r.LogPath = filepath.Join(sub, "redis.log")
			err = r.Restart(ctx)
		}
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("starting shared redis-server %d: %w", i, err)
		}
		s.servers = append(s.servers, r)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("listening for the shared Redis resolver: %w", err)
	}
	s.url = "http://" + l.Addr().String() + "/resolve"
	s.resolver = &http.Server{Handler: http.HandlerFunc(s.serveResolve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.resolver.Serve(l) }()
	return s, nil
}

// Stop stops the servers and the resolver.
func (s *SharedRedis) Stop() {
	if s.resolver != nil {
		_ = s.resolver.Close()
	}
	for _, r := range s.servers {
		_ = r.Stop(5 * time.Second)
	}
}

// Servers lists the redis-servers' processes, e.g. to read their CPU time.
func (s *SharedRedis) Servers() []*Redis { return s.servers }

// ResolverURL is where SharedRedisDialer asks which database a name is.
func (s *SharedRedis) ResolverURL() string { return s.url }

// Program is the Redis pod stand-in: it gives the pod a database and
// answers for the pod's DNS names (cluster domain dns's) until the pod
// stops. It starts no process, so a pod costs the kubelet a goroutine.
func (s *SharedRedis) Program(dns *kubelet.DNS) kubelet.Program {
	return func(ctx context.Context, c *kubelet.Container) int {
		names := dns.PodNames(c.Hostname, c.Pod.Spec.Subdomain, c.Pod.Namespace)
		if len(names) == 0 {
			fmt.Fprintln(c.Stdout, "shared redis: the pod has no DNS name (no subdomain)")
			return 1
		}
		db, err := s.attach(names)
		if err != nil {
			fmt.Fprintln(c.Stdout, err)
			return 1
		}
		defer s.detach(names, db)
		<-ctx.Done()
		return 0
	}
}

// attach gives the pod named names its database (the one it had before,
// if any) and makes its names resolve.
func (s *SharedRedis) attach(names []string) (RedisDB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := normalizeHost(names[0])
	db, ok := s.slots[key]
	if !ok {
		n := len(s.slots)
		if n >= len(s.servers)*s.perServer {
			return RedisDB{}, fmt.Errorf("shared redis: all %d databases taken", n)
		}
		db = RedisDB{Addr: s.servers[n%len(s.servers)].Addr(), DB: n / len(s.servers)}
		s.slots[key] = db
	}
	for _, name := range names {
		s.live[normalizeHost(name)] = db
	}
	return db, nil
}

// detach makes the names stop resolving, unless a newer run of the pod
// has them already.
func (s *SharedRedis) detach(names []string, db RedisDB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range names {
		if s.live[normalizeHost(name)] == db {
			delete(s.live, normalizeHost(name))
		}
	}
}

// Locate returns the database a running Redis pod's DNS name stands for.
func (s *SharedRedis) Locate(host string) (RedisDB, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, ok := s.live[normalizeHost(host)]
	return db, ok
}

// Dial connects to the database addr's host names (a running Redis pod's
// DNS name), with the database selected; other names fail with "no such
// host", as a name without a record does in a cluster.
func (s *SharedRedis) Dial(ctx context.Context, _, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	db, ok := s.Locate(host)
	if !ok {
		return nil, noSuchHost(host)
	}
	return dialDB(ctx, db)
}

func (s *SharedRedis) serveResolve(w http.ResponseWriter, r *http.Request) {
	db, ok := s.Locate(r.URL.Query().Get("host"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	fmt.Fprintf(w, "%s %d", db.Addr, db.DB)
}

// SharedRedisDialer dials like SharedRedis.Dial from another process,
// asking the resolver at resolverURL (SharedRedis.ResolverURL) for each
// connection's database.
func SharedRedisDialer(resolverURL string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	return func(ctx context.Context, _, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, resolverURL+"?host="+url.QueryEscape(host), nil)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, noSuchHost(host)
		}
		var db RedisDB
		if _, err := fmt.Fscanf(resp.Body, "%s %d", &db.Addr, &db.DB); err != nil {
			return nil, fmt.Errorf("resolving %s: %s: %w", host, resp.Status, err)
		}
		return dialDB(ctx, db)
	}
}

// dialDB connects to db's server and selects db, reading exactly the
// reply so that nothing the client reads next is lost.
func dialDB(ctx context.Context, db RedisDB) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", db.Addr)
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	} else {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	}
	n := strconv.Itoa(db.DB)
	_, err = fmt.Fprintf(conn, "*2\r\n$6\r\nSELECT\r\n$%d\r\n%s\r\n", len(n), n)
	if err == nil {
		err = readOK(conn)
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("selecting database %d on %s: %w", db.DB, db.Addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// readOK reads one reply line, byte by byte (a buffered reader could take
// bytes that are the client's), and wants +OK.
func readOK(conn net.Conn) error {
	var line []byte
	b := make([]byte, 1)
	for len(line) < 256 {
		if _, err := conn.Read(b); err != nil {
			return err
		}
		line = append(line, b[0])
		if b[0] == '\n' {
			break
		}
	}
	if reply := strings.TrimSpace(string(line)); reply != "+OK" {
		return errors.New("redis answered " + reply)
	}
	return nil
}

func noSuchHost(host string) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
}

func normalizeHost(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }
