// Package fakeapi is the fake API server of the controllers' unit tests: one
// client-go fake clientset with the apiserver semantics the controllers
// depend on, the scheduling.k8s.io informers the controllers read, and the
// helpers the tests use to arrange state behind the controllers' backs and to
// read back what the controllers wrote.
//
// Only _test.go files import it. Each controller's test harness builds its
// Reconciler over an API and keeps only what is its own (its fixtures, its
// caches, its wrapped clients).
package fakeapi

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/workload-aware/apps-harness/controllers/schedulingapi"
)

const (
	schedulingGroup = "scheduling.k8s.io"
	// WaitTimeout bounds every wait on the informers.
	WaitTimeout  = 10 * time.Second
	pollInterval = 5 * time.Millisecond
	// firstResourceVersion is where the API's resourceVersions start; any
	// value works as long as every write gets a fresh one.
	firstResourceVersion = 100
)

// Options shape an API.
type Options struct {
	// Namespace is where the tests' objects live; the waits and reads of
	// the scheduling objects look there.
	Namespace string
	// LaggingInformers makes the scheduling informers list once and then
	// never hear of a change, as if their watch lagged indefinitely.
	LaggingInformers bool
}

// API is one fake apiserver. The controllers' clients and the tests share
// Client, so its action log shows the order of every write.
type API struct {
	T         *testing.T
	Ctx       context.Context
	Client    *fake.Clientset
	Sched     *schedulingapi.Informers
	Recorder  *record.FakeRecorder
	Namespace string

	rv, uid  atomic.Int64
	mu       sync.Mutex
	failures map[string]error // "verb resource" -> error the API answers with
	failer   clienttesting.Reactor
}

// New returns an API serving scheduling.k8s.io/v1beta1 (in discovery) with
// its scheduling informers built but not started (see StartScheduling). It
// lives until t ends.
func New(t *testing.T, o Options) *API {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a := &API{
		T:         t,
		Ctx:       ctx,
		Client:    fake.NewClientset(),
		Recorder:  record.NewFakeRecorder(1000),
		Namespace: o.Namespace,
		failures:  map[string]error{},
	}
	a.rv.Store(firstResourceVersion)
	a.Client.Resources = []*metav1.APIResourceList{{
		GroupVersion: schedulingapi.GroupVersion,
		APIResources: []metav1.APIResource{
			{Name: "workloads", Namespaced: true, Kind: "Workload"},
			{Name: "podgroups", Namespaced: true, Kind: "PodGroup"},
		},
	}}
	a.apiServerSemantics()
	if o.LaggingInformers {
		a.Client.PrependWatchReactor("*", func(act clienttesting.Action) (bool, watch.Interface, error) {
			if act.GetResource().Group != schedulingGroup {
				return false, nil, nil
			}
			return true, watch.NewFake(), nil
		})
	}
	// Prepended last, so it runs first: an injected failure wins.
	a.failer = &clienttesting.SimpleReactor{Verb: "*", Resource: "*", Reaction: a.injectedFailure}
	a.Client.ReactionChain = append([]clienttesting.Reactor{a.failer}, a.Client.ReactionChain...)
	a.Sched = schedulingapi.New(a.Client, 0)
	return a
}

// StartScheduling starts the scheduling informers and waits until they are
// ready. Until then Ready() fails, as when the apiserver does not serve
// scheduling.k8s.io/v1beta1.
func (a *API) StartScheduling() {
	a.T.Helper()
	a.Sched.PollInterval = 10 * time.Millisecond
	a.Sched.Start(klog.NewContext(a.Ctx, logr.Discard()))
	a.Eventually("scheduling informers ready", func() bool { return a.Sched.Ready() == nil })
}

// apiServerSemantics makes the fake behave like an apiserver where the code
// under test depends on it: new pods are Pending, scheduling objects get a
// UID and a fresh resourceVersion on every write, an update without a
// resourceVersion is invalid, and an update carrying a
// stale resourceVersion is a conflict.
func (a *API) apiServerSemantics() {
	a.Client.PrependReactor("create", "*", a.createScheduling)
	// The apiserver defaults a new pod's phase to Pending (upstream
	// controllers treat a pod without a phase as not yet created).
	a.Client.PrependReactor("create", "pods", func(act clienttesting.Action) (bool, runtime.Object, error) {
		if pod, ok := act.(clienttesting.CreateAction).GetObject().(*corev1.Pod); ok && pod.Status.Phase == "" {
			pod.Status.Phase = corev1.PodPending
		}
		return false, nil, nil
	})
	a.Client.PrependReactor("update", "*", a.updateScheduling)
}

// schedulingObject is the object a create or update on scheduling.k8s.io
// carries; ok is false for every other group.
func schedulingObject(act clienttesting.Action) (m metav1.Object, ok bool, err error) {
	if act.GetResource().Group != schedulingGroup {
		return nil, false, nil
	}
	m, err = meta.Accessor(act.(interface{ GetObject() runtime.Object }).GetObject())
	return m, true, err
}

func (a *API) createScheduling(act clienttesting.Action) (bool, runtime.Object, error) {
	m, ok, err := schedulingObject(act)
	if !ok || err != nil {
		return err != nil, nil, err
	}
	if m.GetUID() == "" {
		m.SetUID(types.UID(fmt.Sprintf("%s-uid-%d", act.GetResource().Resource, a.uid.Add(1))))
	}
	m.SetResourceVersion(a.nextResourceVersion())
	return false, nil, nil
}

func (a *API) updateScheduling(act clienttesting.Action) (bool, runtime.Object, error) {
	m, ok, err := schedulingObject(act)
	if !ok || err != nil {
		return err != nil, nil, err
	}
	stored, err := a.Client.Tracker().Get(act.GetResource(), act.GetNamespace(), m.GetName())
	if err != nil {
		return true, nil, err
	}
	sm, _ := meta.Accessor(stored)
	if m.GetResourceVersion() == "" {
		// Workloads and PodGroups allow no unconditional update (checked
		// against kube-apiserver in semantics_test.go).
		kind := schema.GroupKind{Group: schedulingGroup, Kind: reflect.TypeOf(m).Elem().Name()}
		return true, nil, apierrors.NewInvalid(kind, m.GetName(),
			field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), 0, "must be specified for an update")})
	}
	if m.GetResourceVersion() != sm.GetResourceVersion() {
		return true, nil, apierrors.NewConflict(act.GetResource().GroupResource(), m.GetName(),
			fmt.Errorf("resourceVersion %s is stale, stored %s", m.GetResourceVersion(), sm.GetResourceVersion()))
	}
	m.SetUID(sm.GetUID())
	m.SetResourceVersion(a.nextResourceVersion())
	return false, nil, nil
}

// React adds the semantics of the controller's own objects: fn runs for
// verb on resource after injected failures (Fail) and before every reactor
// added earlier.
func (a *API) React(verb, resource string, fn clienttesting.ReactionFunc) {
	a.Client.Lock()
	defer a.Client.Unlock()
	chain := a.Client.ReactionChain
	at := slices.IndexFunc(chain, func(r clienttesting.Reactor) bool { return r == a.failer }) + 1
	a.Client.ReactionChain = slices.Insert(chain, at, clienttesting.Reactor(&clienttesting.SimpleReactor{Verb: verb, Resource: resource, Reaction: fn}))
}

func (a *API) injectedFailure(act clienttesting.Action) (bool, runtime.Object, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err, ok := a.failures[act.GetVerb()+" "+act.GetResource().Resource]; ok {
		return true, nil, err
	}
	return false, nil, nil
}

func (a *API) nextResourceVersion() string { return strconv.FormatInt(a.rv.Add(1), 10) }

// Fail makes the API answer verb on resource with err until Heal.
func (a *API) Fail(verb, resource string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failures[verb+" "+resource] = err
}

// Heal ends a Fail.
func (a *API) Heal(verb, resource string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.failures, verb+" "+resource)
}

// Eventually waits until cond holds, failing the test after WaitTimeout.
func (a *API) Eventually(what string, cond func() bool) {
	a.T.Helper()
	err := wait.PollUntilContextTimeout(a.Ctx, pollInterval, WaitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		a.T.Fatalf("timed out waiting for %s", what)
	}
}

// resourceOf is obj's resource, from the client-go scheme.
func (a *API) resourceOf(obj runtime.Object) schema.GroupVersionResource {
	a.T.Helper()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		a.T.Fatal(err)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvks[0])
	return gvr
}

// Store adds or replaces obj in the API as it is, without recording an
// action.
func (a *API) Store(obj runtime.Object) {
	a.T.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		a.T.Fatal(err)
	}
	err = a.Client.Tracker().Update(a.resourceOf(obj), obj, m.GetNamespace())
	if apierrors.IsNotFound(err) {
		err = a.Client.Tracker().Add(obj)
	}
	if err != nil {
		a.T.Fatal(err)
	}
}

// StoreCached puts obj into a controller's cache and, as Store does, the
// API: the state after the informer has caught up with another client's
// write.
func (a *API) StoreCached(c cache.Store, obj runtime.Object) {
	a.T.Helper()
	if err := c.Update(obj); err != nil {
		a.T.Fatal(err)
	}
	a.Store(obj)
}

// Seed stores obj in the API with a UID and a fresh resourceVersion, as
// another client would have created it (no action recorded), and waits
// until the scheduling informers have it.
func (a *API) Seed(obj runtime.Object) {
	a.T.Helper()
	a.writeBehindTheBack(obj, func(m metav1.Object) error {
		if m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("seeded-uid-%d", a.uid.Add(1))))
		}
		return a.Client.Tracker().Add(obj)
	})
}

// UpdateBehindTheBack changes a stored object as another client would (a
// fresh resourceVersion, no action recorded) and waits until the
// scheduling informers have the change.
func (a *API) UpdateBehindTheBack(obj runtime.Object) {
	a.T.Helper()
	a.writeBehindTheBack(obj, func(m metav1.Object) error {
		return a.Client.Tracker().Update(a.resourceOf(obj), obj, m.GetNamespace())
	})
}

// writeBehindTheBack gives obj a fresh resourceVersion, writes it straight
// into the tracker and waits until the scheduling informers have it.
func (a *API) writeBehindTheBack(obj runtime.Object, write func(metav1.Object) error) {
	a.T.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		a.T.Fatal(err)
	}
	m.SetResourceVersion(a.nextResourceVersion())
	if err := write(m); err != nil {
		a.T.Fatal(err)
	}
	a.waitCached(obj)
}

// DeleteBehindTheBack removes a scheduling object as another client would
// (no action recorded).
func (a *API) DeleteBehindTheBack(resource, name string) {
	a.T.Helper()
	gvr := schedulingv1beta1.SchemeGroupVersion.WithResource(resource)
	if err := a.Client.Tracker().Delete(gvr, a.Namespace, name); err != nil {
		a.T.Fatal(err)
	}
}

// waitCached waits until the scheduling informers hold obj at its
// resourceVersion; other kinds have no informer here.
func (a *API) waitCached(obj runtime.Object) {
	a.T.Helper()
	switch o := obj.(type) {
	case *schedulingv1beta1.Workload:
		a.WaitWorkloadCached(o.Name, o.ResourceVersion)
	case *schedulingv1beta1.PodGroup:
		a.WaitPodGroupCached(o.Name, o.ResourceVersion)
	}
}
