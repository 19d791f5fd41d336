package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestRolloutsKeepAPodPerNode: both DaemonSets surge (the new pod ready
// beside the old one) and never leave a node without a pod: a webhook
// rollout is no outage of a fail-closed webhook, and the controller side's
// new pod stands by until the old one releases the Lease.
func TestRolloutsKeepAPodPerNode(t *testing.T) {
	objs := rendered(t)
	for _, name := range []string{"was-controller-manager", "was-webhook"} {
		ds := into[appsv1.DaemonSet](t, objs, "DaemonSet", Namespace, name)
		s := ds.Spec.UpdateStrategy
		if s.Type != appsv1.RollingUpdateDaemonSetStrategyType || s.RollingUpdate == nil || s.RollingUpdate.MaxSurge == nil || s.RollingUpdate.MaxUnavailable == nil ||
			s.RollingUpdate.MaxSurge.String() != "1" || s.RollingUpdate.MaxUnavailable.String() != "0" {
			t.Errorf("%s: updateStrategy %+v, want RollingUpdate maxSurge 1, maxUnavailable 0", name, s)
		}
		for _, c := range ds.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				if p.HostPort != 0 {
					t.Errorf("%s: hostPort %d: a surge pod could not start beside the old one", name, p.HostPort)
				}
			}
		}
	}
}

// TestLivenessProbes: both containers restart when stuck (`probe` on
// /livez, on the loopback health address) and a slow start is never killed:
// the first kill needs at least a minute of /livez failing or not answering
// after start, and /livez answers as soon as the process listens.
func TestLivenessProbes(t *testing.T) {
	objs := rendered(t)
	for _, name := range []string{"was-controller-manager", "was-webhook"} {
		c := into[appsv1.DaemonSet](t, objs, "DaemonSet", Namespace, name).Spec.Template.Spec.Containers[0]
		p := c.LivenessProbe
		if p == nil || p.Exec == nil {
			t.Errorf("%s: no exec liveness probe", name)
			continue
		}
		_, port, _ := strings.Cut(flags(c.Args)["bind-address"], ":")
		want := []string{"/was-controller-manager", "probe", fmt.Sprintf("http://127.0.0.1:%s/livez", port)}
		if !slices.Equal(p.Exec.Command, want) {
			t.Errorf("%s: liveness probe %v, want %v (/livez: the watchdog, not readiness)", name, p.Exec.Command, want)
		}
		if firstKill := p.InitialDelaySeconds + p.PeriodSeconds*p.FailureThreshold; firstKill < 45 {
			t.Errorf("%s: liveness may kill %d s after start; want at least 45", name, firstKill)
		}
		if p.TimeoutSeconds <= 3 {
			t.Errorf("%s: liveness timeoutSeconds %d: the probe command itself waits up to 3 s", name, p.TimeoutSeconds)
		}
	}
}
