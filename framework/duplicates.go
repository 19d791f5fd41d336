package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// DuplicateWatcher proves "no duplicate Workload or PodGroup ever existed"
// rather than counting at the end (a duplicate that a controller created and
// then deleted again would pass a final count). It watches a namespace's
// Workloads and PodGroups with informers and, after every event, checks the
// live objects (deletionTimestamp unset):
//
//   - at most one Workload per owner: its controller ownerReference (kind,
//     name, UID), or, without one, its spec.controllerRef (KEP-6277 discovers
//     by that reference);
//   - at most one PodGroup per (Workload, template, owner): the PodGroup's
//     spec.workloadRef and its controller ownerReference (a Deployment's
//     ReplicaSet, a StatefulSet).
//
// A terminating object and its replacement may overlap: the KEPs delete and
// recreate PodGroups (scale to zero and back), which is not a duplicate.
type DuplicateWatcher struct {
	mu         sync.Mutex
	violations []string
	seen       map[string]bool
	// detected receives each violation when it is first seen (buffered; a
	// full channel drops, Violations still has it).
	detected chan string
	stop     context.CancelFunc
}

// WatchForDuplicates starts a DuplicateWatcher on namespace, returns once
// its caches have synced (so start it before creating the workload), and
// stops it when the spec ends.
func WatchForDuplicates(ctx context.Context, cs kubernetes.Interface, namespace string) *DuplicateWatcher {
	ginkgo.GinkgoHelper()
	w, err := startDuplicateWatcher(context.WithoutCancel(ctx), cs, namespace, TestContext.Timeouts.Namespace)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "starting the duplicate Workload/PodGroup watcher in %s", namespace)
	ginkgo.DeferCleanup(w.Stop)
	return w
}

func startDuplicateWatcher(ctx context.Context, cs kubernetes.Interface, namespace string, syncTimeout time.Duration) (*DuplicateWatcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &DuplicateWatcher{seen: map[string]bool{}, detected: make(chan string, 16), stop: cancel}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace))
	wls := factory.Scheduling().V1beta1().Workloads().Informer()
	pgs := factory.Scheduling().V1beta1().PodGroups().Informer()
	// Each informer calls its handlers one at a time, after its store has the
	// event's object, so every intermediate state is checked.
	onChange := func(check func()) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { check() },
			UpdateFunc: func(_, _ any) { check() },
			DeleteFunc: func(any) { check() },
		}
	}
	_, _ = wls.AddEventHandler(onChange(func() { w.check("Workload", wls.GetStore().List(), workloadOwnerKey) }))
	_, _ = pgs.AddEventHandler(onChange(func() { w.check("PodGroup", pgs.GetStore().List(), podGroupOwnerKey) }))
	factory.Start(ctx.Done())
	syncCtx, done := context.WithTimeout(ctx, syncTimeout)
	defer done()
	if !cache.WaitForCacheSync(syncCtx.Done(), wls.HasSynced, pgs.HasSynced) {
		cancel()
		factory.Shutdown()
		return nil, fmt.Errorf("Workload/PodGroup informers in %s did not sync within %s", namespace, syncTimeout)
	}
	w.stop = func() { cancel(); factory.Shutdown() }
	return w, nil
}

// check records every owner key that more than one live object shares.
func (w *DuplicateWatcher) check(kind string, objs []any, key func(metav1.Object) string) {
	byKey := map[string][]string{}
	for _, o := range objs {
		m, ok := o.(metav1.Object)
		if !ok || m.GetDeletionTimestamp() != nil {
			continue
		}
		if k := key(m); k != "" {
			byKey[k] = append(byKey[k], m.GetName())
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, names := range byKey {
		if len(names) < 2 {
			continue
		}
		slices.Sort(names)
		v := fmt.Sprintf("%s %d live %ss for %s: %s", time.Now().Format("15:04:05.000"), len(names), kind, k, strings.Join(names, ", "))
		id := kind + "|" + k + "|" + strings.Join(names, ",")
		if w.seen[id] {
			continue
		}
		w.seen[id] = true
		w.violations = append(w.violations, v)
		ginkgo.GinkgoWriter.Printf("DUPLICATE: %s\n", v)
		select {
		case w.detected <- v:
		default:
		}
	}
}

func workloadOwnerKey(o metav1.Object) string {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return fmt.Sprintf("owner %s/%s (uid %s)", ref.Kind, ref.Name, ref.UID)
	}
	if wl, ok := o.(*schedulingv1beta1.Workload); ok && wl.Spec.ControllerRef != nil {
		c := wl.Spec.ControllerRef
		return fmt.Sprintf("spec.controllerRef %s/%s/%s", c.APIGroup, c.Kind, c.Name)
	}
	return ""
}

func podGroupOwnerKey(o metav1.Object) string {
	pg, ok := o.(*schedulingv1beta1.PodGroup)
	if !ok || pg.Spec.WorkloadRef == nil {
		return "" // a standalone PodGroup has no counterpart to duplicate
	}
	owner := "no controller"
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		owner = fmt.Sprintf("%s/%s (uid %s)", ref.Kind, ref.Name, ref.UID)
	}
	return fmt.Sprintf("Workload %s template %s, owner %s", pg.Spec.WorkloadRef.WorkloadName, pg.Spec.WorkloadRef.TemplateName, owner)
}

// Detected delivers each violation as it is seen, for specs that select on it.
func (w *DuplicateWatcher) Detected() <-chan string { return w.detected }

// Violations returns every duplicate seen so far, in order.
func (w *DuplicateWatcher) Violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

// ExpectNone fails the spec if a duplicate was ever seen.
func (w *DuplicateWatcher) ExpectNone() {
	ginkgo.GinkgoHelper()
	gomega.Expect(w.Violations()).To(gomega.BeEmpty(), "a duplicate Workload or PodGroup existed at some moment")
}

// Stop ends the watch (also done when the spec ends).
func (w *DuplicateWatcher) Stop() { w.stop() }
