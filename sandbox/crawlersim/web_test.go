package crawlersim

import (
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"
)

func testSeed(t *testing.T, url string, site siteKnobs) *scopedSeed {
	t.Helper()
	s, err := newScopedSeed(seedSpec{url: url, depth: -1})
	if err != nil {
		t.Fatal(err)
	}
	s.site = site
	return s
}

func TestSyntheticLinks(t *testing.T) {
	site := siteKnobs{pages: 10, links: 3, pageMs: 100, bytes: 7}
	k := &knobs{outlinks: 3}
	for _, tc := range []struct {
		name, seed, page string
		want             []string
	}{
		{"seed below the root", "https://example.com/docs/", "https://example.com/docs/", []string{
			"https://example.com/docs/sim/1", "https://example.com/docs/sim/2", "https://example.com/docs/sim/3",
			"https://example.com/sim-up/0/0", "https://sim-sub.example.com/0/1", "https://sim-ext.invalid/0/2",
		}},
		{"inner page links back to the seed", "https://example.com/docs/", "https://example.com/docs/sim/2", []string{
			"https://example.com/docs/sim/7", "https://example.com/docs/sim/8", "https://example.com/docs/sim/9",
			"https://example.com/docs/", "https://sim-ext.invalid/2/0", "https://example.com/sim-up/2/1", "https://sim-sub.example.com/2/2",
		}},
		{"children stop at the site size", "https://example.com/docs/", "https://example.com/docs/sim/3", []string{
			"https://example.com/docs/", "https://example.com/sim-up/3/0", "https://sim-sub.example.com/3/1", "https://sim-ext.invalid/3/2",
		}},
		{"no same-host outlink from a root seed", "http://127.0.0.1:8080/?x=1", "http://127.0.0.1:8080/sim/3", []string{
			"http://127.0.0.1:8080/?x=1", "http://sim-sub.127.0.0.1:8080/3/1", "https://sim-ext.invalid/3/2",
		}},
		{"pages outside the site are leaves", "https://example.com/docs/", "https://example.com/docs/sim/10", nil},
		{"non-canonical page numbers are not pages", "https://example.com/docs/", "https://example.com/docs/sim/03", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSeed(t, tc.seed, site)
			if got := s.load(tc.page, k).links; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("links of %s:\n got %q\nwant %q", tc.page, got, tc.want)
			}
		})
	}
}

func TestSyntheticPageIsDeterministic(t *testing.T) {
	site := siteKnobs{pages: 1000, links: 3, pageMs: 100, fail: 0.3, bytes: 7}
	k := &knobs{outlinks: 1, pageJitter: 0.3, hangURL: regexp.MustCompile("sim/5$")}
	s := testSeed(t, "https://example.com/", site)
	failed := 0
	for i := range 1000 {
		u := "https://example.com/sim/" + strconv.Itoa(i)
		a, b := s.load(u, k), s.load(u, k)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s loads differently: %+v vs %+v", u, a, b)
		}
		if a.duration < 70*time.Millisecond || a.duration > 130*time.Millisecond {
			t.Errorf("%s takes %v, outside 100 ms ± 30%%", u, a.duration)
		}
		if a.fails {
			failed++
		}
	}
	if failed < 250 || failed > 350 {
		t.Errorf("%d of 1000 pages fail, want about 300", failed)
	}
	if !s.load("https://example.com/sim/5", k).hangs || s.load("https://example.com/sim/6", k).hangs {
		t.Error("sim.hangUrlRx not applied")
	}
}

// TestSyntheticHTTPErrors: sim.httpError picks about its fraction of pages by
// URL, the same ones on every load; sim.statusUrlRx picks its pages first;
// sim.noise picks loaded pages and spreads them over every noise line.
func TestSyntheticHTTPErrors(t *testing.T) {
	site := siteKnobs{pages: 1000, links: 3, pageMs: 100, httpError: 0.3, httpStatus: 503,
		statusURL: regexp.MustCompile("sim/7$"), urlStatus: 410, noise: 0.2}
	s := testSeed(t, "https://example.com/", site)
	k := &knobs{}
	statuses := map[int]int{}
	lines := make([]int, len(noiseLines))
	for i := range 1000 {
		u := "https://example.com/sim/" + strconv.Itoa(i)
		a := s.load(u, k)
		if !reflect.DeepEqual(a, s.load(u, k)) {
			t.Fatalf("%s loads differently", u)
		}
		statuses[a.status]++
		if a.noise >= 0 {
			lines[a.noise]++
		}
	}
	if got := s.load("https://example.com/sim/7", k).status; got != 410 {
		t.Errorf("sim/7 answers %d, want the pattern's 410", got)
	}
	if n := statuses[503]; n < 250 || n > 350 || statuses[410] != 1 || statuses[0]+n+1 != 1000 {
		t.Errorf("statuses %v, want about 300 pages with 503, one with 410 and the rest 200", statuses)
	}
	noisy := 0
	for i, n := range lines {
		if n == 0 {
			t.Errorf("no page logs %q", noiseLines[i].message)
		}
		noisy += n
	}
	if noisy < 150 || noisy > 250 {
		t.Errorf("%d of 1000 pages log a noise line, want about 200", noisy)
	}
	s.site = siteKnobs{pages: 1000, links: 3}
	if a := s.load("https://example.com/sim/7", k); a.status != 0 || a.noise != -1 {
		t.Errorf("with the knobs off, sim/7 loads as %+v", a)
	}
}
