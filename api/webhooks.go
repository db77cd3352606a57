package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// notificationOut is one webhook notification with its delivery record.
type notificationOut struct {
	ID            uuid.UUID       `json:"id"`
	Event         string          `json:"event"`
	OID           uuid.UUID       `json:"oid"`
	Body          json.RawMessage `json:"body"`
	Success       bool            `json:"success"`
	Attempts      int             `json:"attempts"`
	Created       string          `json:"created"`
	LastAttempted *string         `json:"lastAttempted"`
}

func toNotificationOut(n *store.Notification) notificationOut {
	out := notificationOut{ID: n.ID, Event: n.Event, OID: n.OID, Body: n.Body, Success: n.Success,
		Attempts: n.Attempts, Created: fmtTimeFrac(n.Created)}
	if n.LastAttempted != nil {
		t := fmtTimeFrac(*n.LastAttempted)
		out.LastAttempted = &t
	}
	return out
}

// webhookURLs are an org's event webhook URLs, a key per event. As the
// body of POST /api/orgs/{oid}/event-webhook-urls any subset of the events
// is given (the type is for the OpenAPI document; the handler reads the
// keys itself to tell absent from invalid); as an org's webhookUrls every
// key is sent, null where the org has no URL.
type webhookURLs struct {
	CrawlStarted          *string `json:"crawlStarted"`
	CrawlFinished         *string `json:"crawlFinished"`
	UploadFinished        *string `json:"uploadFinished"`
	AddedToCollection     *string `json:"addedToCollection"`
	RemovedFromCollection *string `json:"removedFromCollection"`
}

func toWebhookURLs(urls map[string]string) webhookURLs {
	url := func(event string) *string {
		if u, ok := urls[event]; ok && u != "" {
			return &u
		}
		return nil
	}
	return webhookURLs{CrawlStarted: url(store.EventCrawlStarted), CrawlFinished: url(store.EventCrawlFinished),
		UploadFinished: url(store.EventUploadFinished), AddedToCollection: url(store.EventAddedToCollection),
		RemovedFromCollection: url(store.EventRemovedFromCollection)}
}

// maxURLLength is pydantic's HttpUrl limit.
const maxURLLength = 2083

// validHTTPURL is pydantic v1's HttpUrl (webhook and profile browser
// URLs): http(s), at most 2083 characters, and a host that is an IP
// address or a name with a top-level domain (http://localhost/x is
// refused, as upstream).
func validHTTPURL(s string) bool {
	if len(s) > maxURLLength || !isHTTPURL(s) {
		return false
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.Contains(host, ":") || isIPv4(host) {
		return true
	}
	dot := strings.LastIndex(host, ".")
	return dot > 0 && dot < len(host)-1
}

func isIPv4(host string) bool {
	parts := strings.Split(host, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// setWebhookURLs replaces the org's webhook URLs with exactly the events
// in the body (left-out events are unsubscribed; {} clears all) and
// records the origin that download URLs in notifications start with.
func (s *Server) setWebhookURLs(c echo.Context) error {
	var in map[string]*json.RawMessage
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	var v validator
	urls := map[string]string{}
	for _, event := range store.WebhookEvents {
		raw, ok := in[event]
		if !ok || raw == nil || string(*raw) == "null" {
			continue
		}
		var u string
		if err := json.Unmarshal(*raw, &u); err != nil {
			v.add("str type expected", "type_error.str", "body", event)
			continue
		}
		if !validHTTPURL(u) {
			v.add("invalid or missing URL scheme, or host without a top-level domain", "value_error.url", "body", event)
			continue
		}
		v.internalHost(u, s.cfg.AllowedOutbound, "webhooks", "body", event)
		urls[event] = u
	}
	if err := v.err(); err != nil {
		return err
	}
	if err := s.store.SetOrgWebhooks(c.Request().Context(), currentOrg(c).ID, urls, s.origin(c)); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, updatedOut{Updated: true})
}

func (s *Server) listNotifications(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	if err := q.err(); err != nil {
		return err
	}
	notes, total, err := s.store.ListNotifications(c.Request().Context(), currentOrg(c).ID, p.paging())
	if err != nil {
		return err
	}
	items := make([]notificationOut, len(notes))
	for i := range notes {
		items[i] = toNotificationOut(&notes[i])
	}
	return c.JSON(http.StatusOK, newPageOut(items, int(total), p))
}

// notificationParam is the {notificationid} path parameter (a UUID4).
func notificationParam(c echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("notificationid"))
	if err != nil || id.Version() != 4 {
		return uuid.Nil, validationError{{Loc: []any{"path", "notificationid"}, Msg: "value is not a valid uuid", Type: "type_error.uuid"}}
	}
	return id, nil
}

func (s *Server) getNotification(c echo.Context) error {
	id, err := notificationParam(c)
	if err != nil {
		return err
	}
	n, err := s.store.GetNotification(c.Request().Context(), currentOrg(c).ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toNotificationOut(n))
}

// retryNotification asks for one more attempt of a notification, made at
// once whatever became of the earlier ones and whenever its automatic
// retry is due, and answers before it is made (upstream sends in the
// background too).
func (s *Server) retryNotification(c echo.Context) error {
	id, err := notificationParam(c)
	if err != nil {
		return err
	}
	if err := s.store.RetryNotification(c.Request().Context(), currentOrg(c).ID, id, s.clock.Now().UTC()); err != nil {
		return err
	}
	if s.webhooks != nil {
		s.webhooks.Kick()
	}
	return c.JSON(http.StatusOK, successOut{Success: true})
}
