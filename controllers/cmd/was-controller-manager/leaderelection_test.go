package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
)

func testElection(identity string) *leaderElection {
	c := defaultLeaderElection()
	c.LeaderElect = true
	c.LeaseDuration = metav1.Duration{Duration: 3 * time.Second}
	c.RenewDeadline = metav1.Duration{Duration: 2 * time.Second}
	c.RetryPeriod = metav1.Duration{Duration: 100 * time.Millisecond}
	return &leaderElection{config: c, identity: identity, watchdog: leaderelection.NewLeaderHealthzAdaptor(leaderHealthTimeout)}
}

func testLock(t *testing.T, client *fake.Clientset, c componentbaseconfig.LeaderElectionConfiguration, identity string) resourcelock.Interface {
	t.Helper()
	lock, err := resourcelock.New(c.ResourceLock, c.ResourceNamespace, c.ResourceName, client.CoreV1(), client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		t.Fatal(err)
	}
	return lock
}

// A graceful stop (ctx cancelled: SIGTERM) releases the Lease at once, and
// only after the leader's work has returned: the release record is written
// after lead returns, never while it still runs.
func TestLeaseIsReleasedOnStopAfterTheControllersStopped(t *testing.T) {
	client := fake.NewClientset()
	l := testElection("a_1")
	ctx, cancel := context.WithCancel(context.Background())
	var leadReturned atomic.Bool
	leading := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- l.runWithLock(ctx, testLock(t, client, l.config, l.identity), func(ctx context.Context) {
			close(leading)
			<-ctx.Done()
			time.Sleep(300 * time.Millisecond) // a sync in flight finishing
			leadReturned.Store(true)
		})
	}()
	select {
	case <-leading:
	case <-time.After(10 * time.Second):
		t.Fatal("never led")
	}
	holder := func() string {
		lease, err := client.CoordinationV1().Leases(l.config.ResourceNamespace).Get(context.Background(), l.config.ResourceName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	if h := holder(); h != "a_1" {
		t.Fatalf("holder %q, want a_1", h)
	}
	// Watch the release: the update with no holder must come after lead returned.
	var releasedEarly atomic.Bool
	client.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		lease := action.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if (lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "") && !leadReturned.Load() {
			releasedEarly.Store(true)
		}
		return false, nil, nil
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after ctx ended")
	}
	if !leadReturned.Load() {
		t.Error("run returned before the leader's work did")
	}
	if releasedEarly.Load() {
		t.Error("the Lease was released while the leader's work still ran")
	}
	if h := holder(); h != "" {
		t.Errorf("holder %q after a graceful stop, want none (released, so a standby takes over at once)", h)
	}
}

// The guard refuses a release while the leader's work does not stop within
// the release's deadline: the Lease then expires as if the process died.
func TestReleaseGuardKeepsTheLeaseWhileTheControllersRun(t *testing.T) {
	client := fake.NewClientset()
	l := testElection("a_1")
	base := testLock(t, client, l.config, l.identity)
	g := &releaseGuard{Interface: base}
	ctx, done, ok := g.lead(context.Background())
	if !ok {
		t.Fatal("lead refused before any release")
	}
	defer done()
	deadline, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := g.Update(deadline, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1}); err == nil {
		t.Fatal("a release went through while the leader's work never returned")
	}
	if ctx.Err() == nil {
		t.Error("the release did not stop the leader's work")
	}
	if _, _, ok := g.lead(context.Background()); ok {
		t.Error("work may start after a release")
	}
}
