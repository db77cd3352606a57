package wacztest

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// testdata/sim.wacz is a WACZ the crawler simulator wrote: four pages of
// two origins (one page queued with a fragment), each origin's
// stylesheet and image, and no padding.
func fixture(t *testing.T) (names []string, files map[string][]byte) {
	t.Helper()
	data, err := os.ReadFile("testdata/sim.wacz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	files = map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, err = b.ReadFrom(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, f.Name)
		files[f.Name] = b.Bytes()
	}
	return names, files
}

// repack zips the files again with a datapackage.json and digest that
// match them, so that a change inside is what Inspect has to find.
func repack(t *testing.T, names []string, files map[string][]byte, warcMethod uint16) []byte {
	t.Helper()
	var res []resource
	for _, n := range names {
		if n != "datapackage.json" && n != "datapackage-digest.json" {
			body := files[n]
			res = append(res, resource{Name: n[strings.LastIndex(n, "/")+1:], Path: n, Hash: sha(body), Bytes: int64(len(body))})
		}
	}
	pkg, _ := json.Marshal(map[string]any{"profile": "data-package", "wacz_version": "1.1.1", "created": "2023-09-11T17:30:00Z", "resources": res})
	digest, _ := json.Marshal(map[string]string{"path": "datapackage.json", "hash": sha(pkg)})
	files["datapackage.json"], files["datapackage-digest.json"] = pkg, digest
	return zipFiles(t, names, files, warcMethod)
}

// zipFiles zips the files as they are.
func zipFiles(t *testing.T, names []string, files map[string][]byte, warcMethod uint16) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		method := zip.Deflate
		if strings.HasPrefix(n, "archive/") {
			method = warcMethod
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: method})
		if err == nil {
			_, err = w.Write(files[n])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReplaysTheSimulatorsWACZ(t *testing.T) {
	names, files := fixture(t)
	w, err := Inspect(repack(t, names, files, zip.Store))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := w.CheckReplay()
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 4 || w.Records["response"] != 8 || w.Records["request"] != 8 {
		t.Errorf("%d pages, records %v; want 4 pages, 8 responses and requests", len(pages), w.Records)
	}
	for _, p := range pages {
		if len(p.Resources) != 3 {
			t.Errorf("%s embeds %d resources, want an icon, a stylesheet and an image", p.URL, len(p.Resources))
		}
	}
	if c, err := w.Lookup("https://example.net/app#intro"); err != nil || c.URL != "https://example.net/app" || c.Mime != "text/html" {
		t.Errorf("lookup of a URL with a fragment: %+v, %v", c, err)
	}
	if _, err := w.Lookup("https://example.com/docs/sim/3"); !errors.Is(err, ErrNotFound) {
		t.Errorf("lookup of an uncaptured URL: %v, want ErrNotFound", err)
	}
}

// TestInspectRejects breaks one thing at a time in an otherwise valid
// WACZ.
func TestInspectRejects(t *testing.T) {
	const index, pages = "indexes/index.cdx", "pages/pages.jsonl"
	edit := func(name string, f func(string) string) func(map[string][]byte) {
		return func(files map[string][]byte) { files[name] = []byte(f(string(files[name]))) }
	}
	for _, tc := range []struct {
		name   string
		change func(map[string][]byte)
		method uint16
		want   string
	}{
		{"WARCs deflated", nil, zip.Deflate, "WARCs must be stored"},
		{"index unsorted", edit(index, func(s string) string {
			l := strings.Split(strings.TrimSpace(s), "\n")
			l[0], l[1] = l[1], l[0]
			return strings.Join(l, "\n") + "\n"
		}), zip.Store, "not sorted"},
		{"key that is not Python's SURT", edit(index, func(s string) string {
			return strings.Replace(s, "com,example)/docs?sim-links=2&sim-pages=3 ", "com,example)/docs?sim-links=2&sim-pages=3/ ", 1)
		}), zip.Store, "the SURT of"},
		{"offset off by one", edit(index, func(s string) string { return strings.Replace(s, `"offset":"636"`, `"offset":"637"`, 1) }), zip.Store, "no record starts"},
		{"length short", edit(index, func(s string) string { return strings.Replace(s, `"length":"485"`, `"length":"484"`, 1) }), zip.Store, "takes 485 bytes"},
		{"digest wrong", edit(index, func(s string) string {
			return strings.Replace(s, "sha1:QCQJVPGLL26A3BSNFHQBPEUWFCRCTTQZ", "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 1)
		}), zip.Store, "digest"},
		{"a response not indexed", edit(index, func(s string) string {
			l := strings.Split(strings.TrimSpace(s), "\n")
			return strings.Join(l[1:], "\n") + "\n"
		}), zip.Store, "not indexed"},
		{"page without an id", edit(pages, func(s string) string { return strings.Replace(s, `"id":"f25bfabd8d421f0f",`, "", 1) }), zip.Store, `id "" missing`},
		{"page ids not unique", edit(pages, func(s string) string { return strings.Replace(s, "f25bfabd8d421f0f", "0d120b9b52fd2156", 1) }), zip.Store, "not unique"},
		{"log line not JSON", func(files map[string][]byte) {
			files["logs/crawl.log"] = []byte(`{"logLevel":"info"}` + "\noops\n")
		}, zip.Store, "logs/crawl.log line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names, files := fixture(t)
			if tc.change != nil {
				tc.change(files)
			}
			for n := range files {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			_, err := Inspect(repack(t, names, files, tc.method))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Inspect: %v, want an error with %q", err, tc.want)

			}
		})
	}
	t.Run("datapackage.json out of date", func(t *testing.T) {
		names, files := fixture(t)
		files[pages] = append(files[pages], '\n')
		if _, err := Inspect(zipFiles(t, names, files, zip.Store)); err == nil || !strings.Contains(err.Error(), "datapackage.json says") {
			t.Errorf("Inspect: %v, want the changed entry's hash", err)
		}
	})
}

// TestCheckReplayComparesTitles: a page whose archived <title> is not
// the title pages.jsonl gives it fails the replay check.
func TestCheckReplayComparesTitles(t *testing.T) {
	names, files := fixture(t)
	files["pages/pages.jsonl"] = bytes.Replace(files["pages/pages.jsonl"], []byte(`"title":"Simulated page 1"`), []byte(`"title":"Another title"`), 1)
	w, err := Inspect(repack(t, names, files, zip.Store))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.CheckReplay(); err == nil || !strings.Contains(err.Error(), `pages.jsonl says "Another title"`) {
		t.Errorf("CheckReplay: %v, want the title mismatch", err)
	}
}
