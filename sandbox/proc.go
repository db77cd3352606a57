package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one server the sandbox runs (etcd, redis-server, ...). It can
// be stopped and started again with the same arguments, which tests use to
// simulate outages.
type Process struct {
	Name string
	Path string
	Args []string
	Dir  string
	// LogPath receives the process's stdout and stderr.
	LogPath string
	// Stdout, when set, receives stdout instead of the log (used by servers
	// that print their address on stdout). With no LogPath it receives
	// stderr too.
	Stdout io.Writer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// spawnRequests carries every process start to one goroutine locked to an
// OS thread that never exits. Children get Pdeathsig=SIGKILL, which Linux
// delivers when the *thread* that forked them exits; forking from a thread
// that lives as long as the process means no server outlives the test
// binary or `trawler dev`, even on panic, os.Exit or a test timeout.
var (
	spawnOnce     sync.Once
	spawnRequests chan spawnRequest
)

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnRequests = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread()
			for req := range spawnRequests {
				req.errc <- req.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	errc := make(chan error, 1)
	spawnRequests <- spawnRequest{cmd: cmd, errc: errc}
	return <-errc
}

// Start starts the process. It returns once the process is forked; callers
// wait for readiness themselves.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.Name)
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Dir = p.Dir
	cmd.Stdout, cmd.Stderr = p.Stdout, p.Stdout
	var logf *os.File
	if p.LogPath != "" {
		var err error
		if logf, err = os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return fmt.Errorf("%s: opening log: %w", p.Name, err)
		}
		cmd.Stderr = logf
		if p.Stdout == nil {
			cmd.Stdout = logf
		}
	}
	closeLog := func() {
		if logf != nil {
			logf.Close()
		}
	}
	if err := spawn(cmd); err != nil {
		closeLog()
		return fmt.Errorf("%s: starting %s: %w", p.Name, p.Path, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		closeLog()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// Exited reports whether the process has exited on its own or been stopped.
func (p *Process) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the current run of the process exits; it is closed
// already when the process is not running.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return p.done
}

// RSS returns the resident set size of the running process in bytes.
func (p *Process) RSS() (int64, error) {
	pid := p.Pid()
	if pid == 0 {
		return 0, fmt.Errorf("%s: not running", p.Name)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("%s: reading RSS: %w", p.Name, err)
	}
	for line := range strings.Lines(string(status)) {
		if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: parsing RSS: %w", p.Name, err)
			}
			return n * 1024, nil
		}
	}
	return 0, fmt.Errorf("%s: no VmRSS in /proc/%d/status", p.Name, pid)
}

// Pid returns the process id, or 0 when not running.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stop sends SIGTERM to the process group, waits up to grace, then kills
// it. Stopping a stopped process is a no-op.
func (p *Process) Stop(grace time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s: pid %d did not exit after SIGKILL", p.Name, cmd.Process.Pid)
	}
}

// Kill stops the process at once with SIGKILL, like a crash.
func (p *Process) Kill() error { return p.Stop(0) }

// Pause freezes the process (SIGSTOP to its group): it keeps its sockets,
// so clients connect but get no answer, like a hung server. Resume thaws it.
func (p *Process) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume lets a paused process run again.
func (p *Process) Resume() error { return p.signal(syscall.SIGCONT) }

func (p *Process) signal(sig syscall.Signal) error {
	pid := p.Pid()
	if pid == 0 {
		return fmt.Errorf("%s: not running", p.Name)
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		return fmt.Errorf("%s: %v: %w", p.Name, sig, err)
	}
	return nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitFor polls check every interval until it returns nil, the deadline
// passes or the process exits. The last check error is part of the result.
func WaitFor(ctx context.Context, timeout, interval time.Duration, p *Process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited before it was ready (see %s): %w", p.Name, p.LogPath, last)
		}
		select {
		case <-ctx.Done():
			name := "condition"
			if p != nil {
				name = p.Name
			}
			return fmt.Errorf("waiting for %s: %w (last error: %w)", name, ctx.Err(), last)
		case <-time.After(interval):
		}
	}
}

// ErrBinaryMissing is returned when a test binary has not been built.
var ErrBinaryMissing = errors.New("test binary missing: run `make testbin` (hack/setup-testenv.sh)")

// Versions of the binaries the sandbox runs; hack/testbin-dir.sh has the
// same values.
const (
	KubeVersion     = "1.35.4"
	EtcdVersion     = "3.6.16"
	FerretDBVersion = "1.24.2-p6" // -pN: patch level of mongotestd (hack/tools/mongotestd/README.md)
)

// BinDir returns the folder that holds the sandbox's binaries:
// $TRAWLER_TESTBIN, or the per-user cache hack/setup-testenv.sh builds into.
func BinDir() string {
	if d := os.Getenv("TRAWLER_TESTBIN"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "trawler", "testbin",
		fmt.Sprintf("k8s-v%s-etcd-v%s-ferretdb-v%s", KubeVersion, EtcdVersion, FerretDBVersion))
}

// Bin returns the path of a sandbox binary, or ErrBinaryMissing.
func Bin(name string) (string, error) {
	p := filepath.Join(BinDir(), name)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if name == "redis-server" {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s in %s: %w", name, BinDir(), ErrBinaryMissing)
}
