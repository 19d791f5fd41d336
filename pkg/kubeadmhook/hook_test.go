package kubeadmhook

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// TestWaitTakeover: after a kill, the controllers run again once another
// identity than the killed process's holds the Lease and renewed it after
// the kill, whoever that is (the restarted container, or a standby that is
// no pod of the DaemonSet).
func TestWaitTakeover(t *testing.T) {
	const killed = "was-controller-manager-abcde_1111"
	since := time.Now()
	for _, tc := range []struct {
		name    string
		holder  string
		renewed time.Time
		want    bool
	}{
		{"the killed identity still holds it", killed, since.Add(time.Second), false},
		{"the restarted container took it", "was-controller-manager-abcde_2222", since.Add(time.Second), true},
		{"a standby took it", "was-controller-manager-standby-xyz12_3333", since.Add(time.Second), true},
		{"another identity, renewed before the kill", "was-controller-manager-standby-xyz12_3333", since.Add(-3 * time.Second), false},
		{"nobody", "", since.Add(time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lease := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "was-system", Name: "was-controller-manager"},
				Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: tc.renewed}},
			}
			if tc.holder != "" {
				lease.Spec.HolderIdentity = ptr.To(tc.holder)
			}
			h := &Hook{Client: fake.NewSimpleClientset(lease), Lease: "was-system/was-controller-manager", Timeout: 1500 * time.Millisecond}
			err := h.waitTakeover(context.Background(), killed, since)
			if got := err == nil; got != tc.want {
				t.Errorf("waitTakeover: %v; want a takeover: %t", err, tc.want)
			}
		})
	}
	if err := (&Hook{Client: fake.NewSimpleClientset()}).waitTakeover(context.Background(), killed, since); err != nil {
		t.Errorf("no Lease to wait for: %v", err)
	}
}
