package crawlersim

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options is what a crawler container sees.
type Options struct {
	// Args is the command line, command first: "crawl", "--config", ...
	Args []string
	// Env holds the container environment (CRAWL_ID, WEBHOOK_URL, STORE_*,
	// CRAWL_ARGS, ...).
	Env map[string]string
	// Hostname is the pod name, the instance id in every per-instance key.
	Hostname string
	// ListenHost is the pod's address, where the health check server
	// listens (--healthCheckPort). Empty: no health check server.
	ListenHost string
	// WorkDir is the local folder behind the working directory /crawls
	// (the pod's PVC). Empty means the current directory.
	WorkDir string
	// Mounts maps container paths to local paths (a file for subPath
	// mounts), e.g. /tmp/crawl-config.json. Paths outside every mount are
	// used as they are.
	Mounts map[string]string
	// Dial connects to Redis; it may resolve sandbox cluster DNS names.
	// Nil uses a plain net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Stdout receives the JSON log lines. Nil discards them.
	Stdout io.Writer
	// Killed closes on SIGKILL: Run returns 137 at once.
	Killed <-chan struct{}
	// Signals delivers further SIGTERMs after the first one, which is the
	// cancellation of Run's context. A second signal more than 200 ms
	// (scaled) after the first exits with 13.
	Signals <-chan struct{}
	// Restarts is the container's restart count, for --sim.faultRuns.
	Restarts int
	// TimeScale, when > 0, overrides --sim.timeScale.
	TimeScale float64
	// Now gives the wall-clock time written into timestamps and file
	// names; nil means time.Now. Durations are always measured on the
	// real monotonic clock.
	Now func() time.Time
}

// errExited unwinds the process after exit was called (the equivalent of
// process.exit: nothing after it runs).
var errExited = errors.New("process exited")

// exitKilled is the code a SIGKILLed container reports.
const exitKilled = 137

// process is one run of the crawler, from argument parsing to exit.
type process struct {
	opts   Options
	log    *logger
	ctx    context.Context // cancelled when the process exits
	cancel context.CancelFunc
	start  time.Time
	wg     sync.WaitGroup

	exitOnce sync.Once
	code     int

	// Set once during startup (p and scale under mu, for the signal
	// handler), read-only afterwards.
	p     *params
	scale float64
	rdb   *redis.Client
	state *crawlState
	arch  *archive
	store *storage

	mu               sync.Mutex
	ready            bool // crawl state exists; before that a signal exits 1
	interrupted      bool
	finalExit        bool
	uploadAndDelete  bool
	paused           bool // <id>:paused read: upload, report interrupted, exit 0 (pause.go)
	exitOnRedisError bool
	waitingDone      bool // --waitOnDone: done and waiting for a signal
	frozen           bool
	lastSignal       time.Time

	// waczTarget is the name a 1.x session's WACZ is uploaded under,
	// fixed when the session starts (see startWACZ).
	waczTarget string

	pagesStarted atomic.Int64
	limitHit     atomic.Bool
}

// Run runs one crawler process and returns its exit code. Cancelling ctx
// is SIGTERM (first-signal semantics: finish current pages, then stop).
func Run(ctx context.Context, opts Options) int {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	p := &process{opts: opts, start: time.Now(), scale: 1}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	defer p.cancel()
	p.log = &logger{out: opts.Stdout, now: opts.Now}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		p.exit(p.main())
	}()
	go p.watchSignals(ctx)
	<-p.ctx.Done()
	p.wg.Wait()
	if p.rdb != nil {
		_ = p.rdb.Close()
	}
	return p.code
}

// exit ends the process with code; the first call wins.
func (p *process) exit(code int) {
	p.exitOnce.Do(func() {
		p.code = code
		p.cancel()
	})
}

// fatal is logger.fatal: log at level fatal (which reaches <id>:e when
// enabled) and exit 17 without touching the status.
func (p *process) fatal(message string, details map[string]any) error {
	p.log.log(levelFatal, "general", message, details)
	p.exit(17)
	return errExited
}

// scaled converts a crawler-time duration to real time.
func (p *process) scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * p.scale) }

// sleep waits d of crawler time, or until the process exits.
func (p *process) sleep(d time.Duration) error {
	t := time.NewTimer(p.scaled(d))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-p.ctx.Done():
		return errExited
	}
}

// faultsActive tells whether injected faults apply to this run.
func (p *process) faultsActive() bool {
	return p.p.sim.faultRuns == 0 || p.opts.Restarts < p.p.sim.faultRuns
}

// resolvePath maps a container path through the mounts; relative paths
// are relative to the working directory.
func (p *process) resolvePath(path string) string {
	if !filepath.IsAbs(path) {
		return filepath.Join(p.workDir(), path)
	}
	best := ""
	for m := range p.opts.Mounts {
		if (path == m || strings.HasPrefix(path, strings.TrimSuffix(m, "/")+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return path
	}
	return filepath.Join(p.opts.Mounts[best], strings.TrimPrefix(path, best))
}

func (p *process) workDir() string {
	if p.opts.WorkDir == "" {
		return "."
	}
	return p.opts.WorkDir
}

// interrupt is the crawler's graceful finish: workers stop at the next
// page boundary. It is a final exit (package a WACZ) unless the crawl is
// meant to be resumed by a restart. Callers hold p.mu.
func (p *process) interruptLocked() {
	p.interrupted = true
	if !p.p.waitOnDone && !p.p.restartsOnError {
		p.finalExit = true
	}
}

func (p *process) flags() (interrupted, finalExit, uploadAndDelete bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.interrupted, p.finalExit, p.uploadAndDelete
}

// redisDo runs one Redis operation. While Redis is unreachable it retries
// every second, as the crawler's client reconnects forever, except after
// a signal: then a lost Redis is fatal.
func (p *process) redisDo(op func(context.Context) error) error {
	for {
		err := op(p.ctx)
		if err == nil {
			return nil
		}
		if p.ctx.Err() != nil {
			return errExited
		}
		var rerr redis.Error
		if errors.As(err, &rerr) {
			return err
		}
		p.mu.Lock()
		fatal := p.exitOnRedisError
		p.mu.Unlock()
		if fatal {
			return p.fatal("Crawl interrupted, redis gone, exiting", map[string]any{"error": err.Error()})
		}
		p.log.warn("redis", "Redis unavailable, retrying", map[string]any{"error": err.Error()})
		if err := p.sleep(time.Second); err != nil {
			return err
		}
	}
}

// watchSignals turns context cancellation and Options.Signals into
// SIGTERMs and Options.Killed into SIGKILL.
func (p *process) watchSignals(ctx context.Context) {
	defer p.wg.Done()
	term, more := ctx.Done(), p.opts.Signals
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.opts.Killed:
			p.exit(exitKilled)
			return
		case <-term:
			term = nil
			p.signal()
		case _, ok := <-more:
			if !ok {
				more = nil
				continue
			}
			p.signal()
		}
	}
}

// signal applies the crawler's SIGTERM rules: exit 1 before the crawl
// state exists; otherwise the first signal interrupts gracefully and a
// later one, more than 200 ms after the previous, exits 13 at once. An
// interruption by a limit counts as the first signal.
func (p *process) signal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		return
	}
	p.log.info("general", "SIGTERM received, exiting", nil)
	switch {
	case p.p != nil && p.p.sim.ignoreSigterm:
		p.log.info("general", "Simulator ignores the signal (--sim.ignoreSigterm)", nil)
		return
	case !p.ready:
		p.log.error("general", "error: no crawler running, exiting", nil)
		p.exit(1)
		return
	case p.waitingDone:
		p.log.info("general", "success: crawler done, exiting", nil)
		p.exit(0)
		return
	}
	p.exitOnRedisError = true
	now := time.Now()
	if !p.interrupted {
		p.log.info("general", "SIGNAL: gracefully finishing current pages...", nil)
		p.interruptLocked()
	} else if now.Sub(p.lastSignal) > p.scaled(200*time.Millisecond) {
		p.log.info("general", "SIGNAL: stopping crawl now...", nil)
		p.exit(13)
	}
	p.lastSignal = now
}

// freeze makes the process stop doing anything: it no longer answers
// signals, and only a kill ends it.
func (p *process) freeze() error {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
	<-p.ctx.Done()
	return errExited
}

func (p *process) isFrozen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frozen
}
