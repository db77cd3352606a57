package api

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/store"
)

// crawlConfigIn is the body of POST /crawlconfigs.
type crawlConfigIn struct {
	Schedule              *string      `json:"schedule"`
	RunNow                *bool        `json:"runNow"`
	Config                *rawConfigIn `json:"config"`
	Name                  *string      `json:"name"`
	Description           *string      `json:"description"`
	JobType               *string      `json:"jobType"`
	ProfileID             *string      `json:"profileid"`
	AutoAddCollections    []string     `json:"autoAddCollections"`
	Tags                  []string     `json:"tags"`
	CrawlTimeout          *int64       `json:"crawlTimeout"`
	MaxCrawlSize          *int64       `json:"maxCrawlSize"`
	Scale                 *int         `json:"scale"`
	CrawlFilenameTemplate *string      `json:"crawlFilenameTemplate"`
	CrawlerChannel        opt[string]  `json:"crawlerChannel"`
	ProxyID               opt[string]  `json:"proxyId"`
}

// validate checks in against upstream's model and trawler's bounds;
// maxScale bounds scale, allowed are the internal ranges seeds may name.
func (in *crawlConfigIn) validate(maxScale int, allowed netpolicy.AllowList) error {
	var v validator
	if in.Name == nil {
		v.missing("body", "name")
	}
	if in.Config == nil {
		v.missing("body", "config")
	} else {
		in.Config.validate(&v, allowed, "body", "config")
	}
	validateMetadata(&v, in.Name, in.Description, in.Tags)
	validateWorkflowSettings(&v, workflowSettings{schedule: in.Schedule, jobType: in.JobType, scale: in.Scale,
		timeout: in.CrawlTimeout, size: in.MaxCrawlSize, filenameTemplate: in.CrawlFilenameTemplate}, maxScale)
	validateUUIDs(&v, in.AutoAddCollections, "body", "autoAddCollections")
	if in.CrawlerChannel.Null {
		v.notNull("body", "crawlerChannel")
	}
	return v.err()
}

// validateMetadata checks the lengths of a workflow's or crawl's name,
// description and tags.
func validateMetadata(v *validator, name, description *string, tags []string) {
	if name != nil {
		v.maxLen(*name, maxNameLen, "body", "name")
	}
	if description != nil {
		v.maxLen(*description, maxDescriptionLen, "body", "description")
	}
	v.tags(tags, "body", "tags")
}

// workflowSettings are the fields create and PATCH share (nil: absent).
type workflowSettings struct {
	schedule, jobType, filenameTemplate *string
	scale                               *int
	timeout, size                       *int64
}

// validateWorkflowSettings checks the settings create and PATCH share.
func validateWorkflowSettings(v *validator, w workflowSettings, maxScale int) {
	if w.schedule != nil {
		if err := checkSchedule(*w.schedule); err != nil {
			v.add(err.Error(), "value_error.schedule", "body", "schedule")
		}
	}
	if w.jobType != nil {
		v.oneOf(*w.jobType, jobTypes, "body", "jobType")
	}
	if w.scale != nil {
		v.between(int64(*w.scale), 1, int64(maxScale), "body", "scale")
	}
	if w.timeout != nil {
		v.between(*w.timeout, 0, maxCrawlTimeout, "body", "crawlTimeout")
	}
	if w.size != nil && *w.size < 0 {
		v.between(*w.size, 0, 0, "body", "maxCrawlSize")
	}
	if w.filenameTemplate != nil {
		v.storageName(*w.filenameTemplate, maxFilenameTemplateLen, "body", "crawlFilenameTemplate")
	}
}

func validateUUIDs(v *validator, ids []string, loc ...any) {
	v.maxItems(len(ids), maxIDList, loc...)
	for i, id := range ids {
		if _, err := uuid.Parse(id); err != nil {
			v.add("value is not a valid uuid", "type_error.uuid", at(loc, i)...)
		}
	}
}

// parseUUIDs converts validated UUID strings.
func parseUUIDs(ids []string) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		out = append(out, uuid.MustParse(id))
	}
	return out
}

// cronParser reads the standard five-field cron schedules (and the
// @hourly-style descriptors) that upstream's Kubernetes CronJobs took.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// checkSchedule accepts "" (no schedule) and five-field cron schedules,
// which run at most once a minute: "@every", which can be any shorter
// interval, and a time-zone prefix, which upstream's CronJobs did not
// take, are refused.
func checkSchedule(schedule string) error {
	s := strings.TrimSpace(schedule)
	switch {
	case s == "":
		return nil
	case strings.HasPrefix(strings.ToLower(s), "@every"):
		return errors.New("invalid cron schedule: @every is not supported; use five fields (minute hour day-of-month month day-of-week), at most once a minute")
	case strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ="):
		return errors.New("invalid cron schedule: a time zone is not supported; schedules run in UTC")
	}
	if _, err := cronParser.Parse(s); err != nil {
		return fmt.Errorf("invalid cron schedule: %w", err)
	}
	return nil
}

// parseSchedule is the cron schedule of a stored, non-empty schedule;
// one saved before schedules were checked (e.g. "@every 1s") is refused
// like an unparsable one.
func parseSchedule(schedule string) (cron.Schedule, error) {
	if err := checkSchedule(schedule); err != nil {
		return nil, err
	}
	return cronParser.Parse(schedule)
}

// toStoreCrawlConfig builds a new workflow from a validated request.
func toStoreCrawlConfig(in *crawlConfigIn, oid, by uuid.UUID, now time.Time) *store.CrawlConfig {
	c := &store.CrawlConfig{
		ID: uuid.New(), OID: oid, Name: in.Name, Description: in.Description,
		Schedule: deref1(in.Schedule), JobType: "custom", Config: toStoreRawConfig(in.Config),
		Tags: in.Tags, Scale: 1, AutoAddCollections: parseUUIDs(in.AutoAddCollections),
		CrawlFilenameTemplate: deref1(in.CrawlFilenameTemplate), CrawlerChannel: k8s.DefaultChannel,
		Created: now, CreatedBy: by, Modified: now, ModifiedBy: by,
	}
	if in.CrawlerChannel.given() {
		c.CrawlerChannel = in.CrawlerChannel.Value
	}
	if in.JobType != nil {
		c.JobType = *in.JobType
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if in.Scale != nil {
		c.Scale = *in.Scale
	}
	if in.CrawlTimeout != nil {
		c.CrawlTimeout = *in.CrawlTimeout
	}
	if in.MaxCrawlSize != nil {
		c.MaxCrawlSize = *in.MaxCrawlSize
	}
	return c
}

// crawlConfigUpdateIn is the body of PATCH /crawlconfigs/{cid}. Every
// field may be absent; an explicit null is written (as upstream does).
type crawlConfigUpdateIn struct {
	Name                  opt[string]      `json:"name"`
	Description           opt[string]      `json:"description"`
	Tags                  opt[[]string]    `json:"tags"`
	AutoAddCollections    opt[[]string]    `json:"autoAddCollections"`
	Schedule              opt[string]      `json:"schedule"`
	ProfileID             opt[string]      `json:"profileid"`
	CrawlTimeout          opt[int64]       `json:"crawlTimeout"`
	MaxCrawlSize          opt[int64]       `json:"maxCrawlSize"`
	Scale                 opt[int]         `json:"scale"`
	CrawlFilenameTemplate opt[string]      `json:"crawlFilenameTemplate"`
	CrawlerChannel        opt[string]      `json:"crawlerChannel"`
	ProxyID               opt[string]      `json:"proxyId"`
	Config                opt[rawConfigIn] `json:"config"`
}

// proxyApplies reports whether the PATCH's proxyId is for the workflow
// itself: when it has no profile after the PATCH (a workflow with a
// profile goes through the profile's proxy), as upstream.
func (in *crawlConfigUpdateIn) proxyApplies(old *store.CrawlConfig) bool {
	if in.ProfileID.given() {
		return in.ProfileID.Value == ""
	}
	return old.ProfileID == nil
}

func (in *crawlConfigUpdateIn) validate(maxScale int, allowed netpolicy.AllowList) error {
	var v validator
	if in.Config.given() {
		in.Config.Value.validate(&v, allowed, "body", "config")
	}
	validateMetadata(&v, in.Name.ptr(), in.Description.ptr(), in.Tags.Value)
	validateWorkflowSettings(&v, workflowSettings{schedule: in.Schedule.ptr(), scale: in.Scale.ptr(),
		timeout: in.CrawlTimeout.ptr(), size: in.MaxCrawlSize.ptr(), filenameTemplate: in.CrawlFilenameTemplate.ptr()}, maxScale)
	if in.Scale.Set && in.Scale.Null {
		v.notNull("body", "scale")
	}
	if in.Config.Set && in.Config.Null {
		v.notNull("body", "config")
	}
	if in.CrawlerChannel.Null {
		v.notNull("body", "crawlerChannel")
	}
	validateUUIDs(&v, in.AutoAddCollections.Value, "body", "autoAddCollections")
	return v.err()
}

// workflowChange is a PATCH turned into a store update plus what changed.
type workflowChange struct {
	update          store.CrawlConfigUpdate
	settingsChanged bool
	metadataChanged bool
	scheduleChanged bool
}

// diffWorkflow compares a validated PATCH with the stored workflow the way
// upstream does: null counts as "not given" for change detection but is
// still written; tags compare in order, collections as sets.
func diffWorkflow(in *crawlConfigUpdateIn, old *store.CrawlConfig) workflowChange {
	var ch workflowChange
	u := &ch.update
	if in.Name.Set {
		u.Name = store.Some(in.Name.ptr())
		ch.metadataChanged = ch.metadataChanged || in.Name.given() && !eqPtr(in.Name.ptr(), old.Name)
	}
	if in.Description.Set {
		u.Description = store.Some(in.Description.ptr())
		ch.metadataChanged = ch.metadataChanged || in.Description.given() && !eqPtr(in.Description.ptr(), old.Description)
	}
	if in.Tags.Set {
		tags := in.Tags.Value
		if tags == nil {
			tags = []string{}
		}
		u.Tags = store.Some(tags)
		ch.metadataChanged = ch.metadataChanged || in.Tags.given() && !slices.Equal(tags, old.Tags)
	}
	if in.AutoAddCollections.Set {
		ids := parseUUIDs(in.AutoAddCollections.Value)
		u.AutoAddCollections = store.Some(ids)
		ch.metadataChanged = ch.metadataChanged || in.AutoAddCollections.given() && !sameUUIDSet(ids, old.AutoAddCollections)
	}
	if in.Schedule.given() && in.Schedule.Value != old.Schedule {
		u.Schedule = store.Some(in.Schedule.Value)
		ch.settingsChanged, ch.scheduleChanged = true, true
	}
	if in.CrawlTimeout.given() && in.CrawlTimeout.Value != old.CrawlTimeout {
		u.CrawlTimeout = store.Some(in.CrawlTimeout.Value)
		ch.settingsChanged = true
	}
	if in.MaxCrawlSize.given() && in.MaxCrawlSize.Value != old.MaxCrawlSize {
		u.MaxCrawlSize = store.Some(in.MaxCrawlSize.Value)
		ch.settingsChanged = true
	}
	if in.Scale.given() && in.Scale.Value != old.Scale {
		u.Scale = store.Some(in.Scale.Value)
		ch.settingsChanged = true
	}
	if in.CrawlerChannel.given() && in.CrawlerChannel.Value != channelOf(old.CrawlerChannel) {
		u.CrawlerChannel = store.Some(in.CrawlerChannel.Value)
		ch.settingsChanged = true
	}
	// "" clears the proxy; null leaves it.
	if in.ProxyID.given() && in.proxyApplies(old) {
		var id *string
		if in.ProxyID.Value != "" {
			id = &in.ProxyID.Value
		}
		if !eqPtr(id, old.ProxyID) {
			u.ProxyID = store.Some(id)
			ch.settingsChanged = true
		}
	}
	if in.CrawlFilenameTemplate.given() && in.CrawlFilenameTemplate.Value != old.CrawlFilenameTemplate {
		u.CrawlFilenameTemplate = store.Some(in.CrawlFilenameTemplate.Value)
		ch.settingsChanged = true
	}
	// A null profileid leaves the profile; "" removes it. Upstream missed
	// a change from one profile to another.
	if in.ProfileID.given() {
		var id *uuid.UUID
		if in.ProfileID.Value != "" {
			p := uuid.MustParse(in.ProfileID.Value) // checked by resolveProfile
			id = &p
		}
		if (id == nil) != (old.ProfileID == nil) || id != nil && *id != *old.ProfileID {
			u.ProfileID = store.Some(id)
			ch.settingsChanged = true
		}
	}
	if in.Config.given() {
		cfg := toStoreRawConfig(&in.Config.Value)
		if !sameConfig(cfg, old.Config) {
			u.Config = store.Some(cfg)
			ch.settingsChanged = true
		}
	}
	return ch
}

func eqPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func sameUUIDSet(a, b []uuid.UUID) bool {
	if len(a) != len(b) {
		return false
	}
	sa, sb := slices.Clone(a), slices.Clone(b)
	cmp := func(x, y uuid.UUID) int { return slices.Compare(x[:], y[:]) }
	slices.SortFunc(sa, cmp)
	slices.SortFunc(sb, cmp)
	return slices.Equal(sa, sb)
}

// toRevision copies the settings of a workflow before they change.
func toRevision(old *store.CrawlConfig) *store.ConfigRevision {
	return &store.ConfigRevision{ID: uuid.New(), CID: old.ID, Schedule: old.Schedule, Config: old.Config,
		ProfileID: old.ProfileID, CrawlTimeout: old.CrawlTimeout, MaxCrawlSize: old.MaxCrawlSize,
		Scale: old.Scale, CrawlerChannel: channelOf(old.CrawlerChannel),
		Modified: old.Modified, ModifiedBy: old.ModifiedBy, Rev: old.Rev}
}
