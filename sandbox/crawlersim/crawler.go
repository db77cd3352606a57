package crawlersim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Instance statuses the crawler writes to <id>:status.
const (
	statusRunning     = "running"
	statusPendingWait = "pending-wait"
	statusGenWACZ     = "generate-wacz"
	statusUploading   = "uploading-wacz"
	statusDone        = "done"
	statusInterrupted = "interrupted"
	statusFailing     = "failing"
	statusFailed      = "failed"
	statusDebug       = "debug"
)

// postCrawlStatuses resume straight into packaging and upload.
var postCrawlStatuses = map[string]bool{
	statusGenWACZ: true, statusUploading: true, "generate-cdx": true, "generate-warc": true,
}

// main runs the process and returns its exit code.
func (p *process) main() int {
	params, err := p.parseParams()
	if err != nil {
		_ = p.fatal(err.Error(), nil)
		return 17
	}
	p.mu.Lock()
	p.p = params
	p.scale = params.sim.timeScale
	if p.opts.TimeScale > 0 {
		p.scale = p.opts.TimeScale
	}
	p.mu.Unlock()
	p.log.setDebug(params.debugLogging)
	p.serveHealthCheck(params.healthCheckPort)
	for _, w := range params.seedWarnings {
		p.log.warn("general", w, nil)
	}
	if params.sim.fatalAtStart && p.faultsActive() {
		_ = p.fatal("Simulated fatal error at start (--sim.fatalAtStart)", nil)
		return 17
	}
	p.arch = &archive{
		dir:      filepath.Join(p.workDir(), "collections", params.collection),
		name:     params.collection,
		hostname: p.opts.Hostname,
		session:  tsDigits(p.opts.Now()),
		run:      p.opts.Restarts,
	}
	if params.generateWACZ {
		p.store = newStorage(p.opts.Env, p.opts.Hostname)
	}
	if err := p.arch.init(); err != nil {
		_ = p.fatal(err.Error(), nil)
		return 17
	}
	logFile, err := p.arch.logFile()
	if err != nil {
		_ = p.fatal(err.Error(), nil)
		return 17
	}
	defer logFile.Close()
	p.log.setFile(logFile)
	defer p.log.setFile(nil)
	if err := p.sleep(params.sim.bootDelay); err != nil {
		return 0
	}
	if err := p.connect(); err != nil {
		return 0
	}
	return p.run()
}

// parseParams reads argv plus CRAWL_ARGS, then the config file underneath.
func (p *process) parseParams() (*params, error) {
	argv := append(append([]string{}, p.opts.Args...), splitCrawlArgs(p.opts.Env["CRAWL_ARGS"])...)
	cli := parseArgv(argv)
	if _, ok := cli["restartOnError"]; ok {
		p.log.warn("general", "Unknown option --restartOnError ignored (the flag is --restartsOnError)", nil)
	}
	file := map[string]any{}
	if path := optString(cli, "config", ""); path != "" {
		var err error
		if file, err = loadConfigFile(p.resolvePath(path)); err != nil {
			return nil, err
		}
	}
	opts, err := p.withSeedFile(mergeOptions(cli, file))
	if err != nil {
		return nil, err
	}
	return newParams(opts, p.opts.Env, p.opts.Hostname, tsDigits(p.opts.Now()))
}

// connect opens the crawl state, retrying every second until Redis
// answers, and makes the process "ready" (signals now interrupt).
func (p *process) connect() error {
	url := p.p.redisURL
	if !strings.HasPrefix(url, "redis://") {
		return p.fatal("stateStoreUrl must start with redis:// -- Only redis-based store currently supported", nil)
	}
	ropts, err := redis.ParseURL(url)
	if err != nil {
		return p.fatal("Invalid redis state store url", map[string]any{"url": url, "error": err.Error()})
	}
	ropts = p.redisOptions(ropts)
	p.rdb = redis.NewClient(ropts)
	for {
		if !p.p.sim.redisUnreachable || !p.faultsActive() {
			// A plain dial first: the client's pool logs every failed dial
			// to stderr, and waiting for Redis is the normal start.
			if conn, err := ropts.Dialer(p.ctx, "tcp", ropts.Addr); err == nil {
				conn.Close()
				if p.rdb.Ping(p.ctx).Err() == nil {
					break
				}
			}
			if p.ctx.Err() != nil {
				return errExited
			}
		}
		p.log.warn("state", "Waiting for redis at "+url, nil)
		if err := p.sleep(time.Second); err != nil {
			return err
		}
	}
	p.state = &crawlState{
		rdb:     p.rdb,
		id:      p.p.crawlID,
		uid:     p.opts.Hostname,
		lockTTL: max(p.scaled(time.Duration(p.p.maxPageTime*float64(time.Second))), time.Millisecond),
		do:      p.redisDo,
	}
	if p.p.logErrorsToRedis {
		p.log.setRedisSink(func(line string) { p.state.logError(p.ctx, line) })
	}
	p.mu.Lock()
	p.ready = true
	p.mu.Unlock()
	return nil
}

// dial is Options.Dial, or a plain dialer.
func (p *process) dial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if p.opts.Dial != nil {
		return p.opts.Dial
	}
	return (&net.Dialer{}).DialContext
}

// redisOptions routes connections through Options.Dial and leaves retries
// to redisDo. A reply is waited for however long it takes, as the
// crawler's client waits: with a read timeout, a slow reply on a loaded
// machine turned into a retry of a script that had already run (a second
// pop from the queue, a page counted twice), and a crawl that ended one
// page short.
func (p *process) redisOptions(o *redis.Options) *redis.Options {
	o.Dialer = p.dial()
	o.ReadTimeout = -1
	o.MaxRetries = -1
	o.DialerRetries = 1
	o.DialTimeout = time.Second
	return o
}

// run is the crawler's top level: crawl, then decide the final status and
// exit code; an exception becomes failing (or failed on the third within
// the failcount window) and exit 9.
func (p *process) run() int {
	err := p.crawl()
	if errors.Is(err, errExited) || p.ctx.Err() != nil {
		return 0 // exit already called; its code stands
	}
	if errors.Is(err, errCanceled) {
		p.log.info("general", "Crawl canceled, exiting without uploading", nil)
		return 0
	}
	status, code := statusDone, 0
	if err != nil {
		p.log.error("general", "Crawl failed", exception(err))
		status, code = statusFailing, 9
		failed, ferr := p.state.incFailCount(max(p.scaled(p.p.sim.failWindow), time.Millisecond))
		if ferr != nil {
			return p.unhandled(ferr)
		}
		if failed {
			status = statusFailed
		}
	} else {
		finished, ferr := p.state.isFinished()
		stopped, serr := p.state.isStopped()
		if err := errors.Join(ferr, serr); err != nil {
			return p.unhandled(err)
		}
		interrupted, _, _ := p.flags()
		if !finished && !stopped && interrupted {
			status, code = statusInterrupted, 11
			if p.isPaused() {
				if err := p.finishPause(); err != nil {
					return p.unhandled(err)
				}
				code = 0
			}
		}
	}
	p.log.info("general", "Final crawl status: "+status, nil)
	if err := p.state.setStatus(status); err != nil {
		return p.unhandled(err)
	}
	return code
}

// unhandled ends the process after an error outside the crawl's own
// exception handling, as an uncaught exception ends Node (exit 1). When
// the error is the process already exiting, its code stands.
func (p *process) unhandled(err error) int {
	if errors.Is(err, errExited) || p.ctx.Err() != nil {
		return 0
	}
	p.log.error("general", "Unhandled exception", exception(err))
	return 1
}

// crawl follows the startup table (own status decides whether to crawl,
// package only, or do nothing), then runs the workers and post-crawl.
func (p *process) crawl() error {
	st := p.state
	if err := p.checkCanceled(); err != nil {
		return err
	}
	if err := p.startWACZ(); err != nil {
		return err
	}
	if n, err := st.unlockOwn(); err != nil {
		return err
	} else if n > 0 {
		p.log.info("state", fmt.Sprintf("Unlocked %d pending pages left by a previous run", n), nil)
	}
	status, err := st.status()
	for err == nil && status == statusDebug {
		p.log.info("general", "Paused for debugging, will continue after manual resume", nil)
		if err := p.sleep(60 * time.Second); err != nil {
			return err
		}
		status, err = st.status()
	}
	if err != nil {
		return err
	}
	switch stopped, err := st.isStopped(); {
	case err != nil:
		return err
	case status == statusDone:
		p.log.info("general", "Crawl already done", nil)
		return p.waitWhenDone()
	case postCrawlStatuses[status]:
		p.log.info("general", "Crawl already finished, running post-crawl tasks", map[string]any{"state": status})
		return p.postCrawl()
	case stopped:
		p.log.info("general", "Crawl stopped, running post-crawl tasks", nil)
		p.mu.Lock()
		p.finalExit = true
		p.mu.Unlock()
		return p.postCrawl()
	}
	if err := st.setStatus(statusRunning); err != nil {
		return err
	}
	for i, s := range p.p.seeds {
		if _, err := p.queueURL(i, s.url, 0, 0); err != nil {
			return err
		}
	}
	if err := p.loadProfile(); err != nil {
		return err
	}
	if err := p.runWorkers(); err != nil {
		return err
	}
	done, err := st.numDone()
	if err != nil {
		return err
	}
	queued, err := st.queueSize()
	if err != nil {
		return err
	}
	p.log.info("crawlStatus", "Crawl statistics", map[string]any{"crawled": done, "queued": queued, "pagesThisRun": p.pagesStarted.Load()})
	if err := st.setStatus(statusPendingWait); err != nil {
		return err
	}
	if interrupted, _, _ := p.flags(); !interrupted {
		if err := p.sleep(p.p.sim.pendingWait); err != nil {
			return err
		}
	}
	if stopped, err := st.isStopped(); err != nil {
		return err
	} else if stopped {
		p.mu.Lock()
		p.finalExit = true
		p.mu.Unlock()
	}
	return p.postCrawl()
}

// postCrawl packages and uploads when this is a real end (not an
// interruption meant to be resumed), or when a limit asks to upload and
// free the disk.
func (p *process) postCrawl() error {
	if err := p.checkCanceled(); err != nil {
		return err
	}
	p.log.info("general", "Crawling done", nil)
	interrupted, finalExit, uploadAndDelete := p.flags()
	if p.p.generateWACZ && (!interrupted || finalExit || uploadAndDelete) && !p.pausedWithNothing() {
		uploaded, err := p.generateWACZ()
		if err != nil {
			return err
		}
		if uploaded && uploadAndDelete {
			p.log.info("general", "Uploaded WACZ, deleting local data to free up space", map[string]any{"dir": p.arch.dir})
			if err := p.arch.wipe(); err != nil {
				p.log.warn("general", "Unable to delete local data", map[string]any{"error": err.Error()})
			}
		}
	}
	if p.p.waitOnDone && (!interrupted || finalExit) {
		if err := p.state.setStatus(statusDone); err != nil {
			return err
		}
		return p.waitWhenDone()
	}
	return nil
}

// waitWhenDone implements --waitOnDone: stay up until a signal, then exit
// 0. Without the flag it returns at once.
func (p *process) waitWhenDone() error {
	if !p.p.waitOnDone {
		return nil
	}
	p.mu.Lock()
	p.waitingDone = true
	p.mu.Unlock()
	p.log.info("general", "All done, waiting for signal...", nil)
	<-p.ctx.Done()
	return errExited
}

// generateWACZ builds the WACZ and, when storage is configured, "uploads"
// it and sends the crawls-done message. It reports whether it uploaded.
func (p *process) generateWACZ() (bool, error) {
	st := p.state
	p.log.info("general", "Generating WACZ", nil)
	if err := st.setStatus(statusGenWACZ); err != nil {
		return false, err
	}
	finished, err := st.isFinished()
	if err != nil {
		return false, err
	}
	warcs, err := p.arch.warcs()
	if err != nil {
		return false, err
	}
	if len(warcs) == 0 {
		if finished {
			return false, nil
		}
		stopped, err := st.isStopped()
		if err != nil {
			return false, err
		}
		done, err := st.numDone()
		if err != nil {
			return false, err
		}
		if stopped && done > 0 {
			return false, nil
		}
		if stopped {
			if err := st.setStatus(statusFailed); err != nil {
				return false, err
			}
		}
		return false, p.fatal("No WARC Files, assuming crawl failed", nil)
	}
	if err := p.sleep(p.p.sim.waczTime); err != nil {
		return false, err
	}
	path, size, hash, err := p.arch.wacz(warcs, p.opts.Now())
	if err != nil {
		return false, p.fatal("Error creating WACZ", map[string]any{"error": err.Error()})
	}
	if p.store == nil || p.p.sim.upload == "none" {
		return false, nil
	}
	if err := st.setStatus(statusUploading); err != nil {
		return false, err
	}
	target := p.waczTarget
	if target == "" {
		target = interpolateFilename(p.store.template, p.opts.Now(), p.opts.Hostname, p.p.crawlID)
	}
	if err := p.sleep(p.p.sim.uploadTime); err != nil {
		return false, err
	}
	msg := p.store.message(target, hash, size, finished)
	if p.p.sim.upload == "s3" {
		// A failed upload throws out of the crawl: failing (or failed on
		// the third time in the window), exit 9, and no crawls-done.
		if err := p.store.upload(p.ctx, path, target, p.dial()); err != nil {
			return false, err
		}
	}
	p.log.info("storage", "Uploaded WACZ", map[string]any{"filename": msg.Filename, "size": size, "hash": hash})
	if p.store.webhook != "" {
		if err := p.notify(msg); err != nil {
			return false, err
		}
	}
	return true, nil
}

// notify sends the crawls-done message: RPUSH over a fresh Redis
// connection for redis:// webhooks. Other schemes are not used by
// Browsertrix and are only logged.
func (p *process) notify(msg doneMessage) error {
	body, err := marshalJSON(msg)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(p.store.webhook, "redis://") {
		p.log.warn("storage", "Webhook scheme not simulated, not sent", map[string]any{"url": p.store.webhook})
		return nil
	}
	dbURL, key, err := splitRedisWebhook(p.store.webhook)
	if err != nil {
		return p.fatal(err.Error(), nil)
	}
	ropts, err := redis.ParseURL(dbURL)
	if err != nil {
		return p.fatal("Invalid redis webhook url", map[string]any{"url": p.store.webhook, "error": err.Error()})
	}
	client := redis.NewClient(p.redisOptions(ropts))
	defer client.Close()
	return p.redisDo(func(ctx context.Context) error { return client.RPush(ctx, key, string(body)).Err() })
}
