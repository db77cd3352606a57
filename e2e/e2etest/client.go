package e2etest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The superuser trawler creates at start with the default settings
// (superuser.email, superuser.password), as `trawler dev` and the Helm
// chart run it.
const (
	SuperuserEmail    = "admin@example.com"
	SuperuserPassword = "PASSW0RD!"
)

// Client is the REST API as a script uses it: each call fails the test on
// a transport error or, where a status is expected, on another status.
type Client struct {
	// T is the test that calls fail; a subtest may swap in itself.
	T     testing.TB
	HTTP  *http.Client
	Base  string // scheme://host:port of the API
	Token string
	// OID is the org that Org builds paths in.
	OID string
}

// Login logs in to the API at base as the superuser. A nil hc is
// http.DefaultClient.
func Login(t testing.TB, base string, hc *http.Client) *Client {
	t.Helper()
	return LoginAs(t, base, hc, SuperuserEmail, SuperuserPassword)
}

// LoginAs logs in to the API at base as user.
func LoginAs(t testing.TB, base string, hc *http.Client, user, password string) *Client {
	t.Helper()
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{T: t, HTTP: hc, Base: base}
	form := url.Values{"username": {user}, "password": {password}}
	var login struct {
		AccessToken string `json:"access_token"`
	}
	c.Do("POST", "/api/auth/jwt/login", strings.NewReader(form.Encode()), "application/x-www-form-urlencoded", 200, &login)
	if login.AccessToken == "" {
		t.Fatalf("login as %s: no access token", user)
	}
	c.Token = login.AccessToken
	return c
}

// Send sends a request with the client's token and returns the status
// and body, whatever the status.
func (c *Client) Send(method, path string, body io.Reader, contentType string) (int, []byte) {
	c.T.Helper()
	req, err := http.NewRequest(method, c.Base+path, body)
	if err != nil {
		c.T.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.T.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, data
}

// Do sends a request, fails unless the answer has status want, and
// decodes its JSON body into out unless out is nil.
func (c *Client) Do(method, path string, body io.Reader, contentType string, want int, out any) {
	c.T.Helper()
	code, data := c.Send(method, path, body, contentType)
	if code != want {
		c.T.Fatalf("%s %s: %d %s, want %d: %s", method, path, code, http.StatusText(code), want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.T.Fatalf("%s %s: decoding %s: %v", method, path, data, err)
		}
	}
}

// JSON is Do with in, unless nil, sent as JSON.
func (c *Client) JSON(method, path string, in any, want int, out any) {
	c.T.Helper()
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			c.T.Fatal(err)
		}
		body = bytes.NewReader(data)
	}
	c.Do(method, path, body, "application/json", want, out)
}

// Object is JSON for an answer read as a JSON object.
func (c *Client) Object(method, path string, in any, want int) map[string]any {
	c.T.Helper()
	var out map[string]any
	c.JSON(method, path, in, want, &out)
	return out
}

// Status GETs path and returns the status, whatever it is.
func (c *Client) Status(path string) int {
	c.T.Helper()
	code, _ := c.Send("GET", path, nil, "")
	return code
}

// OrgID is the id of the first org the user belongs to.
func (c *Client) OrgID() string {
	c.T.Helper()
	var orgs struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	c.JSON("GET", "/api/orgs", nil, 200, &orgs)
	if len(orgs.Items) == 0 {
		c.T.Fatal("no organisation")
	}
	return orgs.Items[0].ID
}

// Org is the path of rest under the org OID.
func (c *Client) Org(rest string) string { return "/api/orgs/" + c.OID + rest }

// StartCrawl creates a workflow in org oid that runs at once and returns
// its crawl's id.
func (c *Client) StartCrawl(oid, seed string, scale int) string {
	c.T.Helper()
	var created struct {
		RunNowJob string `json:"run_now_job"`
	}
	c.JSON("POST", "/api/orgs/"+oid+"/crawlconfigs/", map[string]any{
		"name": "e2e crawl", "runNow": true, "scale": scale,
		"config": map[string]any{"seeds": []map[string]any{{"url": seed}}},
	}, 200, &created)
	if created.RunNowJob == "" {
		c.T.Fatal("the workflow started no crawl")
	}
	return created.RunNowJob
}

// Crawl is what the tests read of a crawl's replay.json.
type Crawl struct {
	State     string `json:"state"`
	FileCount int    `json:"fileCount"`
	Stats     struct {
		Found, Done int64
	} `json:"stats"`
	Resources []struct {
		Name string `json:"name"`
		Path string `json:"path"`
		Hash string `json:"hash"`
		Size int64  `json:"size"`
	} `json:"resources"`
}

// Crawl reads crawl id of org oid.
func (c *Client) Crawl(oid, id string) Crawl {
	c.T.Helper()
	var out Crawl
	c.JSON("GET", "/api/orgs/"+oid+"/crawls/"+id+"/replay.json", nil, 200, &out)
	return out
}

// WaitCrawlState waits until the crawl is in one of states.
func (c *Client) WaitCrawlState(oid, id string, timeout time.Duration, states ...string) Crawl {
	c.T.Helper()
	var last Crawl
	WaitFor(c.T, timeout, "crawl "+id+" to reach "+strings.Join(states, " or "), func() (bool, error) {
		last = c.Crawl(oid, id)
		for _, s := range states {
			if last.State == s {
				return true, nil
			}
		}
		return false, fmt.Errorf("state %s, stats %+v", last.State, last.Stats)
	})
	return last
}

// WaitCrawl waits until the crawl finished and fails unless it completed
// with every page done.
func (c *Client) WaitCrawl(oid, id string, timeout time.Duration) Crawl {
	c.T.Helper()
	got := c.WaitCrawlState(oid, id, timeout, "complete", "partial_complete", "failed", "canceled",
		"stopped_by_user", "stopped_quota_reached", "stopped_storage_quota_reached")
	if got.State != "complete" || got.Stats.Done == 0 || got.Stats.Done != got.Stats.Found {
		c.T.Fatalf("crawl %s ended %s with stats %+v", id, got.State, got.Stats)
	}
	return got
}
