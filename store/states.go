package store

import "slices"

// Crawl states, as named by Browsertrix at ad9bca2. They are part of the
// wire format.
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
)

// State groups used by transitions and filters.
var (
	StartingStates   = []string{StateStarting, StateWaitingCapacity, StateWaitingOrgLimit}
	RunningStates    = []string{StateRunning, StatePendingWait, StateGenerateWACZ, StateUploadingWACZ}
	FailedStates     = []string{StateCanceled, StateFailed}
	SuccessfulStates = []string{StateComplete, StatePartialComplete}
	// ActiveStates are all states of a crawl that has not ended.
	ActiveStates = slices.Concat(StartingStates, RunningStates)
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

// IsActive reports whether a crawl in state has not ended yet.
func IsActive(state string) bool { return slices.Contains(ActiveStates, state) }
