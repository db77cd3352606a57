package sandbox

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a redis-server on a loopback address.
type Redis struct {
	*Process
	Host string
	Port int
}

// StartRedis starts a redis-server whose files and log live in dir, and
// waits until it answers PING.
func StartRedis(ctx context.Context, dir string) (*Redis, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	r, err := newRedis("127.0.0.1", port, dir, "--save", "", "--appendonly", "no", "--databases", "64")
	if err != nil {
		return nil, err
	}
	r.LogPath = filepath.Join(dir, "redis.log")
	if err := r.Restart(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// newRedis prepares a redis-server on host:port with its files in dir;
// args are added to the command line.
func newRedis(host string, port int, dir string, args ...string) (*Redis, error) {
	path, err := Bin("redis-server")
	if err != nil {
		return nil, err
	}
	return &Redis{Host: host, Port: port, Process: &Process{
		Name: "redis-server",
		Path: path,
		Args: append([]string{"--bind", host, "--port", strconv.Itoa(port), "--dir", dir}, args...),
		Dir:  dir,
	}}, nil
}

// Restart starts the server again (on the same port) after Stop or Kill,
// and waits until it answers.
func (r *Redis) Restart(ctx context.Context) error {
	if err := r.Process.Start(); err != nil {
		return err
	}
	client := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	return WaitFor(ctx, 20*time.Second, 20*time.Millisecond, r.Process, func(ctx context.Context) error {
		return client.Ping(ctx).Err()
	})
}

// Addr is host:port.
func (r *Redis) Addr() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

// URL returns the redis:// URL of database db.
func (r *Redis) URL(db int) string { return fmt.Sprintf("redis://%s/%d", r.Addr(), db) }
