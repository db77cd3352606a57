package crawlersim_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"net/http"
	"slices"
	"testing"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
)

// profileTarGz is a profile archive as the profile browser saves it.
func profileTarGz(t *testing.T, origins string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "Default/Cookies", Mode: 0o600, Size: int64(len(origins))}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(origins))
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// TestCrawlWithProfile: --profile @<key> is downloaded from the crawl's
// storage folder before crawling; a missing one is an exception out of the
// crawl (failing, exit 9, failed on the third within the window), as the
// crawler's profile download fails.
func TestCrawlWithProfile(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, seedConfig("https://example.com/?sim-pages=3&sim-bytes=1000"), "--sim.failWindow 600")
	b, err := s3.New(testStorage(testS3), s3.Options{Transport: &http.Transport{DialContext: testDNS.Dial}})
	if err != nil {
		t.Fatal(err)
	}
	data := profileTarGz(t, "https://example.com\n")
	if _, err := b.Put(t.Context(), c.env["STORE_PATH"]+"profiles/p.tar.gz", bytes.NewReader(data), int64(len(data)), ""); err != nil {
		t.Fatal(err)
	}
	withProfile := func(ref string) func(*crawlersim.Options) {
		return func(o *crawlersim.Options) { o.Args = append(slices.Clone(o.Args), "--profile", ref) }
	}

	missing := newCrawl(t, seedConfig("https://example.com/?sim-pages=3"), "--sim.failWindow 600")
	mon := missing.monitor()
	in := missing.instance(0)
	var want []string
	for run, status := range []string{"failing", "failing", "failed"} {
		if code := in.run(run, withProfile("@profiles/missing.tar.gz")); code != 9 {
			t.Fatalf("run %d with a missing profile: exit %d, want 9; log:\n%s", run, code, in.out.String())
		}
		want = append(want, "running", status)
		mon.expectStatuses(missing, in.host, want)
	}
	if n := missing.done(); n != 0 {
		t.Fatalf("%d pages crawled without the profile", n)
	}

	in = c.instance(0)
	if code := in.run(0, withProfile("@profiles/p.tar.gz")); code != 0 {
		t.Fatalf("exit %d with the profile; log:\n%s", code, in.out.String())
	}
	if in.logged("Loaded profile") != 1 || c.done() != 3 {
		t.Fatalf("profile loaded %d times, %d pages; log:\n%s", in.logged("Loaded profile"), c.done(), in.out.String())
	}
}
