package api

import "testing"

// A collection named ../../x downloaded as filename="../../x.wacz".
// Download names keep no path separators, quotes or control characters,
// and non-ASCII names also come as RFC 6266 filename*.
func TestAttachment(t *testing.T) {
	for name, want := range map[string]string{
		"plain":                       `attachment; filename="plain"`,
		"../../x.wacz":                `attachment; filename="_.._x.wacz"`,
		`..\..\x.wacz`:                `attachment; filename="_.._x.wacz"`,
		"/etc/passwd":                 `attachment; filename="_etc_passwd"`,
		".hidden.wacz":                `attachment; filename="hidden.wacz"`,
		"..":                          `attachment; filename="download"`,
		`q"uo` + "\x01te\n\x7f\u0085": `attachment; filename="quote"`,
		"bad \xff.wacz":               `attachment; filename="bad _.wacz"`,
		"Updated tést cöllection":     `attachment; filename="Updated tést cöllection"; filename*=UTF-8''Updated%20t%C3%A9st%20c%C3%B6llection`,
		"日本/語 100%.wacz":              `attachment; filename="日本_語 100%.wacz"; filename*=UTF-8''%E6%97%A5%E6%9C%AC_%E8%AA%9E%20100%25.wacz`,
	} {
		if got := attachment(name); got != want {
			t.Errorf("%q: %s, want %s", name, got, want)
		}
	}
}

func TestCollectionDownloadName(t *testing.T) {
	e := newEnv(t)
	id := e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "../../x"}, 200)["id"].(string)
	r := e.doRaw(asViewer, "GET", e.orgPath("/collections/"+id+"/download"), nil)
	if got := r.Header().Get("Content-Disposition"); r.Code != 200 || got != `attachment; filename="_.._x.wacz"` {
		t.Fatalf("download: %d, Content-Disposition %s", r.Code, got)
	}
}
