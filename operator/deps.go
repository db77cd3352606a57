package operator

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/clock"

	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/store"
)

// The operator's collaborators and the interfaces it consumes, declared on
// the consumer side: main passes the concrete types (store.Mongo, the
// clientsets), tests pass fakes. The checks at the end keep the
// implementations in step.

// Deps are the operator's collaborators. Kube, Trawler and Store are
// required; the rest have defaults.
type Deps struct {
	Kube    kubernetes.Interface
	Trawler versioned.Interface
	// ProgressTrawler writes statuses that changed in progress alone, with
	// a rate limiter of its own so they never hold up Trawler's state
	// changes (default: Trawler).
	ProgressTrawler versioned.Interface
	Store           CrawlStore
	// Clock drives every time-based decision (default: real time).
	Clock clock.WithTicker
	// Logs reads a pod's log for failed crawls (default: the pods/log API).
	Logs LogReader
	// Recorder records Events (default: the events API).
	Recorder record.EventRecorder
	// Log is the operator's logger (default: slog.Default()).
	Log *slog.Logger
	// Metrics reads pod usage from metrics.k8s.io when the cluster serves
	// it (nil: no usage is reported).
	Metrics metricsclient.Interface
	// Events, when set, is the webhook notifier told when crawls start
	// and finish (not Kubernetes Events, which Recorder records).
	Events Notifier
	// Telemetry records the operator's Prometheus metrics (nil: none).
	Telemetry *Telemetry
	// Pages reads finished crawls' pages from their WACZ files (nil:
	// pages come only through Redis).
	Pages WACZPages
	// Files deletes the stored files of canceled crawls (nil: a crawl
	// canceled after it uploaded files keeps them).
	Files CanceledFiles
	// Mailer sends the e-mails to org owners about automatic pauses
	// (nil: they are only logged).
	Mailer Mailer
}

// Mailer delivers one plain-text e-mail (email.Sender implements it).
type Mailer interface {
	Send(ctx context.Context, to, subject, body string) error
}

// CrawlStore is what the operator needs from the crawl database. Every
// method may be called again after a crash, so each must be idempotent;
// *store.Mongo implements it.
type CrawlStore interface {
	// SetCrawlState is the compare-and-set of state transitions; it returns
	// whether it changed the crawl and the crawl as stored afterwards.
	SetCrawlState(ctx context.Context, crawlID, newState string, allowedFrom []string, extra store.CrawlStateExtra) (bool, *store.Crawl, error)
	// RecordCrawlsProgress stores many crawls' live stats (unless a crawl
	// has ended) and per-pod views in one bulk write; nil leaves either as
	// it is.
	RecordCrawlsProgress(ctx context.Context, progress []store.CrawlProgress) (int64, error)
	// PushCrawlFiles records WACZ files, each at most once per filename,
	// and adds the size of those it added to the org's bytesStored.
	PushCrawlFiles(ctx context.Context, crawlID string, files []store.CrawlFile) (store.FileResult, error)
	// AddCrawlErrors records error lines seq, seq+1, ... at most once.
	AddCrawlErrors(ctx context.Context, crawlID string, seq int64, lines []string) error
	// AddOperatorCrawlErrors records the operator's own lines about a
	// crawl, after the crawler's, at most once.
	AddOperatorCrawlErrors(ctx context.Context, crawlID string, lines []string) error
	// RunPostCrawlTasks does the store's idempotent post-crawl work.
	RunPostCrawlTasks(ctx context.Context, crawlID string) (*store.Crawl, error)
	// GetCrawlByID returns a crawl in any org.
	GetCrawlByID(ctx context.Context, id string) (*store.Crawl, error)
	// GetOrg returns an org (for its concurrency quota).
	GetOrg(ctx context.Context, id uuid.UUID) (*store.Org, error)
	// GetOrgs returns orgs by id in one query (for the quotas an idle
	// crawl's accounting looks for); an id without an org is absent.
	GetOrgs(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*store.Org, error)
	// AddPages inserts page documents in one write, skipping ids already
	// stored.
	AddPages(ctx context.Context, pages []store.Page) (int, error)
	// ChargeCrawlsExec counts crawls' crawler-pod seconds since their
	// last counts and charges them to their orgs, at most once per count,
	// in one write of the crawls; the ticks are in the charges' order.
	ChargeCrawlsExec(ctx context.Context, charges []store.CrawlExecCharge) []store.ExecTick
	// RequestCrawlPause records a pause request on the crawl document.
	RequestCrawlPause(ctx context.Context, crawlID string, at time.Time) error
	// ClaimAutoPauseEmail reports, once per automatic pause, that the
	// owners are to be told.
	ClaimAutoPauseEmail(ctx context.Context, crawlID string) (bool, error)
	// OrgOwnerEmails returns the addresses of an org's owners.
	OrgOwnerEmails(ctx context.Context, oid uuid.UUID) ([]string, error)
}

// WACZPages reads the pages of a finished crawl from its WACZ files when
// the crawler did not send them through Redis (0.11 channels); the API
// implements it, since the operator has no storage access.
type WACZPages interface {
	// AddWACZPages reads the pages of crawl crawlID from its WACZ files if
	// it ended successfully and has none stored yet.
	AddWACZPages(ctx context.Context, crawlID string) error
}

// CanceledFiles deletes what a crawl uploaded before it was canceled
// (the pause WACZs of a crawl canceled while paused); the API implements
// it, since the operator has no storage access.
type CanceledFiles interface {
	// DeleteCanceledCrawlFiles deletes the stored files of crawl crawlID
	// and its records of them if it ended canceled; it is idempotent.
	DeleteCanceledCrawlFiles(ctx context.Context, crawlID string) error
}

// LogReader reads container logs; the sandbox provides one since its
// kubelet serves no pods/log endpoint.
type LogReader interface {
	// PodLogs returns the last tail lines of a container's log.
	PodLogs(ctx context.Context, namespace, pod, container string, tail int64) (string, error)
}

// usageAPI reads pod usage. metricsAPI is the metrics.k8s.io one.
type usageAPI interface {
	// served reports whether pod metrics are served.
	served(ctx context.Context) (bool, error)
	// list returns the usage of the pods of ns matching selector, by name.
	list(ctx context.Context, ns, selector string) (map[string]podUsage, error)
}

// Notifier is told when crawls start running and when they finish; it
// stores their webhook notifications, which are delivered in the
// background (webhook.Notifier implements it). Both calls may be repeated
// for a crawl: only the first stores anything.
type Notifier interface {
	CrawlStarted(ctx context.Context, c *store.Crawl) error
	CrawlFinished(ctx context.Context, c *store.Crawl) error
}

// Compile-time checks of the implementations.
var (
	_ CrawlStore = (*store.Mongo)(nil)
	_ LogReader  = apiLogReader{}
	_ usageAPI   = metricsAPI{}
)
