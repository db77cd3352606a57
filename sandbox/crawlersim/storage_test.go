package crawlersim

import (
	"testing"
	"time"
)

func TestInterpolateFilename(t *testing.T) {
	now := time.Date(2023, 9, 11, 17, 30, 0, 123e6, time.UTC)
	const host = "crawl-manual-20230911173000-0123456789ab-1"
	for _, tc := range []struct{ tmpl, want string }{
		{"@ts-@hostsuffix.wacz", "20230911173000123-0123456789ab-1.wacz"},
		{"@ts-@id.wacz", "20230911173000123-cid.wacz"},
		{"@hostname/@ts.wacz", host + "/20230911173000123.wacz"},
		// Only the first occurrence of each token is replaced.
		{"@ts-@ts-@id-@id.wacz", "20230911173000123-@ts-cid-@id.wacz"},
		{"plain.wacz", "plain.wacz"},
	} {
		if got := interpolateFilename(tc.tmpl, now, host, "cid"); got != tc.want {
			t.Errorf("interpolateFilename(%q) = %q, want %q", tc.tmpl, got, tc.want)
		}
	}
	if got := interpolateFilename("@hostsuffix", now, "short", "x"); got != "short" {
		t.Errorf("@hostsuffix of a short hostname = %q, want the whole name", got)
	}
}

func TestSplitRedisWebhook(t *testing.T) {
	for _, tc := range []struct {
		in, db, key string
		ok          bool
	}{
		{"redis://redis-x.redis.crawlers.svc.cluster.local/0/crawls-done", "redis://redis-x.redis.crawlers.svc.cluster.local/0", "crawls-done", true},
		{"redis://127.0.0.1:6379/3/crawls-done", "redis://127.0.0.1:6379/3", "crawls-done", true},
		{"redis://host/0", "", "", false},
		{"redis://host/0/crawls-done/extra", "", "", false},
	} {
		db, key, err := splitRedisWebhook(tc.in)
		if (err == nil) != tc.ok || db != tc.db || key != tc.key {
			t.Errorf("splitRedisWebhook(%q) = %q, %q, %v", tc.in, db, key, err)
		}
	}
}

func TestNewStorage(t *testing.T) {
	if s := newStorage(map[string]string{"STORE_PATH": "x/"}, "h"); s != nil {
		t.Error("storage without STORE_ENDPOINT_URL")
	}
	s := newStorage(map[string]string{"STORE_ENDPOINT_URL": "http://minio/bucket/", "STORE_PATH": "oid/"}, "host-0")
	m := s.message("f.wacz", "abc", 5, false)
	if m.Filename != "http://minio/bucket/oid/f.wacz" || m.ID != "host-0" || m.User != nil || s.template != "@ts-@id.wacz" {
		t.Errorf("storage %+v message %+v", s, m)
	}
	// JSON.stringify drops an undefined user but keeps an empty one.
	for env, want := range map[string]string{
		"":  `{"id":"host-0","filename":"http://minio/bucket/oid/f.wacz","hash":"abc","size":5,"completed":false}`,
		"u": `{"id":"host-0","user":"","filename":"http://minio/bucket/oid/f.wacz","hash":"abc","size":5,"completed":false}`,
	} {
		vars := map[string]string{"STORE_ENDPOINT_URL": "http://minio/bucket/", "STORE_PATH": "oid/"}
		if env != "" {
			vars["STORE_USER"] = ""
		}
		got, err := marshalJSON(newStorage(vars, "host-0").message("f.wacz", "abc", 5, false))
		if err != nil || string(got) != want {
			t.Errorf("message JSON %s (%v), want %s", got, err, want)
		}
	}
}
