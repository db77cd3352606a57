package sandbox

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// syncLog is a container log tests can read while the process writes.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A process container gets SIGTERM when its pod is deleted and SIGKILL
// when the grace period ends; its exit code is then 128 + 9.
func TestRunProcessTermThenKill(t *testing.T) {
	log := &syncLog{}
	killed := make(chan struct{})
	c := &kubelet.Container{Stdout: log, Killed: killed}
	ctx, sigterm := context.WithCancel(context.Background())
	cmd := exec.Command("/bin/sh", "-c", `trap 'echo got TERM' TERM; echo up; while :; do sleep 0.05; done`)
	code := make(chan int, 1)
	go func() { code <- runProcess(ctx, c, cmd) }()
	waitLog(t, log, "up")
	sigterm()
	waitLog(t, log, "got TERM")
	select {
	case got := <-code:
		t.Fatalf("the process ignoring SIGTERM exited %d before SIGKILL", got)
	case <-time.After(200 * time.Millisecond):
	}
	close(killed)
	select {
	case got := <-code:
		if got != 137 {
			t.Errorf("exit code after SIGKILL = %d, want 137", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGKILL")
	}
}

func waitLog(t *testing.T, log *syncLog, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q: %q", want, log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
