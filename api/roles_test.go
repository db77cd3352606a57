package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// denial is what role gets from a route of access a, or status 0 when the
// role passes the checks.
func denial(a access, role string, oid string) (int, string) {
	if role == asAnonymous {
		return 401, "Unauthorized"
	}
	head := a == accessOrgCrawlerHead || a == accessOrgSuperuserHead || a == accessOrgOwnerSuperuserHead
	if role == asOutsider && head {
		return 404, detailOrgNotFound
	}
	if role == asOutsider && a >= accessOrgViewer {
		return 404, "Organization '" + oid + "' not found"
	}
	switch {
	case a == accessSuperuser && role != asAdmin:
		return 403, detailNotAllowed
	case a == accessLibSuperuser && role != asAdmin:
		return 403, "Forbidden"
	case (a == accessOrgCrawler || a == accessOrgCrawlerHead) && role == asViewer:
		return 403, detailNoCrawlPermission
	case (a == accessOrgOwner || a == accessOrgOwnerSuperuserHead) && (role == asViewer || role == asCrawler):
		return 403, detailNoOwnerPermission
	case (a == accessOrgSuperuser || a == accessOrgSuperuserHead || a == accessOrgOwnerSuperuserHead) && role != asAdmin:
		return 403, detailNotAllowed
	}
	return 0, ""
}

// roleMatrixBody is a valid-enough body for each route, so that an
// allowed caller gets past validation.
func roleMatrixBody(r route, role string) any {
	switch {
	case strings.HasSuffix(r.path, "/profiles/:profileid") && r.method == http.MethodPatch:
		return map[string]any{"name": "by " + role}
	case strings.HasSuffix(r.path, "/profiles/browser"):
		return map[string]any{"url": "https://example.com/"}
	case strings.HasSuffix(r.path, "/navigate"):
		return map[string]any{"url": "https://example.com/"}
	case strings.HasSuffix(r.path, "/collections") && r.method == http.MethodPost:
		return map[string]any{"name": "matrix " + role}
	case strings.HasSuffix(r.path, "/collections/:coll_id") && r.method == http.MethodPatch:
		return map[string]any{"description": "by " + role}
	case strings.Contains(r.path, "/collections/:coll_id/"):
		return map[string]any{"crawlIds": []string{}}
	case r.method == http.MethodPost && strings.HasSuffix(r.path, "/crawlconfigs"):
		return workflowBody("matrix "+role, false)
	case strings.HasSuffix(r.path, "/crawlconfigs/:cid") && r.method == http.MethodPatch:
		return map[string]any{"description": "by " + role}
	case strings.HasSuffix(r.path, "/crawls/:crawl_id") || strings.HasSuffix(r.path, "/all-crawls/:crawl_id"):
		return map[string]any{"description": "by " + role}
	case strings.HasSuffix(r.path, "/invites/delete"):
		return map[string]any{"email": "nobody@example.com"}
	case strings.HasSuffix(r.path, "/delete"):
		return map[string]any{"crawl_ids": []string{"no-such-crawl"}}
	case strings.HasSuffix(r.path, "/invite"):
		return map[string]any{"email": role + "-invitee@example.com", "role": 20}
	case strings.HasSuffix(r.path, "/event-webhook-urls"):
		return map[string]any{"crawlStarted": "https://example.com/hook"}
	case strings.HasPrefix(r.path, "/api/users/") && r.method == http.MethodPatch:
		return map[string]any{"name": "renamed by " + role}
	case strings.HasSuffix(r.path, "/scale"):
		return map[string]any{"scale": 2}
	case strings.HasSuffix(r.path, "/add-user"):
		return map[string]any{"email": role + "-new@example.com", "password": "pw", "name": "n", "role": 10}
	case strings.HasSuffix(r.path, "/user-role"):
		return map[string]any{"email": "viewer@example.com", "role": 10}
	case strings.HasSuffix(r.path, "/remove"):
		return map[string]any{"email": "nobody@example.com"}
	case strings.HasSuffix(r.path, "/quotas"):
		return map[string]any{}
	case strings.HasSuffix(r.path, "/read-only"):
		// Writable, so that the matrix's later runs are not refused.
		return map[string]any{"readOnly": false}
	case strings.HasSuffix(r.path, "/proxies"):
		return map[string]any{"allowSharedProxies": false, "allowedProxies": []string{}}
	case strings.HasSuffix(r.path, "/rename"):
		return map[string]any{"name": "Renamed by " + role}
	case strings.HasSuffix(r.path, "/orgs/create"):
		return map[string]any{"name": "Org of " + role}
	}
	return nil
}

// TestRoleMatrix calls every authenticated route as each role and checks
// the 401/403/404 decisions: viewer, crawler, owner, superuser, an owner
// of another org and no token at all.
func TestRoleMatrix(t *testing.T) {
	for _, role := range []string{asViewer, asCrawler, asOwner, asAdmin, asOutsider, asAnonymous} {
		t.Run(role, func(t *testing.T) {
			e := newEnv(t)
			cid, crawlID := e.startCrawl(asAdmin, "matrix")
			collID := e.mustJSON(asAdmin, "POST", e.orgPath("/collections"), map[string]any{"name": "matrix"}, 200)["id"].(string)
			browserID := e.launchBrowser(asAdmin, map[string]any{"url": "https://example.com/"})
			profileID := uuid.New()
			if err := e.store.SaveProfile(context.Background(), &store.Profile{ID: profileID, OID: e.org, Name: "p"}, false); err != nil {
				t.Fatal(err)
			}
			oid := e.org.String()
			for _, r := range e.srv.routes() {
				if r.access == accessPublic {
					continue
				}
				path := strings.NewReplacer(":oid", oid, ":cid", cid, ":crawl_id", crawlID, ":token", uuid.NewString(),
					":notificationid", uuid.NewString(), ":id", uuid.NewString(), ":coll_id", collID,
					":browserid", browserID, ":profileid", profileID.String()).Replace(r.path)
				switch {
				case strings.HasSuffix(path, "/exclusions"):
					path += "?regex=skip-me"
				case strings.HasSuffix(path, "/queue"):
					path += "?offset=0&count=10"
				case strings.HasSuffix(path, "/queueMatchAll"):
					path += "?regex=x"
				}
				var res resp
				if r.streaming() {
					res = e.doWithin(time.Second, role, r.method, path) // a stream of a running crawl lasts
				} else {
					res = e.do(role, r.method, path, roleMatrixBody(r, role))
				}
				name := fmt.Sprintf("%s %s", r.method, r.path)
				wantStatus, wantDetail := denial(r.access, role, oid)
				var body struct {
					Detail any `json:"detail"`
				}
				_ = json.Unmarshal(res.Body, &body)
				if wantStatus != 0 {
					if res.Code != wantStatus || body.Detail != wantDetail {
						t.Errorf("%s: got %d %s, want %d %q", name, res.Code, res.Body, wantStatus, wantDetail)
					}
					continue
				}
				if res.Code == 401 || res.Code == 403 && body.Detail != detailNotAllowed || res.Code >= 500 ||
					res.Code == 404 && strings.HasPrefix(fmt.Sprint(body.Detail), "Organization") {
					t.Errorf("%s: allowed caller got %d %s", name, res.Code, res.Body)
				}
			}
			if e.do("", "POST", e.orgPath("/crawlconfigs"), workflowBody("anon", false)).Code != 401 {
				t.Error("anonymous workflow create was not 401")
			}
		})
	}
}

// TestPublicRoutesNeedNoToken calls every public route without a token:
// none may ask for one.
func TestPublicRoutesNeedNoToken(t *testing.T) {
	e := newEnv(t)
	for _, r := range e.srv.routes() {
		if r.access != accessPublic {
			continue
		}
		path := strings.NewReplacer(":token", uuid.NewString()).Replace(r.path)
		res := e.do("", r.method, path, map[string]any{"email": "nobody@example.com"})
		if res.Code == 401 || res.Code == 403 || res.Code >= 500 {
			t.Errorf("%s %s without a token: %d %s", r.method, r.path, res.Code, res.Body)
		}
	}
}
