package crawlersim

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// The profile browser: browsertrix-crawler 0.11's
// `create-login-profile --interactive --filename /tmp/profile.tar.gz
// --url <start> [--profile @<base>]`, the program of the pod of a
// ProfileJob. It serves the HTTP API the backend calls on port 9223
// (upstream-api-more.md §1.3) over a pretend browser that records the
// origins it visits; /createProfileJS saves them as a profile tar.gz,
// uploads it to STORE_ENDPOINT_URL + STORE_PATH + <filename> and ends the
// process. There is no VNC server.

// ProfileCommand is the command of profile browser pods.
const ProfileCommand = "create-login-profile"

// profileAPIPort is where the real program serves its HTTP API.
const profileAPIPort = 9223

// profileExitDelay is how long the process lives after saving, so the
// answer reaches the backend (the real one exits about 200 ms later).
const profileExitDelay = 200 * time.Millisecond

// profileFiles are the files of a saved profile: a stand-in for Chromium's
// user-data directory, whose cookie file names the origins visited.
const profileCookies = "Default/Cookies"

// profileStore moves profile files to and from the pod's storage; keys are
// relative to STORE_ENDPOINT_URL + STORE_PATH.
type profileStore interface {
	put(ctx context.Context, key string, data []byte) error
	get(ctx context.Context, key string) ([]byte, error)
}

// profileBrowser is one run of the program.
type profileBrowser struct {
	opts     Options
	log      *logger
	store    profileStore
	password string

	mu      sync.Mutex
	origins []string // in order of first visit
	saved   bool
}

// runProfileBrowser runs the profile browser until the backend saves the
// profile (exit 0), saving fails (exit 1) or the pod is deleted.
func runProfileBrowser(ctx context.Context, opts Options, store profileStore) int {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	b := &profileBrowser{opts: opts, log: &logger{out: opts.Stdout, now: opts.Now}, store: store,
		password: opts.Env["VNC_PASS"]}
	cli := parseArgv(opts.Args)
	start := ""
	if urls := optStrings(cli, "seeds"); len(urls) > 0 { // --url is an alias of --seeds
		start = urls[0]
	}
	if !b.visit(start) {
		b.log.log(levelFatal, "general", "Invalid start URL", map[string]any{"url": start})
		return 1
	}
	if base := optString(cli, "profile", ""); base != "" {
		if err := b.loadProfile(ctx, base); err != nil {
			b.log.log(levelFatal, "general", "Profile could not be loaded", map[string]any{"profile": base, "error": err.Error()})
			return 1
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(opts.ListenHost, fmt.Sprint(profileAPIPort)))
	if err != nil {
		b.log.log(levelFatal, "general", "Profile browser API not started", map[string]any{"error": err.Error()})
		return 1
	}
	done := make(chan int, 1)
	srv := &http.Server{Handler: b.handler(done), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	b.log.info("general", "Profile browser ready", map[string]any{"url": start, "port": profileAPIPort})
	select {
	case code := <-done:
		time.Sleep(profileExitDelay)
		return code
	case <-ctx.Done():
		return 0
	}
}

func (b *profileBrowser) handler(done chan<- int) http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /vncpass", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, map[string]string{"password": b.password})
	})
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, map[string]any{"pong": true, "origins": b.visited()})
	})
	mux.HandleFunc("POST /navigate", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			URL string `json:"url"`
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil || !b.visit(in.URL) {
			reply(w, http.StatusBadRequest, map[string]string{"error": "invalid url"})
			return
		}
		reply(w, http.StatusOK, map[string]bool{"success": true})
	})
	mux.HandleFunc("POST /createProfileJS", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Filename string `json:"filename"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		res, err := b.save(r.Context(), in.Filename)
		if err != nil {
			b.log.log(levelError, "general", "Saving the profile failed", map[string]any{"error": err.Error()})
			reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			done <- 1
			return
		}
		reply(w, http.StatusOK, map[string]any{"resource": res, "origins": b.visited()})
		done <- 0
	})
	return mux
}

// visit records the origin of an http(s) URL; false if it is none.
func (b *profileBrowser) visit(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	origin := u.Scheme + "://" + u.Host
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Contains(b.origins, origin) {
		b.origins = append(b.origins, origin)
	}
	return true
}

func (b *profileBrowser) visited() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.origins)
}

// loadProfile starts from a saved profile: "@<key>" is downloaded from
// storage, as the crawler does; its origins count as visited.
func (b *profileBrowser) loadProfile(ctx context.Context, ref string) error {
	key, ok := strings.CutPrefix(ref, "@")
	if !ok {
		return fmt.Errorf("only stored profiles (@<key>) are simulated")
	}
	data, err := b.store.get(ctx, key)
	if err != nil {
		return err
	}
	origins, err := profileOrigins(data)
	if err != nil {
		return err
	}
	for _, o := range origins {
		b.visit(o)
	}
	return nil
}

// profileResource is the answer's resource: path is the filename as
// sent, hash the sha256 of the file.
type profileResource struct {
	Path  string `json:"path"`
	Hash  string `json:"hash"`
	Bytes int    `json:"bytes"`
}

// save writes the profile archive and uploads it as filename. It can
// happen once: the real browser closes while saving.
func (b *profileBrowser) save(ctx context.Context, filename string) (*profileResource, error) {
	b.mu.Lock()
	if b.saved {
		b.mu.Unlock()
		return nil, errors.New("the browser is closed")
	}
	b.saved = true
	b.mu.Unlock()
	if filename == "" || strings.Contains(filename, "/") {
		return nil, fmt.Errorf("invalid filename %q", filename)
	}
	data, err := profileArchive(b.visited())
	if err != nil {
		return nil, err
	}
	if err := b.store.put(ctx, filename, data); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return &profileResource{Path: filename, Hash: hex.EncodeToString(sum[:]), Bytes: len(data)}, nil
}

// profileArchive is a profile tar.gz whose cookie file lists origins.
func profileArchive(origins []string) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	cookies := []byte(strings.Join(origins, "\n") + "\n")
	files := []struct {
		name string
		data []byte
	}{{"Default/Preferences", []byte(`{"profile":{"name":"trawler crawlersim"}}`)}, {profileCookies, cookies}}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o600, Size: int64(len(f.data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// profileOrigins reads the origins a profile archive holds; anything that
// is not a profile archive is an error.
func profileOrigins(data []byte) ([]string, error) {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading profile: %w", err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("reading profile: no %s: %w", profileCookies, err)
		}
		if h.Name != profileCookies {
			continue
		}
		var cookies bytes.Buffer
		if _, err := cookies.ReadFrom(tr); err != nil {
			return nil, fmt.Errorf("reading profile: %w", err)
		}
		return strings.Fields(cookies.String()), nil
	}
}

// loadProfile is the crawler's profile load when it launches the browser,
// after queueing the seeds: "@<key>" is downloaded from
// STORE_ENDPOINT_URL + STORE_PATH + key, anything else is a local file.
// A profile that cannot be loaded is an exception, so the crawl fails as
// the crawler's does (failing, then failed).
func (p *process) loadProfile() error {
	if p.p.profile == "" {
		return nil
	}
	var data []byte
	var err error
	if key, ok := strings.CutPrefix(p.p.profile, "@"); ok {
		data, err = podStorage{s: newStorage(p.opts.Env, p.opts.Hostname), dial: p.opts.Dial}.get(p.ctx, key)
	} else {
		data, err = os.ReadFile(p.resolvePath(p.p.profile))
	}
	if err == nil {
		var origins []string
		if origins, err = profileOrigins(data); err == nil {
			p.log.info("browser", "Loaded profile", map[string]any{"profile": p.p.profile, "origins": origins})
			return nil
		}
	}
	return fmt.Errorf("loading profile %s: %w", p.p.profile, err)
}
