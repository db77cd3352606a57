package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CrawlJob asks the operator to run one crawl: a Redis pod and PVC for the
// crawl's shared state and one crawler pod and PVC per instance. The API
// creates it when a crawl starts and patches its spec to stop, rescale or
// restart the crawl; the operator owns its status.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.scale,statuspath=.status.scale
// +kubebuilder:resource:shortName=cjs,categories=trawler
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Scale",type=integer,JSONPath=`.status.scale`
// +kubebuilder:printcolumn:name="Pages Done",type=integer,JSONPath=`.status.pagesDone`
// +kubebuilder:printcolumn:name="Pages Found",type=integer,JSONPath=`.status.pagesFound`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.sizeHuman`
// +kubebuilder:printcolumn:name="Stopping",type=boolean,JSONPath=`.status.stopping`,priority=1
// +kubebuilder:printcolumn:name="Files Added",type=integer,JSONPath=`.status.filesAdded`,priority=1
// +kubebuilder:printcolumn:name="Finished",type=date,JSONPath=`.status.finished`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CrawlJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CrawlJobSpec   `json:"spec"`
	Status CrawlJobStatus `json:"status,omitempty"`
}

// CrawlJobSpec is what should run. Everything the crawler pods need is here
// or in the ConfigMap it names, so a running crawl never drifts when its
// workflow is edited.
type CrawlJobSpec struct {
	// ID is the crawl id: the crawls document _id in MongoDB, the crawler's
	// CRAWL_ID and so the prefix of every key in the crawl's Redis. It is
	// part of the children's names and labels, hence a DNS label short
	// enough for "crawl-<id>-<i>".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=54
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ID string `json:"id"`
	// CID is the workflow (crawl config) id.
	CID string `json:"cid"`
	// OID is the organisation id.
	OID string `json:"oid"`
	// UserID is who started the crawl; it reaches the crawler as STORE_USER.
	UserID string `json:"userid,omitempty"`

	// Scale is the desired number of crawler instances.
	// +kubebuilder:validation:Minimum=1
	Scale int32 `json:"scale"`
	// Manual is true for crawls started through the API, false for
	// scheduled ones.
	Manual bool `json:"manual,omitempty"`
	// Stopping asks for a graceful stop: crawlers finish their pages, upload
	// what they have and exit.
	Stopping bool `json:"stopping,omitempty"`
	// PausedAt, when set (RFC 3339, UTC), asks for the crawl to be paused
	// since then: the crawlers upload what they have and exit, keeping
	// their volumes and the crawl's queue; "" resumes it. A crawl paused
	// longer than the operator's paused-crawl limit ends as
	// stopped_pause_expired.
	PausedAt string `json:"pausedAt,omitempty"`
	// RestartTime, when it differs from status.restartTime, makes the
	// operator delete and recreate the crawler pods (keeping their PVCs), so
	// they pick up a changed crawl config.
	RestartTime string `json:"restartTime,omitempty"`

	// CrawlTimeout is the crawl's time limit in seconds of running time
	// (0 = none); past it the crawl is stopped gracefully.
	// +kubebuilder:validation:Minimum=0
	CrawlTimeout int64 `json:"crawlTimeout,omitempty"`
	// MaxCrawlSize is the size limit in bytes (0 = none); past it the crawl
	// is stopped gracefully.
	// +kubebuilder:validation:Minimum=0
	MaxCrawlSize int64 `json:"maxCrawlSize,omitempty"`
	// TTLSecondsAfterFinished is how long a finished CrawlJob is kept before
	// it is deleted. Defaults to 30.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// ConfigMap names the ConfigMap in the CrawlJob's namespace whose
	// "crawl-config.json" key is mounted into the crawlers.
	// +kubebuilder:validation:MinLength=1
	ConfigMap string `json:"configMap"`
	// StorageName selects the storage secret "storage-<name>" given to the
	// crawlers.
	StorageName string `json:"storageName,omitempty"`
	// StoragePath is STORE_PATH, the prefix of uploaded files (e.g. "<oid>/").
	StoragePath string `json:"storagePath,omitempty"`
	// StoreFilename is STORE_FILENAME, the WACZ name template.
	StoreFilename string `json:"storeFilename,omitempty"`
	// ProfileFilename, when set, is the browser profile loaded by crawlers.
	ProfileFilename string `json:"profileFilename,omitempty"`
	// CrawlerChannel names the configured crawler channel whose image and
	// pull policy the crawler pods run ("" is the default channel). The
	// operator resolves it whenever it creates a pod, so a change reaches
	// the pods created after it.
	// +kubebuilder:validation:MaxLength=63
	CrawlerChannel string `json:"crawlerChannel,omitempty"`
	// ProxyID names the configured crawler proxy the crawler pods go
	// through ("" for none). The operator looks it up whenever it creates a
	// pod; a proxy removed from the configuration meanwhile is left out.
	// +kubebuilder:validation:MaxLength=63
	ProxyID string `json:"proxyId,omitempty"`
	// SeedFileURL is a presigned link to the crawl's seed file, which a
	// 1.x crawler downloads at each start (upstream's seedFileUrl; the
	// crawl config gets it as seedFile). Empty: the config's own seeds.
	SeedFileURL string `json:"seedFileUrl,omitempty"`
}

// CrawlJobStatus is what the operator observed and decided. The crawl
// document in MongoDB stays the source of truth for the user-visible state;
// State here is its cached copy.
type CrawlJobStatus struct {
	// State is the crawl state (starting, running, complete, ...).
	State string `json:"state,omitempty"`
	// PagesFound is the number of URLs the crawlers have seen.
	PagesFound int64 `json:"pagesFound,omitempty"`
	// PagesDone is the number of pages finished (successfully or not).
	PagesDone int64 `json:"pagesDone,omitempty"`
	// Size is the bytes of WARC data on the crawlers' volumes.
	Size int64 `json:"size,omitempty"`
	// SizeHuman is Size in decimal units, for kubectl.
	SizeHuman string `json:"sizeHuman,omitempty"`
	// Scale is the applied scale: crawler instances the operator keeps.
	Scale int32 `json:"scale,omitempty"`
	// FilesAdded counts the WACZ files recorded in MongoDB.
	FilesAdded int64 `json:"filesAdded,omitempty"`
	// FilesAddedSize is the total size of those files in bytes.
	FilesAddedSize int64 `json:"filesAddedSize,omitempty"`
	// Finished is set when the crawl reached a terminal state.
	Finished *metav1.Time `json:"finished,omitempty"`
	// Stopping is the operator's decision to stop gracefully: a user stop,
	// the time limit or the size limit.
	Stopping bool `json:"stopping,omitempty"`
	// StopReason says why the crawl is stopping or pausing:
	// stopped_by_user, time-limit, size-limit, paused,
	// stopped_pause_expired, or the quotas' automatic pauses
	// paused_time_quota_reached and paused_storage_quota_reached.
	StopReason string `json:"stopReason,omitempty"`
	// InitRedis says whether the Redis pod should exist.
	InitRedis bool `json:"initRedis,omitempty"`
	// LastActiveTime is the last time a crawler pod was seen running.
	LastActiveTime *metav1.Time `json:"lastActiveTime,omitempty"`
	// RunningSince is when a crawler pod was first seen running; the time
	// limit counts from here.
	RunningSince *metav1.Time `json:"runningSince,omitempty"`
	// RestartTime is the last spec.restartTime acted upon.
	RestartTime string `json:"restartTime,omitempty"`
	// WaitingReason tells why no crawler runs yet, e.g. the scheduler's
	// message for an unschedulable pod.
	WaitingReason string `json:"waitingReason,omitempty"`
	// RestartsAtProgress is the sum of the crawler containers' restarts
	// when the crawl last got a page done (or its pods were recreated):
	// crawlers that restart operator.crash_loop_restarts times beyond it
	// are getting nowhere, and the operator fails the crawl.
	RestartsAtProgress int32 `json:"restartsAtProgress,omitempty"`
	// CrawlerImage is the image of the crawl's channel, resolved on every
	// sync: the image the crawler pods created from then on run.
	CrawlerImage string `json:"crawlerImage,omitempty"`
	// CrawlerRestarts counts every crawler container restart over the
	// crawl's life, those of pods since recreated included: when it
	// reaches operator.max_crawler_restarts the operator fails the crawl,
	// however many pages got done in between.
	CrawlerRestarts int32 `json:"crawlerRestarts,omitempty"`
	// FailReason says why the operator failed the crawl itself (a crawler
	// exited with the crawler's fatal code, crash-looped, or restarted too
	// often in all); it goes into the crawl's errors with the crawler
	// pods' last log lines.
	FailReason string `json:"failReason,omitempty"`
	// Pods describes each child pod by name ("redis", "0", "1", ...).
	Pods map[string]PodStatus `json:"pods,omitempty"`
	// Conditions report problems such as an invalid spec.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the spec generation this status reflects.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// PodStatus is what the operator reports about one child pod.
type PodStatus struct {
	// Phase is the pod phase.
	Phase string `json:"phase,omitempty"`
	// Requests are the resources the pod asked for (cpu, memory, storage).
	Requests map[string]string `json:"requests,omitempty"`
	// Usage is the latest measured usage (cpu, memory) when metrics are
	// available.
	Usage map[string]string `json:"usage,omitempty"`
	// Restarts is the container restart count.
	Restarts int32 `json:"restarts,omitempty"`
	// ExitCode is the last terminated container's exit code.
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Reason is the last termination reason (Completed, OOMKilled, Error).
	Reason string `json:"reason,omitempty"`
}

// CrawlJobList is a list of CrawlJobs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type CrawlJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []CrawlJob `json:"items"`
}
