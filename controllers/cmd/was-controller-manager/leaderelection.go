package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"
)

// defaultLeaderElection is kube-controller-manager's, with our own Lease in
// our own namespace: was-system/was-controller-manager (the RBAC of
// controllers/config grants that Lease only, and nothing on kube-system's
// Leases). Off by default, as the local cluster runs one instance; deploy/
// turns it on (one instance per control-plane node) and names the Lease
// explicitly.
func defaultLeaderElection() componentbaseconfig.LeaderElectionConfiguration {
	return componentbaseconfig.LeaderElectionConfiguration{
		LeaderElect:       false,
		LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
		RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
		RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
		ResourceLock:      resourcelock.LeasesResourceLock,
		ResourceName:      "was-controller-manager",
		ResourceNamespace: "was-system",
	}
}

// leaderHealthTimeout is how long past its renew deadline a leader may go
// unrenewed before /healthz fails (kube-controller-manager's value).
const leaderHealthTimeout = 20 * time.Second

func validateLeaderElection(c componentbaseconfig.LeaderElectionConfiguration) error {
	if !c.LeaderElect {
		return nil
	}
	if c.ResourceLock != resourcelock.LeasesResourceLock {
		return fmt.Errorf("--leader-elect-resource-lock=%s: only %q is supported", c.ResourceLock, resourcelock.LeasesResourceLock)
	}
	if c.ResourceName == "" || c.ResourceNamespace == "" {
		return errors.New("--leader-elect-resource-name and --leader-elect-resource-namespace must be set")
	}
	return nil
}

// instanceIdentity names this process in the Lease, as
// kube-controller-manager does: the host name and a random suffix, so two
// instances on one host differ.
func instanceIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// leaderElection runs lead while this process holds the Lease.
type leaderElection struct {
	config   componentbaseconfig.LeaderElectionConfiguration
	identity string
	watchdog *leaderelection.HealthzAdaptor
}

// errLostLease ends the process: its controllers may still be acting, and
// only a fresh start (the kubelet restarts the container) makes it a clean
// candidate again, as kube-controller-manager does.
var errLostLease = errors.New("lost the leader election lease")

// run blocks until ctx ends (nil) or the lease is lost (errLostLease), and
// returns only after the Lease is released or given up. lead runs in its own
// goroutine with a context that ends when leadership does, and must return
// only once everything it started has stopped: the Lease is released
// (ReleaseOnCancel, so a graceful stop hands over at once instead of after
// the lease duration) only after lead has returned.
func (l *leaderElection) run(ctx context.Context, cfg *rest.Config, lead func(context.Context)) error {
	lock, err := resourcelock.NewFromKubeconfig(l.config.ResourceLock, l.config.ResourceNamespace, l.config.ResourceName,
		resourcelock.ResourceLockConfig{Identity: l.identity}, cfg, l.config.RenewDeadline.Duration)
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	return l.runWithLock(ctx, lock, lead)
}

// runWithLock is run on a given lock (a unit test's, on a fake clientset).
func (l *leaderElection) runWithLock(ctx context.Context, lock resourcelock.Interface, lead func(context.Context)) error {
	logger := klog.FromContext(ctx)
	guard := &releaseGuard{Interface: lock}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          guard,
		LeaseDuration: l.config.LeaseDuration.Duration,
		RenewDeadline: l.config.RenewDeadline.Duration,
		RetryPeriod:   l.config.RetryPeriod.Duration,
		WatchDog:      l.watchdog,
		Name:          "was-controller-manager",
		// Released when ctx ends (SIGTERM: a rollout, a drain), so a standby
		// takes over at once. client-go's contract: everything the Lease
		// guards must have stopped before the release; releaseGuard holds
		// the release until lead has returned.
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) {
				ctx, done, ok := guard.lead(leaderCtx)
				if !ok {
					return // released before this goroutine ran: start nothing
				}
				defer done()
				logger.Info("Leading: starting the controllers", "identity", l.identity)
				lead(ctx)
				logger.Info("Controllers stopped", "identity", l.identity)
			},
			OnStoppedLeading: func() { logger.Info("Stopped leading", "identity", l.identity) },
			OnNewLeader: func(id string) {
				if id != l.identity {
					logger.Info("Another instance leads; standing by", "leader", id, "lease", l.config.ResourceNamespace+"/"+l.config.ResourceName)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	l.watchdog.SetLeaderElection(elector)
	logger.Info("Waiting for the lease", "lease", l.config.ResourceNamespace+"/"+l.config.ResourceName, "identity", l.identity)
	elector.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return errLostLease
}

// releaseGuard is the Lease lock with one addition: the update that
// releases the Lease (client-go's release writes a record with no holder)
// first stops what the leader runs and waits, within the release's own
// deadline, until it has returned. Without that, ReleaseOnCancel could hand
// the Lease over while this process's controllers still write: client-go
// releases from its renew loop, before the leader's context is cancelled
// when the lease is lost, and concurrently with it on a graceful stop.
type releaseGuard struct {
	resourcelock.Interface
	mu       sync.Mutex
	stop     context.CancelFunc // stops the leader's work; nil when none was started
	stopped  chan struct{}      // closed when the leader's work has returned
	released bool               // a release went through: start nothing any more
}

// lead registers the leader's work: its context (cancelled by a release),
// the func to call once it has all returned, and false when the Lease was
// already released (nothing may start then).
func (g *releaseGuard) lead(parent context.Context) (context.Context, func(), bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(parent)
	stopped := make(chan struct{})
	g.stop, g.stopped = cancel, stopped
	return ctx, func() { cancel(); close(stopped) }, true
}

// Update writes the record; a release only once the leader's work has
// stopped. If it does not stop within ctx (the release's deadline), the
// Lease is not released and expires as if the process had died.
func (g *releaseGuard) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if r.HolderIdentity == "" {
		g.mu.Lock()
		stop, stopped := g.stop, g.stopped
		g.released = true
		g.mu.Unlock()
		if stop != nil {
			stop()
			select {
			case <-stopped:
			case <-ctx.Done():
				return fmt.Errorf("not releasing the Lease: the controllers have not stopped: %w", ctx.Err())
			}
		}
	}
	return g.Interface.Update(ctx, r)
}

// check is the /healthz part: it fails when this process leads but has not
// renewed the lease for leaderHealthTimeout past its deadline.
func (l *leaderElection) check() error { return l.watchdog.Check(&http.Request{}) }
