package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/k8s"
)

// errCrawlerNotFound is a crawlerChannel that names no configured channel.
var errCrawlerNotFound = notFound("crawler_not_found")

// channelOut is one channel on the wire; imagePullPolicy is null when
// the channel leaves it to the crawler default.
type channelOut struct {
	ID              string  `json:"id"`
	Image           string  `json:"image"`
	ImagePullPolicy *string `json:"imagePullPolicy"`
}

// channelsOut is GET /crawlconfigs/crawler-channels.
type channelsOut struct {
	Channels []channelOut `json:"channels"`
}

// listCrawlerChannels answers the configured channels, in configuration
// order.
func (s *Server) listCrawlerChannels(c echo.Context) error {
	out := channelsOut{Channels: make([]channelOut, len(s.cfg.CrawlerChannels))}
	for i, ch := range s.cfg.CrawlerChannels {
		out.Channels[i] = channelOut{ID: ch.ID, Image: ch.Image}
		if ch.ImagePullPolicy != "" {
			policy := ch.ImagePullPolicy
			out.Channels[i].ImagePullPolicy = &policy
		}
	}
	return c.JSON(http.StatusOK, out)
}

// crawlerChannel returns the configured channel id names; "" names none
// (only stored documents from before channels mean the default by it, see
// channelOf).
func (s *Server) crawlerChannel(id string) (k8s.CrawlerChannel, error) {
	if id == "" {
		return k8s.CrawlerChannel{}, errCrawlerNotFound
	}
	ch, ok := s.cfg.CrawlerChannels.Lookup(id)
	if !ok {
		return k8s.CrawlerChannel{}, errCrawlerNotFound
	}
	return ch, nil
}

// channelOf is a stored channel id, with documents from before channels
// on the default one.
func channelOf(id string) string {
	if id == "" {
		return k8s.DefaultChannel
	}
	return id
}
