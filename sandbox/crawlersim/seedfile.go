package crawlersim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// A 1.x crawler takes a seed file (upstream-2026.md §4.4): --seedFile, or
// seedFile in the crawl config, naming a file of URLs, one a line. Given
// as an http(s) URL it is downloaded at every process start; each
// non-empty line becomes a seed with the config-level scope options, after
// the config's own seeds. A download that fails is fatal (exit 17).

// seedFileTimeout bounds the download of a seed file.
const seedFileTimeout = time.Minute

// withSeedFile returns opts with the seed file's URLs added to its seeds;
// opts without a seed file come back as they are.
func (p *process) withSeedFile(opts map[string]any) (map[string]any, error) {
	src := optString(opts, "seedFile", "")
	if src == "" {
		return opts, nil
	}
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		return nil, fmt.Errorf("seed file %q: only seed files given by http(s) URL are simulated", src)
	}
	ctx := p.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	body, err := fetchSeedFile(ctx, p.dial(), src)
	if err != nil {
		return nil, fmt.Errorf("reading seed file: %w", err)
	}
	var seeds []any
	if v, ok := opts["seeds"]; ok && v != nil {
		seeds = toList(v)
	}
	for _, line := range strings.Split(body, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			seeds = append(seeds, line)
		}
	}
	out := make(map[string]any, len(opts))
	for k, v := range opts {
		out[k] = v
	}
	out["seeds"] = seeds
	return out, nil
}

// fetchSeedFile downloads the seed file at url, dialing as the process
// does (cluster names resolve in the sandbox).
func fetchSeedFile(ctx context.Context, dial dialer, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, seedFileTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	transport := &http.Transport{DialContext: dial}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET seed file: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
