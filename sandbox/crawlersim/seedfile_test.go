package crawlersim_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestSeedFile: a crawler given a seed file by URL, in its config
// (seedFile, as the operator writes it) or as --seedFile, downloads it and
// crawls exactly its URLs, each page-scoped; a seed file it cannot
// download is fatal (exit 17).
func TestSeedFile(t *testing.T) {
	urls := []string{"https://specs.webrecorder.net/", "https://old.webrecorder.net/", "https://example.com/a?sim-pages=5"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/seeds.txt" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(urls[0] + "\n\n" + urls[1] + "\r\n" + urls[2]))
	}))
	t.Cleanup(srv.Close) // the parallel subtests run after this function returns
	pageScoped := func(extra map[string]any) map[string]any {
		cfg := map[string]any{"scopeType": "page", "limit": 0}
		for k, v := range extra {
			cfg[k] = v
		}
		return cfg
	}
	for _, tc := range []struct {
		name string
		cfg  map[string]any
		args string
	}{
		{"config", pageScoped(map[string]any{"seedFile": srv.URL + "/seeds.txt"}), ""},
		{"argument", pageScoped(nil), "--seedFile " + srv.URL + "/seeds.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCrawl(t, tc.cfg, tc.args)
			in := c.instance(0)
			if code := in.run(0, nil); code != 0 {
				t.Fatalf("exit %d; log:\n%s", code, in.out.String())
			}
			got := in.pages()
			slices.Sort(got)
			want := slices.Clone(urls)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("pages %v, want the seed file's URLs %v", got, want)
			}
		})
	}
	t.Run("download fails", func(t *testing.T) {
		t.Parallel()
		c := newCrawl(t, pageScoped(map[string]any{"seedFile": srv.URL + "/gone.txt"}), "")
		in := c.instance(0)
		if code := in.run(0, nil); code != 17 {
			t.Fatalf("exit %d, want 17; log:\n%s", code, in.out.String())
		}
	})
}
