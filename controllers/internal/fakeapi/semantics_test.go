package fakeapi

// The fake's hand-written apiserver semantics (apiServerSemantics) are what
// the controllers' unit tests trust; a fake that accepts what the server
// refuses hides bugs (a Secret's immutable type once did). Each behaviour
// the fake emulates is checked here against the fake and a real
// kube-apiserver alike. The fake itself stays: the controllers' tests stage
// what a real server cannot (injected 500s, informers that never hear of a
// change, a cache ahead of the server, the order of every write).

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/workload-aware/apps-harness/internal/apitest"
)

func TestMain(m *testing.M) { os.Exit(apitest.Run(m)) }

// backends runs check on the fake and on a real apiserver, in a namespace of its own.
func backends(t *testing.T, check func(t *testing.T, client kubernetes.Interface, ns string)) {
	t.Run("fakeapi", func(t *testing.T) { check(t, New(t, Options{Namespace: ns}).Client, ns) })
	t.Run("kube-apiserver", func(t *testing.T) {
		api := apitest.Start(t)
		check(t, api.Client, api.Namespace(t))
	})
}

// validWorkload passes the server's validation (one basic template).
func validWorkload(name, namespace string) *schedulingv1beta1.Workload {
	w := &schedulingv1beta1.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	tp := schedulingv1beta1.PodGroupTemplate{Name: "t"}
	tp.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	w.Spec.PodGroupTemplates = []schedulingv1beta1.PodGroupTemplate{tp}
	return w
}

func TestFakeSemanticsMatchTheAPIServer(t *testing.T) {
	backends(t, func(t *testing.T, client kubernetes.Interface, ns string) {
		ctx := context.Background()
		wc := client.SchedulingV1beta1().Workloads(ns)
		created, err := wc.Create(ctx, validWorkload("w", ns), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.UID == "" || created.ResourceVersion == "" {
			t.Fatalf("created Workload has uid %q resourceVersion %q, want both set", created.UID, created.ResourceVersion)
		}
		stale := created.DeepCopy()
		created.Labels = map[string]string{"v": "2"}
		updated, err := wc.Update(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.UID != created.UID || updated.ResourceVersion == created.ResourceVersion {
			t.Errorf("update: uid %q rv %q, want uid %q kept and a fresh rv (was %q)", updated.UID, updated.ResourceVersion, created.UID, created.ResourceVersion)
		}
		stale.Labels = map[string]string{"v": "stale"}
		if _, err := wc.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Errorf("update with a stale resourceVersion: err = %v, want a conflict", err)
		}
		if got, _ := wc.Get(ctx, "w", metav1.GetOptions{}); got.ResourceVersion != updated.ResourceVersion || got.Labels["v"] != "2" {
			t.Errorf("stored Workload = %+v, want the first update", got.ObjectMeta)
		}
		// Without a resourceVersion, an update of a scheduling object is
		// refused (their strategies allow no unconditional update).
		unconditional := updated.DeepCopy()
		unconditional.ResourceVersion, unconditional.Labels = "", map[string]string{"v": "3"}
		if _, err := wc.Update(ctx, unconditional, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("Workload update without a resourceVersion: err = %v, want invalid", err)
		}
		pgc := client.SchedulingV1beta1().PodGroups(ns)
		pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: ns},
			Spec: schedulingv1beta1.PodGroupSpec{WorkloadRef: &schedulingv1beta1.WorkloadReference{WorkloadName: "w", TemplateName: "t"}}}
		pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
		if pg, err = pgc.Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pg.ResourceVersion, pg.Labels = "", map[string]string{"v": "2"}
		if _, err := pgc.Update(ctx, pg, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("PodGroup update without a resourceVersion: err = %v, want invalid", err)
		}

		pod, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Status.Phase != corev1.PodPending {
			t.Errorf("new pod's phase = %q, want Pending", pod.Status.Phase)
		}
	})
}
