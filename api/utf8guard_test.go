package api

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// `GET /collections?namePrefix=%FF` answered 500: the byte reached a
// MongoDB regex. Text that is not UTF-8 is a 422 naming where it is, in
// the query of any route, in a path parameter, and in JSON and form
// bodies, before a handler reads it.
func TestInvalidUTF8IsRefused(t *testing.T) {
	e := newEnv(t)
	_, crawlID := e.startCrawl(asCrawler, "utf8")
	e.want422(e.do(asViewer, "GET", e.orgPath("/collections?namePrefix=%FF"), nil), `"loc":["query","namePrefix"]`, "not valid UTF-8")
	for _, path := range listFilters(e) {
		e.want422(e.do(asAdmin, "GET", path+"a%C3", nil), `"loc":["query",`, "not valid UTF-8")
	}
	e.want422(e.do(asViewer, "GET", e.orgPath("/crawls?%FF=1"), nil), `"loc":["query","�"]`, "not valid UTF-8")
	e.want422(e.do(asViewer, "GET", e.orgPath("/crawls/"+crawlID+"%FF"), nil), `"loc":["path","crawl_id"]`, "not valid UTF-8")
	e.want422(e.do(asCrawler, "GET", e.orgPath("/crawls/"+crawlID+"/queue?offset=0&count=5&regex=%FF"), nil),
		`"loc":["query","regex"]`, "not valid UTF-8")

	// JSON bodies: raw bytes that are not UTF-8, and \u escapes of half a
	// surrogate pair, both of which decoding would turn into U+FFFD.
	e.want422(e.do(asCrawler, "POST", e.orgPath("/collections"), `{"name": "x`+"\xff"+`"}`), `"loc":["body",11]`, "body is not valid UTF-8")
	e.want422(e.do(asCrawler, "POST", e.orgPath("/collections"), `{"name": "x\udc00"}`), `"loc":["body",11]`, "unpaired UTF-16 surrogate")
	e.want422(e.do(asCrawler, "POST", e.orgPath("/collections"), `{"name": "\ud800\u0041"}`), `"loc":["body",10]`, "unpaired UTF-16 surrogate")
	e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), `{"name": "pair \ud83d\ude00 \\udc00 \u00e9"}`, 200)

	// The login form, and upload fields decoded once more after the query.
	form := url.Values{"username": {"admin@example.com\xff"}, "password": {"PASSW0RD!"}}
	req := httptest.NewRequest("POST", "/api/auth/jwt/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	e.want422(resp{Code: rec.Code, Body: rec.Body.Bytes()}, `"loc":["body","username"]`, "not valid UTF-8")
	e.want422(e.do(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=a.wacz&name=%25FF"), typedBody{"application/octet-stream", []byte("x")}),
		`"loc":["query","name"]`, "not valid UTF-8")
}

func TestLoneSurrogate(t *testing.T) {
	for body, want := range map[string]int{
		`"\ud83d\ude00"`:              -1,
		`"\\ud800"`:                   -1, // an escaped backslash, then text
		`"\u0041\ud800"`:              7,
		`"\udc00\ud800"`:              1,
		`"\ud800"`:                    1,
		`"\ud800\n"`:                  1,
		`"\ud800\u0041"`:              1,
		`"\ud800\ud800"`:              1,
		`"ok \\\ud800x"`:              6,
		`"\ud8`:                       -1, // cut short: a syntax error for the decoder
		`{"a": "\ud83d\ude00\udc00"}`: 19,
	} {
		if got := loneSurrogate([]byte(body)); got != want {
			t.Errorf("%s: %d, want %d", body, got, want)
		}
	}
}
