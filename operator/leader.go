package operator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderElection configures the Lease that makes exactly one replica run
// the operator.
type LeaderElection struct {
	// Namespace and Name locate the Lease.
	Namespace string
	Name      string
	// Identity names this replica (e.g. the pod name); must be unique.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod time the election (see
	// leaderelection.LeaderElectionConfig).
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// OnLeading, when set, is called once this replica starts leading.
	OnLeading func()
}

// ErrLostLeadership is returned by RunWithLeaderElection when another
// replica took the Lease; the process should exit and start afresh.
var ErrLostLeadership = errors.New("operator: lost leadership")

// RunWithLeaderElection waits for the Lease and runs the controller while
// holding it. It returns once the controller has stopped: nil when ctx
// ends, ErrLostLeadership if the Lease is lost (a Controller runs once;
// build a new one to lead again).
func (c *Controller) RunWithLeaderElection(ctx context.Context, le LeaderElection) error {
	if le.Identity == "" || le.Namespace == "" || le.Name == "" {
		return errors.New("operator: leader election needs a namespace, a name and an identity")
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.Namespace, le.Name,
		c.kube.CoreV1(), c.kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: le.Identity})
	if err != nil {
		return fmt.Errorf("creating lease lock: %w", err)
	}
	// The elector releases the Lease when runCtx ends, so runCtx outlives
	// ctx until this replica's control writes have stopped: the next
	// leader must not find them still going.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stopControl := sync.OnceFunc(c.pollers.stopAll)
	go func() {
		select {
		case <-ctx.Done():
			stopControl()
			cancel()
		case <-runCtx.Done():
		}
	}()
	// The elector calls OnStartedLeading on a goroutine it does not wait
	// for, so the controller runs here instead: this function then returns
	// only after the controller has stopped.
	leading := make(chan context.Context, 1)
	lost := false
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            le.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { leading <- ctx },
			OnStoppedLeading: func() {
				stopControl()
				if ctx.Err() == nil {
					lost = true
				}
				cancel()
			},
		},
	})
	if err != nil {
		return fmt.Errorf("creating leader elector: %w", err)
	}
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		elector.Run(runCtx)
	}()
	select {
	case leadCtx := <-leading:
		c.log.Info("leading", "identity", le.Identity)
		if le.OnLeading != nil {
			le.OnLeading()
		}
		c.Run(leadCtx)
		<-electorDone
	case <-electorDone:
		// ctx ended before this replica led (a late leading signal would
		// carry an already cancelled context).
	}
	if lost {
		return ErrLostLeadership
	}
	return nil
}
