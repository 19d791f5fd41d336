package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
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

// run blocks until ctx ends (nil) or the lease is lost (errLostLease). lead
// runs in its own goroutine with a context that ends when leadership does.
func (l *leaderElection) run(ctx context.Context, cfg *rest.Config, lead func(context.Context)) error {
	logger := klog.FromContext(ctx)
	lock, err := resourcelock.NewFromKubeconfig(l.config.ResourceLock, l.config.ResourceNamespace, l.config.ResourceName,
		resourcelock.ResourceLockConfig{Identity: l.identity}, cfg, l.config.RenewDeadline.Duration)
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: l.config.LeaseDuration.Duration,
		RenewDeadline: l.config.RenewDeadline.Duration,
		RetryPeriod:   l.config.RetryPeriod.Duration,
		WatchDog:      l.watchdog,
		Name:          "was-controller-manager",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Leading: starting the controllers", "identity", l.identity)
				lead(ctx)
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

// check is the /healthz part: it fails when this process leads but has not
// renewed the lease for leaderHealthTimeout past its deadline.
func (l *leaderElection) check() error { return l.watchdog.Check(&http.Request{}) }
