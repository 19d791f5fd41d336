package statefulset

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
)

// denyPodGroupUpdates injects a write failure from outside the
// implementation (framework.DenyWrites): updates of PodGroups in the spec's
// namespace are denied; probe names one.
func denyPodGroupUpdates(ctx context.Context, f *framework.Framework, probe string) *framework.Denial {
	ginkgo.GinkgoHelper()
	pgs := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace)
	return framework.DenyWrites(ctx, f, "podgroups", admissionregistrationv1.Update, func(ctx context.Context) error {
		pg, err := pgs.Get(ctx, probe, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pg.Labels = touched(pg.Labels)
		_, err = pgs.Update(ctx, pg, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
}

// denyWorkloadUpdates denies updates of Workloads; probe names one.
func denyWorkloadUpdates(ctx context.Context, f *framework.Framework, probe string) *framework.Denial {
	ginkgo.GinkgoHelper()
	ws := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace)
	return framework.DenyWrites(ctx, f, "workloads", admissionregistrationv1.Update, func(ctx context.Context) error {
		w, err := ws.Get(ctx, probe, metav1.GetOptions{})
		if err != nil {
			return err
		}
		w.Labels = touched(w.Labels)
		_, err = ws.Update(ctx, w, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
}

func touched(labels map[string]string) map[string]string {
	if labels == nil {
		labels = map[string]string{}
	}
	labels["was-harness.io/probe"] = fmt.Sprint(time.Now().UnixNano())
	return labels
}
