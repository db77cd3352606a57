package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/trawlerhq/trawler/s3"
)

// storageAccess returns, by path, the access proxies of the storages
// whose download links point at a path on trawler's own origin (such as
// /data/), so that a browser on the dashboard reads the files without
// CORS. Two storages cannot share a path: their keys would be ambiguous.
func storageAccess(storages []s3.Config, objects *s3.Registry, transport http.RoundTripper) (map[string]http.Handler, error) {
	proxies := map[string]http.Handler{}
	owner := map[string]string{}
	for _, cfg := range storages {
		b, err := objects.Named(cfg.Name)
		if err != nil {
			return nil, err
		}
		path := b.AccessPath()
		if path == "" {
			continue
		}
		if other, taken := owner[path]; taken {
			return nil, fmt.Errorf("storages %q and %q both have access_endpoint_url %s: give each its own path", other, cfg.Name, path)
		}
		if path == "/" || strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/replay/") {
			return nil, fmt.Errorf("storage %q: access_endpoint_url %s would hide the API or the dashboard: use a path such as /data/", cfg.Name, path)
		}
		owner[path] = cfg.Name
		proxies[path] = s3.NewAccessProxy(b, transport)
	}
	return proxies, nil
}

// withStorageAccess serves the access paths in front of next. It must sit
// in front of any http.ServeMux: a mux would answer a path holding ".."
// with a redirect to its cleaned form instead of the proxy's 404.
func withStorageAccess(next http.Handler, proxies map[string]http.Handler) http.Handler {
	if len(proxies) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for path, proxy := range proxies {
			if strings.HasPrefix(r.URL.Path, path) {
				proxy.ServeHTTP(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// applyStorageCORS sets the CORS rules of the storages that list
// cors_allowed_origins. A storage that refuses is logged, not fatal: the
// API still serves, only replay from those origins may fail.
func applyStorageCORS(ctx context.Context, storages []s3.Config, objects *s3.Registry, logger *slog.Logger) {
	for _, cfg := range storages {
		b, err := objects.Named(cfg.Name)
		if err != nil {
			continue
		}
		if err := b.ApplyCORS(ctx); err != nil {
			logger.Warn("cannot set the storage's CORS rules; replay from its cors_allowed_origins may fail",
				"storage", cfg.Name, "err", err)
		}
	}
}
