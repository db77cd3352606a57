package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Mongo is a MongoDB-wire server (mongotestd: embedded FerretDB on SQLite)
// on a loopback port. Its data persists in its folder across restarts.
type Mongo struct {
	*Process
	Port int
}

// StartMongo starts mongotestd with its data and log in dir and waits
// until it listens.
func StartMongo(ctx context.Context, dir string) (*Mongo, error) {
	path, err := Bin("mongotestd")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "mongo-data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("creating mongo data dir: %w", err)
	}
	m := &Mongo{Port: port, Process: &Process{
		Name:    "mongotestd",
		Path:    path,
		Args:    []string{"-listen", "127.0.0.1:" + strconv.Itoa(port), "-dir", data},
		Dir:     dir,
		LogPath: filepath.Join(dir, "mongo.log"),
	}}
	if err := m.Restart(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// Restart starts the server again (same port, same data) after Stop or
// Kill, and waits until it prints its URI, which it does once listening.
func (m *Mongo) Restart(ctx context.Context) error {
	pr, pw := io.Pipe()
	m.Process.Stdout = pw
	if err := m.Process.Start(); err != nil {
		return err
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() && strings.HasPrefix(sc.Text(), "mongodb://") {
			ready <- nil
		} else {
			ready <- fmt.Errorf("mongotestd printed no URI (see %s)", m.LogPath)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case err := <-ready:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("mongotestd not ready after 30s (see %s)", m.LogPath)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// URI is the connection string trawler uses. Stock FerretDB v1 loses
// concurrent updates made over several connections, so its clients must
// keep to one (maxPoolSize=1); mongotestd runs write commands one at a time
// (ferretdb-write-lock.patch), so several connections are safe and reads
// need not queue behind writes. The pool stays small: every connection
// costs the server a goroutine and SQLite handles.
func (m *Mongo) URI() string {
	return fmt.Sprintf("mongodb://127.0.0.1:%d/?maxPoolSize=8", m.Port)
}
