package api

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func memMember(name string, data []byte) zipMember {
	return zipMember{resource: resourceOut{Name: name, Path: "https://signed/" + name, Hash: "h-" + name, Size: int64(len(data)), CrawlID: "c"},
		open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
}

func TestWriteMultiWACZ(t *testing.T) {
	files := map[string][]byte{
		"oid/manual-1.wacz":             bytes.Repeat([]byte("a"), 3*multiWACZChunk+17),
		"oid/uploads/u1/test-abcd.wacz": []byte("PK small"),
	}
	members := []zipMember{memMember("oid/manual-1.wacz", files["oid/manual-1.wacz"]),
		memMember("oid/uploads/u1/test-abcd.wacz", files["oid/uploads/u1/test-abcd.wacz"])}
	var buf bytes.Buffer
	if started, err := writeMultiWACZ(context.Background(), &buf, members); err != nil || !started {
		t.Fatal(started, err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != 3 || zr.File[2].Name != "datapackage.json" {
		t.Fatalf("members %v", zr.File)
	}
	for _, f := range zr.File {
		if f.Method != zip.Store || !f.Modified.Equal(zipEpoch) || f.Mode().Perm() != 0o664 {
			t.Errorf("%s: method %d modified %v mode %v", f.Name, f.Method, f.Modified, f.Mode())
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if f.Name == "datapackage.json" {
			var pkg multiWACZPackage
			if err := json.Unmarshal(got, &pkg); err != nil || pkg.Profile != "multi-wacz-package" || len(pkg.Resources) != 2 ||
				pkg.Resources[0].Path != "oid/manual-1.wacz" || pkg.Resources[1].Hash != "h-oid/uploads/u1/test-abcd.wacz" {
				t.Fatalf("datapackage %s %v", got, err)
			}
			continue
		}
		if !bytes.Equal(got, files[f.Name]) {
			t.Errorf("%s: content differs", f.Name)
		}
	}

	// An empty collection is a zip with datapackage.json alone.
	buf.Reset()
	if _, err := writeMultiWACZ(context.Background(), &buf, nil); err != nil {
		t.Fatal(err)
	}
	if zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil || len(zr.File) != 1 {
		t.Fatalf("empty: %v %v", zr, err)
	}

	// A first member that cannot be opened fails before anything is sent;
	// a short one fails the download.
	gone := zipMember{resource: resourceOut{Name: "gone"}, open: func(context.Context) (io.ReadCloser, error) { return nil, errTest }}
	if started, err := writeMultiWACZ(context.Background(), io.Discard, []zipMember{gone}); started || !errors.Is(err, errTest) {
		t.Fatalf("unopenable: %v %v", started, err)
	}
	short := memMember("short", []byte("abc"))
	short.resource.Size = 10
	if _, err := writeMultiWACZ(context.Background(), io.Discard, []zipMember{short}); err == nil || !strings.Contains(err.Error(), "read 3 bytes") {
		t.Fatalf("short member: %v", err)
	}
}
