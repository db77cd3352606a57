package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// access is who may call a route. Org levels also require membership.
type access int

const (
	accessPublic       access = iota // no token
	accessUser                       // any signed-in user
	accessSuperuser                  // superusers only (403 "Not Allowed")
	accessLibSuperuser               // superusers only, upstream auth library's routes (403 "Forbidden")
	accessOrgViewer                  // member of the org (404 otherwise)
	accessOrgCrawler                 // member with role >= crawler
	accessOrgOwner                   // member with role owner
	accessOrgSuperuser               // org route that only superusers may use

	// Routes added after 2023 answer with upstream HEAD's details
	// (upstream-2026 §0.1): a non-member gets 404 "org_not_found".
	accessOrgCrawlerHead        // accessOrgCrawler
	accessOrgSuperuserHead      // superusers only (members: 403 "Not Allowed")
	accessOrgOwnerSuperuserHead // superusers only, behind the owner check: 403 owner detail below owner, else "Not Allowed"
)

// route is one registered endpoint and what the OpenAPI document says of
// it. The same table registers the routes and generates the document.
type route struct {
	method, path string
	access       access
	handler      echo.HandlerFunc
	summary      string
	tag          string
	in           any      // request body type (nil: none); form bodies use formIn
	out          any      // 200 response body type; streamed bodies use streamOut
	query        []string // query parameters
}

// streaming reports a route that answers with an event stream: it is
// exempt from the latency histogram and, as every stream, from the
// server's timeouts (liftsDeadlines).
func (r route) streaming() bool {
	_, ok := r.out.(eventStream)
	return ok
}

// formIn marks a form-encoded request body in the OpenAPI document.
type formIn struct{ fields []string }

// binaryIn marks a request body that is a file.
type binaryIn struct{}

// multipartIn marks a multipart/form-data body of files in the named part.
type multipartIn struct{ part string }

// streamOut marks a route whose response is a stream (log lines,
// downloads) of contentType.
type streamOut struct{ contentType string }

// liftsDeadlines tells whether a route's request or response body is a
// stream (a file upload, a download, log lines, events): it may outlast
// the server's whole-request read and write timeouts, which such a route
// lifts.
func (r route) liftsDeadlines() bool {
	switch r.in.(type) {
	case binaryIn, multipartIn:
		return true
	}
	_, ok := r.out.(streamOut)
	return ok || r.streaming()
}

// middleware is what runs before a route's handler: the auth and org
// checks its access needs, then, for a streaming route, the lifting of
// the deadlines (only for a caller allowed in: nobody else may hold a
// connection open with a slow body).
func (s *Server) middleware(r route) []echo.MiddlewareFunc {
	mw := s.accessMiddleware(r.access)
	if r.liftsDeadlines() {
		mw = append(mw, liftDeadlines)
	}
	return mw
}

// liftDeadlines clears the connection's read and write deadlines, which
// the HTTP server set from its timeouts for this request. The read one
// matters too: the server's background read of an idle HTTP/1 connection
// would hit it and cancel the stream.
func liftDeadlines(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rc := http.NewResponseController(c.Response())
		// Writers without deadlines (tests' recorders) have none to lift.
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		return next(c)
	}
}

// routes lists every endpoint. Paths are written without trailing slash;
// the server accepts both forms.
func (s *Server) routes() []route {
	const (
		get, post, patch, del = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
		put                   = http.MethodPut
		org                   = "/api/orgs/:oid"
		cfg                   = org + "/crawlconfigs"
		crawl                 = org + "/crawls"
		all                   = org + "/all-crawls"
		coll                  = org + "/collections"
		upload                = org + "/uploads"
		files                 = org + "/files"
		prof                  = org + "/profiles"
		browser               = prof + "/browser"
		options               = http.MethodOptions
	)
	pageQ := []string{"page", "pageSize"}
	crawlListQ := append([]string{"userid", "cid", "state", "firstSeed", "name", "description",
		"collectionId", "sortBy", "sortDirection"}, pageQ...)
	rs := []route{
		{get, "/healthz", accessPublic, s.healthz, "Liveness", "health", nil, empty{}, nil},
		{get, "/readyz", accessPublic, s.readyz, "Readiness (MongoDB reachable, ...)", "health", nil, empty{}, nil},
		{get, "/api/openapi.json", accessPublic, s.openAPI, "This document", "meta", nil, nil, nil},
		{get, "/api/settings", accessPublic, s.settings, "Public settings", "settings", nil, settingsOut{}, nil},

		{post, "/api/auth/jwt/login", accessPublic, s.login, "Log in (OAuth2 password form)", "auth",
			formIn{[]string{"username", "password", "grant_type", "scope", "client_id", "client_secret"}}, tokenOut{}, nil},
		{post, "/api/auth/jwt/refresh", accessUser, s.refresh, "New token for the caller", "auth", nil, tokenOut{}, nil},
		{post, "/api/auth/jwt/logout", accessUser, s.logout, "Log out (tokens are stateless)", "auth", nil, empty{}, nil},
		{post, "/api/auth/register", accessPublic, s.register, "Create an account (with an invite, or when registration is open)", "auth", registerIn{}, userOut{}, nil},
		{post, "/api/auth/request-verify-token", accessPublic, s.requestVerifyToken, "Mail a verification link", "auth", emailIn{}, nil, nil},
		{post, "/api/auth/verify", accessPublic, s.verify, "Verify an e-mail address with a mailed token", "auth", verifyIn{}, userOut{}, nil},
		{post, "/api/auth/forgot-password", accessPublic, s.forgotPassword, "Mail a password-reset link", "auth", emailIn{}, nil, nil},
		{post, "/api/auth/reset-password", accessPublic, s.resetPassword, "Set a new password with a mailed token", "auth", resetPasswordIn{}, nil, nil},
		{get, "/api/users/me", accessUser, s.me, "The caller", "users", nil, userOut{}, nil},
		{patch, "/api/users/me", accessUser, s.updateMe, "Change the caller's name, e-mail or password", "users", userUpdateIn{}, userOut{}, nil},
		{get, "/api/users/me-with-orgs", accessUser, s.meWithOrgs, "The caller and their orgs", "users", nil, userWithOrgsOut{}, nil},
		{get, "/api/users/me/invite/:token", accessUser, s.myInviteInfo, "One of the caller's invites", "users", nil, inviteInfoOut{}, nil},
		{get, "/api/users/invites", accessSuperuser, s.listAllInvites, "Pending invites of every org", "users", nil, pageOut[inviteOut]{}, pageQ},
		{get, "/api/users/invite/:token", accessPublic, s.inviteInfo, "An invite, for its invitee", "users", nil, inviteInfoOut{}, []string{"email"}},
		{get, "/api/users/:id", accessLibSuperuser, s.getUser, "Any user", "users", nil, userOut{}, nil},
		{patch, "/api/users/:id", accessLibSuperuser, s.updateUser, "Change any user", "users", userUpdateIn{}, userOut{}, nil},
		{del, "/api/users/:id", accessLibSuperuser, s.deleteUser, "Delete a user", "users", nil, nil, nil},

		{get, "/api/orgs", accessUser, s.listOrgs, "Orgs of the caller (all for superusers)", "orgs", nil, pageOut[orgOut]{}, pageQ},
		{post, "/api/orgs/create", accessSuperuser, s.createOrg, "Create an org", "orgs", orgCreateIn{}, orgAddedOut{}, nil},
		{get, org, accessOrgViewer, s.getOrg, "One org", "orgs", nil, orgOut{}, nil},
		{del, org, accessOrgSuperuserHead, s.deleteOrg, "Delete the org and everything in it (a background job)", "orgs", nil, orgDeletedOut{}, nil},
		{get, "/api/orgs/all/jobs/:job_id", accessSuperuser, s.getJob, "A background job", "orgs", nil, jobOut{}, nil},
		{post, "/api/orgs/all/jobs/:job_id/retry", accessSuperuser, s.retryJob, "Run a failed background job again", "orgs", nil, successOut{}, nil},
		{get, org + "/export/json", accessOrgOwnerSuperuserHead, s.exportOrg, "The org's documents as JSON (no files)", "orgs", nil, streamOut{"application/json"}, nil},
		{post, "/api/orgs/import/json", accessSuperuser, s.importOrg, "Add an org from an export (no files)", "orgs", binaryIn{}, importedOut{}, []string{"ignoreVersion", "storageName"}},
		{post, org + "/rename", accessOrgOwner, s.renameOrg, "Rename the org", "orgs", orgRenameIn{}, updatedOut{}, nil},
		{post, org + "/add-user", accessOrgSuperuser, s.addOrgUser, "Create a user and add them with a role", "orgs", addUserIn{}, addedOut{}, nil},
		{patch, org + "/user-role", accessOrgOwner, s.setOrgUserRole, "Change a member's role", "orgs", userRoleIn{}, updatedOut{}, nil},
		{post, org + "/remove", accessOrgOwner, s.removeOrgUser, "Remove a member", "orgs", removeUserIn{}, removedOut{}, nil},
		{post, org + "/quotas", accessOrgSuperuser, s.setOrgQuotas, "Set the org's quotas", "orgs", quotasIn{}, updatedOut{}, nil},
		{post, org + "/read-only", accessOrgSuperuser, s.setOrgReadOnly, "Set the org read-only or writable again", "orgs", orgReadOnlyIn{}, updatedOut{}, nil},
		{post, org + "/proxies", accessOrgOwnerSuperuserHead, s.setOrgProxies, "Set the crawler proxies the org may use", "orgs", orgProxiesIn{}, updatedOut{}, nil},
		{post, org + "/invite", accessOrgOwner, s.invite, "Invite someone to the org by e-mail", "orgs", inviteIn{}, invitedOut{}, nil},
		{get, org + "/invites", accessOrgOwner, s.listOrgInvites, "The org's pending invites of people without an account", "orgs", nil, pageOut[inviteOut]{}, pageQ},
		{post, org + "/invites/delete", accessOrgOwner, s.deleteInvites, "Withdraw the invites to an e-mail", "orgs", emailIn{}, removedCountOut{}, nil},
		{post, "/api/orgs/invite-accept/:token", accessUser, s.acceptInvite, "Accept one of the caller's invites", "orgs", nil, addedOut{}, nil},
		{post, org + "/event-webhook-urls", accessOrgOwner, s.setWebhookURLs, "Set the org's event webhook URLs", "webhooks", webhookURLs{}, updatedOut{}, nil},
		{get, org + "/webhooks", accessOrgOwner, s.listNotifications, "The org's webhook notifications", "webhooks", nil, pageOut[notificationOut]{}, pageQ},
		{get, org + "/webhooks/:notificationid", accessOrgOwner, s.getNotification, "One webhook notification", "webhooks", nil, notificationOut{}, nil},
		{get, org + "/webhooks/:notificationid/retry", accessOrgOwner, s.retryNotification, "Send a notification again", "webhooks", nil, successOut{}, nil},
		{patch, org + "/storage", accessOrgOwner, s.setOrgStorage, "Choose a configured storage or the org's own bucket", "orgs", orgStorageIn{}, updatedOut{}, nil},

		{get, cfg, accessOrgViewer, s.listCrawlConfigs, "List workflows", "crawlconfigs", nil, pageOut[crawlConfigOut]{},
			append([]string{"userid", "modifiedBy", "firstSeed", "name", "description", "tag", "schedule", "sortBy", "sortDirection"}, pageQ...)},
		{post, cfg, accessOrgCrawler, s.createCrawlConfig, "Create a workflow (and maybe run it)", "crawlconfigs", crawlConfigIn{}, crawlConfigAddedOut{}, nil},
		{get, cfg + "/tags", accessOrgViewer, s.crawlConfigTags, "Distinct workflow tags", "crawlconfigs", nil, []string{}, nil},
		{get, cfg + "/crawler-proxies", accessOrgCrawlerHead, s.listCrawlerProxies, "Crawler proxies the org may use", "crawlconfigs", nil, proxiesOut{}, nil},
		{get, "/api/orgs/all/crawlconfigs/crawler-proxies", accessSuperuser, s.listAllCrawlerProxies, "Every crawler proxy", "crawlconfigs", nil, proxiesOut{}, nil},
		{get, cfg + "/crawler-channels", accessOrgCrawler, s.listCrawlerChannels, "Crawler channels workflows may choose", "crawlconfigs", nil, channelsOut{}, nil},
		{get, cfg + "/search-values", accessOrgViewer, s.crawlConfigSearchValues, "Values to search workflows by", "crawlconfigs", nil, crawlConfigSearchOut{}, nil},
		{get, cfg + "/:cid", accessOrgViewer, s.getCrawlConfig, "One workflow", "crawlconfigs", nil, crawlConfigOut{}, nil},
		{patch, cfg + "/:cid", accessOrgCrawler, s.updateCrawlConfig, "Update a workflow", "crawlconfigs", crawlConfigUpdateIn{}, crawlConfigUpdatedOut{}, nil},
		{del, cfg + "/:cid", accessOrgCrawler, s.deleteCrawlConfig, "Delete (or deactivate) a workflow", "crawlconfigs", nil, crawlConfigDeletedOut{}, nil},
		{get, cfg + "/:cid/revs", accessOrgViewer, s.listRevisions, "Earlier settings of a workflow", "crawlconfigs", nil, pageOut[revisionOut]{}, pageQ},
		{post, cfg + "/:cid/run", accessOrgCrawler, s.runCrawlConfig, "Start a crawl of the workflow", "crawlconfigs", nil, startedOut{}, nil},

		{get, crawl, accessOrgViewer, s.listCrawls, "List crawls", "crawls", nil, pageOut[crawlOut]{}, crawlListQ},
		{post, crawl + "/delete", accessOrgCrawler, s.deleteCrawls, "Delete crawls (canceling running ones)", "crawls", deleteCrawlsIn{}, deletedOut{}, nil},
		{get, crawl + "/:crawl_id", accessOrgViewer, s.getCrawl, "One crawl", "crawls", nil, crawlOut{}, nil},
		{patch, crawl + "/:crawl_id", accessOrgCrawler, s.updateCrawl, "Update a crawl's metadata", "crawls", crawlUpdateIn{}, updatedOut{}, nil},
		{get, crawl + "/:crawl_id/replay.json", accessOrgViewer, s.crawlReplay, "A crawl with its files", "crawls", nil, replayOut{}, nil},
		{post, crawl + "/:crawl_id/cancel", accessOrgCrawler, s.cancelCrawl, "Cancel a crawl now", "crawls", nil, successOut{}, nil},
		{post, crawl + "/:crawl_id/stop", accessOrgCrawler, s.stopCrawl, "Stop a crawl gracefully", "crawls", nil, successOut{}, nil},
		{post, crawl + "/:crawl_id/pause", accessOrgCrawler, s.pauseCrawl, "Pause a running crawl", "crawls", nil, successOut{}, nil},
		{post, crawl + "/:crawl_id/resume", accessOrgCrawler, s.resumeCrawl, "Resume a paused crawl", "crawls", nil, successOut{}, nil},
		{post, crawl + "/:crawl_id/scale", accessOrgCrawler, s.scaleCrawl, "Change a crawl's scale", "crawls", scaleIn{}, scaledOut{}, nil},
		{get, crawl + "/:crawl_id/errors", accessOrgCrawler, s.crawlErrors, "A crawl's errors", "crawls", nil, pageOut[map[string]any]{}, pageQ},
		{get, crawl + "/:crawl_id/access", accessOrgCrawler, s.crawlAccess, "Check access to a crawl", "crawls", nil, empty{}, nil},
		{get, crawl + "/:crawl_id/queue", accessOrgCrawler, s.crawlQueue, "A page of a running crawl's queue", "crawls", nil, queueOut{}, []string{"offset", "count", "regex"}},
		{get, crawl + "/:crawl_id/queueMatchAll", accessOrgCrawler, s.crawlQueueMatchAll, "Queued URLs matching a regex", "crawls", nil, queueMatchOut{}, []string{"regex"}},
		{post, crawl + "/:crawl_id/exclusions", accessOrgCrawler, s.addExclusion, "Add an exclusion to a running crawl", "crawls", nil, exclusionAddedOut{}, []string{"regex"}},
		{del, crawl + "/:crawl_id/exclusions", accessOrgCrawler, s.removeExclusion, "Remove an exclusion", "crawls", nil, successOut{}, []string{"regex"}},
		{get, crawl + "/:crawl_id/logs", accessOrgViewer, s.crawlLogs, "A finished crawl's logs (JSON lines)", "crawls", nil, streamOut{jsonLines}, []string{"logLevel", "context"}},
		{get, crawl + "/:crawl_id/download", accessOrgViewer, s.downloadItem, "A crawl (or upload) as one multi-WACZ zip, or its only WACZ (streamed)", "crawls", nil,
			streamOut{"application/wacz+zip"}, []string{"preferSingleWACZ", "withDependencies", "auth_bearer"}},
		{get, crawl + "/:crawl_id/events", accessOrgViewer, s.crawlEvents, "A crawl's live progress (Server-Sent Events: state, crawl, end)", "crawls", nil,
			eventStream{crawlEventOut{}}, []string{"auth_bearer"}},

		{get, "/api/orgs/all/crawls", accessSuperuser, s.listAllOrgsCrawls, "Crawls of every org", "crawls", nil, pageOut[crawlOut]{},
			append([]string{"runningOnly"}, crawlListQ...)},
		{get, "/api/orgs/all/crawls/:crawl_id", accessSuperuser, s.getAnyCrawl, "Any org's crawl", "crawls", nil, crawlOut{}, nil},
		{get, "/api/orgs/all/crawls/:crawl_id/replay.json", accessSuperuser, s.anyCrawlReplay, "Any org's crawl with files", "crawls", nil, replayOut{}, nil},
		{get, "/api/orgs/all/all-crawls/:crawl_id/replay.json", accessSuperuser, s.anyCrawlReplay, "Any org's crawl or upload with files", "all-crawls", nil, replayOut{}, nil},

		{get, all, accessOrgViewer, s.listAllCrawls, "List crawls and uploads", "all-crawls", nil, pageOut[crawlOut]{},
			append([]string{"crawlType"}, crawlListQ...)},
		{get, all + "/search-values", accessOrgViewer, s.allCrawlsSearchValues, "Values to search crawls by", "all-crawls", nil, crawlSearchOut{}, []string{"crawlType"}},
		{post, all + "/delete", accessOrgCrawler, s.deleteAllCrawls, "Delete crawls or uploads", "all-crawls", deleteCrawlsIn{}, deletedOut{}, nil},
		{get, all + "/:crawl_id", accessOrgCrawler, s.getAllCrawl, "One crawl or upload with files", "all-crawls", nil, replayOut{}, nil},
		{patch, all + "/:crawl_id", accessOrgCrawler, s.updateAnyCrawl, "Update a crawl's or upload's metadata", "all-crawls", crawlUpdateIn{}, updatedOut{}, nil},
		{get, all + "/:crawl_id/replay.json", accessOrgViewer, s.crawlReplayAny, "A crawl or upload with its files", "all-crawls", nil, replayOut{}, nil},
		{get, all + "/:crawl_id/download", accessOrgViewer, s.downloadItem, "A crawl or upload as one multi-WACZ zip, or its only WACZ (streamed)", "all-crawls", nil,
			streamOut{"application/wacz+zip"}, []string{"preferSingleWACZ", "withDependencies", "auth_bearer"}},

		{post, coll, accessOrgCrawler, s.createCollection, "Create a collection (with crawls)", "collections", collectionIn{}, collectionAddedOut{}, nil},
		{get, coll, accessOrgViewer, s.listCollections, "List collections", "collections", nil, pageOut[collectionOut]{},
			append([]string{"name", "namePrefix", "sortBy", "sortDirection"}, pageQ...)},
		{get, coll + "/$all", accessOrgViewer, s.allCollections, "Every collection's files, by collection name", "collections", nil, map[string][]resourceOut{}, nil},
		{get, coll + "/search-values", accessOrgViewer, s.collectionSearchValues, "Collection names", "collections", nil, collectionSearchOut{}, nil},
		{get, coll + "/:coll_id", accessOrgViewer, s.getCollection, "One collection", "collections", nil, collectionOut{}, nil},
		{patch, coll + "/:coll_id", accessOrgCrawler, s.updateCollection, "Rename, describe or publish a collection", "collections", collectionUpdateIn{}, updatedOut{}, nil},
		{del, coll + "/:coll_id", accessOrgCrawler, s.deleteCollection, "Delete a collection (its items stay)", "collections", nil, successOut{}, nil},
		{post, coll + "/:coll_id/add", accessOrgCrawler, s.addToCollection, "Add crawls or uploads", "collections", collectionCrawlsIn{}, collectionOut{}, nil},
		{post, coll + "/:coll_id/remove", accessOrgCrawler, s.removeFromCollection, "Remove crawls or uploads", "collections", collectionCrawlsIn{}, collectionOut{}, nil},
		{get, coll + "/:coll_id/replay.json", accessOrgViewer, s.collectionReplay, "A collection with its files", "collections", nil, collectionOut{}, nil},
		{get, coll + "/:coll_id/download", accessOrgViewer, s.downloadCollection, "The collection as one multi-WACZ zip (streamed)", "collections", nil, streamOut{"application/wacz+zip"}, nil},
		{get, coll + "/:coll_id/public/replay.json", accessPublic, s.publicCollectionReplay, "A public collection with its files (no token)", "collections", nil, collectionOut{}, nil},
		{options, coll + "/:coll_id/public/replay.json", accessPublic, s.publicCollectionReplayPreflight, "CORS preflight of the public replay", "collections", nil, empty{}, nil},

		{put, upload + "/stream", accessOrgCrawler, s.uploadStream, "Upload a WACZ file as the request body", "uploads", binaryIn{}, uploadAddedOut{},
			[]string{"filename", "name", "description", "collections", "tags", "replaceId"}},
		{put, upload + "/formdata", accessOrgCrawler, s.uploadFormData, "Upload WACZ files as multipart parts named uploads", "uploads", multipartIn{"uploads"}, uploadAddedOut{},
			[]string{"name", "description", "collections", "tags"}},
		{post, upload + "/delete", accessOrgCrawler, s.deleteUploads, "Delete uploads and their files", "uploads", deleteCrawlsIn{}, deletedOut{}, nil},
		{get, upload, accessOrgViewer, s.listUploads, "List uploads", "uploads", nil, pageOut[crawlOut]{}, crawlListQ},
		{get, upload + "/:crawl_id", accessOrgCrawler, s.getUpload, "One upload", "uploads", nil, crawlOut{}, nil},
		{patch, upload + "/:crawl_id", accessOrgCrawler, s.updateUpload, "Update an upload's metadata", "uploads", crawlUpdateIn{}, updatedOut{}, nil},
		{get, upload + "/:crawl_id/replay.json", accessOrgViewer, s.uploadReplay, "An upload with its files", "uploads", nil, replayOut{}, nil},
		{get, upload + "/:crawl_id/download", accessOrgViewer, s.downloadUpload, "An upload as one multi-WACZ zip (streamed)", "uploads", nil, streamOut{"application/wacz+zip"}, []string{"auth_bearer"}},
		{get, "/api/orgs/all/uploads/:crawl_id/replay.json", accessSuperuser, s.anyUploadReplay, "Any org's upload with files", "uploads", nil, replayOut{}, nil},

		{put, files + "/seedFile", accessOrgCrawler, s.putSeedFile, "Upload a seed file (one URL a line, .txt, at most 25 MB) as the request body", "files",
			binaryIn{}, seedFileAddedOut{}, []string{"filename"}},
		{get, files, accessOrgViewer, s.listSeedFiles, "List seed files", "files", nil, pageOut[seedFileOut]{}, append([]string{"sortBy", "sortDirection"}, pageQ...)},
		{get, files + "/:file_id", accessOrgViewer, s.getSeedFile, "One seed file", "files", nil, seedFileOut{}, nil},
		{del, files + "/:file_id", accessOrgCrawler, s.deleteSeedFile, "Delete a seed file no workflow or crawl uses", "files", nil, successOut{}, nil},

		{get, prof, accessOrgCrawler, s.listProfiles, "List browser profiles", "profiles", nil, pageOut[profileOut]{}, append([]string{"userid"}, pageQ...)},
		{post, prof, accessOrgCrawler, s.commitProfile, "Save a profile browser as a new profile", "profiles", profileIn{}, profileAddedOut{}, nil},
		{get, prof + "/:profileid", accessOrgCrawler, s.getProfile, "One profile and the workflows using it", "profiles", nil, profileWithWorkflowsOut{}, nil},
		{patch, prof + "/:profileid", accessOrgCrawler, s.updateProfile, "Rename a profile, or save a browser into it", "profiles", profileIn{}, updatedOut{}, nil},
		{del, prof + "/:profileid", accessOrgCrawler, s.deleteProfile, "Delete a profile and its file (unless in use)", "profiles", nil, profileDeletedOut{}, nil},
		{post, browser, accessOrgCrawler, s.createBrowser, "Start a profile browser", "profiles", browserIn{}, browserOut{}, nil},
		{get, browser + "/:browserid", accessOrgCrawler, s.getBrowser, "How to open the browser's VNC session", "profiles", nil, browserAccessOut{}, nil},
		{del, browser + "/:browserid", accessOrgCrawler, s.deleteBrowser, "Stop a profile browser", "profiles", nil, successOut{}, nil},
		{post, browser + "/:browserid/ping", accessOrgCrawler, s.pingBrowser, "Keep a profile browser alive", "profiles", nil, browserPingOut{}, nil},
		{post, browser + "/:browserid/navigate", accessOrgCrawler, s.navigateBrowser, "Open a URL in a profile browser", "profiles", urlIn{}, successOut{}, nil},
		{get, browser + "/:browserid/access", accessOrgCrawler, s.browserAccess, "Check access to a browser (auth_request)", "profiles", nil, empty{}, nil},
	}
	return append(rs, s.pageRoutes()...)
}

// successStatus is the status of routes that do not answer 200.
var successStatus = map[string]int{
	"POST /api/auth/register":             http.StatusCreated,
	"POST /api/auth/request-verify-token": http.StatusAccepted,
	"POST /api/auth/forgot-password":      http.StatusAccepted,
	"DELETE /api/users/:id":               http.StatusNoContent,
}

// empty is the {} body.
type empty struct{}

// accessMiddleware is the auth and org checks a route's access needs.
func (s *Server) accessMiddleware(a access) []echo.MiddlewareFunc {
	switch a {
	case accessPublic:
		return nil
	case accessUser:
		return []echo.MiddlewareFunc{s.authenticate}
	case accessSuperuser:
		return []echo.MiddlewareFunc{s.authenticate, requireSuperuser}
	case accessLibSuperuser:
		return []echo.MiddlewareFunc{s.authenticate, requireLibSuperuser}
	default:
		return []echo.MiddlewareFunc{s.authenticate, s.loadOrg(a)}
	}
}

// requireLibSuperuser is requireSuperuser with the detail of upstream's
// auth library.
func requireLibSuperuser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !currentUser(c).IsSuperuser {
			return forbidden("Forbidden")
		}
		return next(c)
	}
}

func requireSuperuser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !currentUser(c).IsSuperuser {
			return forbidden(detailNotAllowed)
		}
		return next(c)
	}
}
