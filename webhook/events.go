package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// The bodies, field for field and in upstream's key order.
type (
	crawlStartedBody struct {
		DownloadURLs []string `json:"downloadUrls"`
		OrgID        string   `json:"orgId"`
		ItemID       string   `json:"itemId"`
		Scheduled    bool     `json:"scheduled"`
		Event        string   `json:"event"`
	}
	crawlFinishedBody struct {
		DownloadURLs []string `json:"downloadUrls"`
		OrgID        string   `json:"orgId"`
		ItemID       string   `json:"itemId"`
		Event        string   `json:"event"`
		State        string   `json:"state"`
	}
	uploadFinishedBody struct {
		DownloadURLs []string `json:"downloadUrls"`
		OrgID        string   `json:"orgId"`
		ItemID       string   `json:"itemId"`
		Event        string   `json:"event"`
	}
	collectionBody struct {
		DownloadURLs []string `json:"downloadUrls"`
		OrgID        string   `json:"orgId"`
		CollectionID string   `json:"collectionId"`
		ItemIDs      []string `json:"itemIds"`
		Event        string   `json:"event"`
	}
)

// CrawlStarted notifies the org that crawl c is running. Calling it again
// for the same crawl sends nothing more. As upstream advised, downloadUrls
// is [] (not null); scheduled is true for crawls the scheduler started
// (upstream always said true).
func (n *Notifier) CrawlStarted(ctx context.Context, c *store.Crawl) error {
	org, ok, err := n.subscribed(ctx, c.OID, store.EventCrawlStarted)
	if !ok {
		return err
	}
	body := crawlStartedBody{DownloadURLs: []string{}, OrgID: c.OID.String(), ItemID: c.ID,
		Scheduled: !c.Manual, Event: store.EventCrawlStarted}
	return n.emit(ctx, org, store.EventCrawlStarted, onceID(store.EventCrawlStarted, c.ID), body)
}

// CrawlFinished notifies the org that crawl c ended (in any final state)
// with the download URLs of its files, then that it was added to each of
// its collections (auto-added ones included), as upstream does. Calling
// it again for the same crawl sends nothing more.
func (n *Notifier) CrawlFinished(ctx context.Context, c *store.Crawl) error {
	return n.itemFinished(ctx, c, store.EventCrawlFinished, c.ID, func(urls []string) any {
		return crawlFinishedBody{DownloadURLs: urls, OrgID: c.OID.String(), ItemID: c.ID,
			Event: store.EventCrawlFinished, State: c.State}
	})
}

// UploadFinished notifies the org that upload u was stored (a new upload
// or a replacement) with the download URLs of its files, then that it was
// added to each of its collections, as upstream does. Calling it again for
// the same stored files sends nothing more.
func (n *Notifier) UploadFinished(ctx context.Context, u *store.Crawl) error {
	// The stored names are new for every replacement: one event each.
	version := u.ID
	for _, f := range u.Files {
		version += "/" + f.Filename
	}
	return n.itemFinished(ctx, u, store.EventUploadFinished, version, func(urls []string) any {
		return uploadFinishedBody{DownloadURLs: urls, OrgID: u.OID.String(), ItemID: u.ID, Event: store.EventUploadFinished}
	})
}

// itemFinished stores event for a finished crawl or a stored upload, its
// body made with the download URLs of the item's files, then an
// addedToCollection for each collection it is in. version identifies this
// finish of the item, so a repeated call sends nothing more.
func (n *Notifier) itemFinished(ctx context.Context, item *store.Crawl, event, version string, body func(downloadURLs []string) any) error {
	org, ok, err := n.subscribed(ctx, item.OID, event)
	if !ok {
		return err
	}
	paths, err := n.resources(ctx, item)
	if err != nil {
		return fmt.Errorf("listing the files of %s: %w", item.ID, err)
	}
	if err := n.emit(ctx, org, event, onceID(event, version), body(absoluteURLs(org.Origin, paths))); err != nil {
		return err
	}
	return n.addedToItsCollections(ctx, org, item, version)
}

// addedToItsCollections follows a finished crawl or upload with one
// addedToCollection per collection it is in; version tells this finish
// from other ones of the same item.
func (n *Notifier) addedToItsCollections(ctx context.Context, org *store.Org, item *store.Crawl, version string) error {
	if org.WebhookURLs[store.EventAddedToCollection] == "" {
		return nil
	}
	for _, coll := range item.CollectionIDs {
		id := onceID(store.EventAddedToCollection, version+"/"+coll.String())
		if err := n.emit(ctx, org, store.EventAddedToCollection, id, collectionEvent(org, store.EventAddedToCollection, coll, item.ID)); err != nil {
			return err
		}
	}
	return nil
}

// CollectionChanged notifies the org that items were added to collection
// coll (event addedToCollection) or removed from it
// (removedFromCollection), with the item ids as the request gave them.
func (n *Notifier) CollectionChanged(ctx context.Context, oid uuid.UUID, event string, coll uuid.UUID, itemIDs []string) error {
	org, ok, err := n.subscribed(ctx, oid, event)
	if !ok {
		return err
	}
	return n.emit(ctx, org, event, uuid.New(), collectionEvent(org, event, coll, itemIDs...))
}

// collectionEvent is the body of addedToCollection and
// removedFromCollection.
func collectionEvent(org *store.Org, event string, coll uuid.UUID, itemIDs ...string) collectionBody {
	download := fmt.Sprintf("%s/api/orgs/%s/collections/%s/download", org.Origin, org.ID, coll)
	if itemIDs == nil {
		itemIDs = []string{}
	}
	return collectionBody{DownloadURLs: []string{download}, OrgID: org.ID.String(), CollectionID: coll.String(),
		ItemIDs: itemIDs, Event: event}
}

// subscribed returns the org when it has a URL for event. Without one,
// nothing is stored or sent, as upstream.
func (n *Notifier) subscribed(ctx context.Context, oid uuid.UUID, event string) (*store.Org, bool, error) {
	org, err := n.store.GetOrg(ctx, oid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading org webhooks: %w", err)
	}
	return org, org.WebhookURLs[event] != "", nil
}

// emit stores the notification (its delivery pending) and wakes the
// deliverer. It returns once the notification is stored, before any
// delivery.
func (n *Notifier) emit(ctx context.Context, org *store.Org, event string, id uuid.UUID, body any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encoding %s body: %w", event, err)
	}
	note := &store.Notification{ID: id, Event: event, OID: org.ID, Body: raw, Created: n.now()}
	added, err := n.store.AddNotification(ctx, note)
	if err != nil {
		return fmt.Errorf("storing %s notification: %w", event, err)
	}
	if added {
		n.Kick()
	}
	return nil
}

// onceID is the notification id of an event that happens once per item:
// a UUID (version 4 bits, as the API's ids are validated) derived from
// event and item, so a repeated call finds the notification already
// stored.
func onceID(event, item string) uuid.UUID {
	sum := sha256.Sum256([]byte("trawler webhook\x00" + event + "\x00" + item))
	var id uuid.UUID
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// absoluteURLs prefixes relative paths with the org's origin; absolute
// URLs (a presigned S3 URL) stay as they are (upstream prefixed those too).
func absoluteURLs(origin string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		switch {
		case strings.Contains(p, "://"):
			out[i] = p
		case strings.HasPrefix(p, "/"):
			out[i] = origin + p
		default:
			out[i] = origin + "/" + p
		}
	}
	return out
}
