package store

import "slices"

// Crawl states, as named by Browsertrix at ad9bca2, and the states of
// pause and resume, named as upstream names them today. They are part of
// the wire format.
const (
	StateStarting        = "starting"
	StateWaitingCapacity = "waiting_capacity"
	StateWaitingOrgLimit = "waiting_org_limit"
	StateRunning         = "running"
	StatePendingWait     = "pending-wait"
	StateGenerateWACZ    = "generate-wacz"
	StateUploadingWACZ   = "uploading-wacz"
	StateComplete        = "complete"
	StatePartialComplete = "partial_complete"
	StateCanceled        = "canceled"
	StateFailed          = "failed"
	// StatePaused is a crawl paused by its user: no crawler runs, its
	// volumes and queue are kept for the resume.
	StatePaused = "paused"
	// StateStoppedPauseExpired ends a paused crawl that was not resumed
	// in time; its files are kept.
	StateStoppedPauseExpired = "stopped_pause_expired"
)

// States of the execution-time and storage quotas (upstream-2026 §6):
// a crawl that starts over a quota is skipped (a failed state), one that
// reaches a quota while running is paused.
const (
	StateSkippedStorageQuota = "skipped_storage_quota_reached"
	StateSkippedTimeQuota    = "skipped_time_quota_reached"
	StatePausedStorageQuota  = "paused_storage_quota_reached"
	StatePausedTimeQuota     = "paused_time_quota_reached"
	// StatePausedOrgReadOnly is a crawl paused because its org was set
	// read-only.
	StatePausedOrgReadOnly = "paused_org_readonly"
)

// State groups used by transitions and filters.
var (
	StartingStates   = []string{StateStarting, StateWaitingCapacity, StateWaitingOrgLimit}
	RunningStates    = []string{StateRunning, StatePendingWait, StateGenerateWACZ, StateUploadingWACZ}
	FailedStates     = []string{StateCanceled, StateFailed, StateSkippedStorageQuota, StateSkippedTimeQuota}
	SuccessfulStates = []string{StateComplete, StatePartialComplete, StateStoppedPauseExpired}
	// PausedStates are the states of a paused crawl, by the user or by a
	// quota. A paused crawl has not ended: it keeps its workflow's run and
	// its org's slot, and its crawler time is not charged.
	PausedStates = []string{StatePaused, StatePausedStorageQuota, StatePausedTimeQuota, StatePausedOrgReadOnly}
	// ActiveStates are all states of a crawl that has not ended.
	ActiveStates = slices.Concat(StartingStates, RunningStates, PausedStates)
	// FinishedStates are the terminal states.
	FinishedStates = slices.Concat(FailedStates, SuccessfulStates)
	// AllStates lists every state.
	AllStates = slices.Concat(ActiveStates, FinishedStates)
)

// IsFinished reports whether state is terminal.
func IsFinished(state string) bool { return slices.Contains(FinishedStates, state) }

// IsSuccessful reports whether state is a successful terminal state.
func IsSuccessful(state string) bool { return slices.Contains(SuccessfulStates, state) }

// IsRunning reports whether state is one of the running group.
func IsRunning(state string) bool { return slices.Contains(RunningStates, state) }

// IsPaused reports whether state is one of the paused group.
func IsPaused(state string) bool { return slices.Contains(PausedStates, state) }

// IsActive reports whether a crawl in state has not ended yet.
func IsActive(state string) bool { return slices.Contains(ActiveStates, state) }
