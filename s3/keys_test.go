package s3

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateKey(t *testing.T) {
	ok := []string{
		"a", "oid/file.wacz", "oid/uploads/id/x y.wacz", "oid/dir/", "oid/ünïcödé.wacz",
		"oid/..wacz", "oid/a..b", "oid/.hidden", strings.Repeat("k", 1024),
	}
	for _, k := range ok {
		if err := ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", k, err)
		}
	}
	bad := map[string]string{
		"":                        "empty",
		"/oid/x":                  "starts with /",
		"oid/../other/x":          `".."`,
		"..":                      `".."`,
		"oid/..":                  `".."`,
		"oid/./x":                 `"."`,
		"oid//x":                  "empty segment",
		"oid/x\x00":               "control",
		"oid/x\ny":                "control",
		"oid/x\ty":                "control",
		"oid/\x7f":                "control",
		"oid/\u0085":              "control",
		"oid\\..\\x":              "backslash",
		"oid/\xff":                "UTF-8",
		strings.Repeat("k", 1025): "1024",
	}
	for k, reason := range bad {
		err := ValidateKey(k)
		var kerr *KeyError
		if !errors.Is(err, ErrInvalidKey) || !errors.As(err, &kerr) || !strings.Contains(kerr.Reason, reason) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey about %s", k, err, reason)
		}
	}
}

func TestOrgKeysStayInTheirFolder(t *testing.T) {
	const oid = "2f0c1e9a-5b1b-4d9c-9a57-6f1c0d7c1a11"
	key, err := OrgKey(oid, "uploads/u1/file.wacz")
	if err != nil || key != oid+"/uploads/u1/file.wacz" {
		t.Fatalf("OrgKey = %q, %v", key, err)
	}
	for _, name := range []string{"", "../other/x.wacz", "/x.wacz", "a/../../x", "x\x01"} {
		if k, err := OrgKey(oid, name); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("OrgKey(%q) = %q, %v; want ErrInvalidKey", name, k, err)
		}
	}
	for _, o := range []string{"", "a/b", "..", "x\n"} {
		if _, err := OrgKey(o, "f.wacz"); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("OrgKey with org %q: %v, want ErrInvalidKey", o, err)
		}
	}

	if err := InOrg(oid, oid+"/20260101-x.wacz"); err != nil {
		t.Errorf("InOrg own file: %v", err)
	}
	for _, k := range []string{
		"other/f.wacz", oid + "/", oid, oid + "x/f.wacz", oid + "/../other/f.wacz", "/" + oid + "/f.wacz",
	} {
		if err := InOrg(oid, k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("InOrg(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestConfigEndpoints(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name   string
		cfg    Config
		store  string
		access string
		via    bool
	}{
		{"chart entry", Config{EndpointURL: "http://minio:9000/", BucketName: "btrix-data"},
			"http://minio:9000/btrix-data/", "http://minio:9000/btrix-data/", true},
		{"no trailing slash", Config{EndpointURL: "http://minio:9000", BucketName: "b"},
			"http://minio:9000/b/", "http://minio:9000/b/", true},
		{"org storage with prefix", Config{EndpointURL: "https://s3.example.com/bucket/pre/"},
			"https://s3.example.com/bucket/pre/", "https://s3.example.com/bucket/pre/", true},
		{"public access endpoint", Config{EndpointURL: "http://minio:9000/", BucketName: "b", AccessEndpointURL: "https://files.example.com/b"},
			"http://minio:9000/b/", "https://files.example.com/b/", true},
		{"proxy path", Config{EndpointURL: "http://minio:9000/", BucketName: "b", AccessEndpointURL: "/data/"},
			"http://minio:9000/b/", "/data/", false},
		{"explicit rewrite", Config{EndpointURL: "http://minio:9000/", BucketName: "b", AccessEndpointURL: "https://x/b/", UseAccessForPresign: &no},
			"http://minio:9000/b/", "https://x/b/", false},
		{"explicit direct", Config{EndpointURL: "http://minio:9000/", BucketName: "b", UseAccessForPresign: &yes},
			"http://minio:9000/b/", "http://minio:9000/b/", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.cfg.StoreEndpointURL(); got != c.store {
				t.Errorf("StoreEndpointURL = %q, want %q", got, c.store)
			}
			if got := c.cfg.accessEndpoint(); got != c.access {
				t.Errorf("access endpoint = %q, want %q", got, c.access)
			}
			if got := c.cfg.presignViaAccess(); got != c.via {
				t.Errorf("presignViaAccess = %v, want %v", got, c.via)
			}
			env := c.cfg.CrawlerEnv()
			if env["STORE_ENDPOINT_URL"] != c.store || env["STORE_ACCESS_ENDPOINT_URL"] != c.access {
				t.Errorf("crawler env %v", env)
			}
		})
	}
}

func TestParseEndpoint(t *testing.T) {
	ep, err := parseEndpoint("https://s3.example.com:8443/bucket/a/b")
	if err != nil || !ep.secure || ep.host != "s3.example.com:8443" || ep.bucket != "bucket" || ep.prefix != "a/b/" ||
		ep.base != "https://s3.example.com:8443/bucket/a/b/" {
		t.Fatalf("parseEndpoint = %+v, %v", ep, err)
	}
	for _, bad := range []string{"", "minio:9000/b/", "ftp://h/b/", "http://h/", "http://h", "http://u:p@h/b/",
		"http://h/b/?x=1", "http://h/b/../c/", "/data/"} {
		if _, err := parseEndpoint(bad); err == nil {
			t.Errorf("parseEndpoint(%q) accepted", bad)
		}
	}
}
