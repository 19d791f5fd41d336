package handback

import (
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	upstreamdeployment "k8s.io/kubernetes/pkg/controller/deployment"
)

// Every way of adding a handler is recorded, and Resync delivers the object
// as an update to itself to each of them, and to nothing added elsewhere.
func TestResyncReachesTheHandlersAddedThroughTheTap(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Apps().V1().Deployments().Informer()
	var tap Tap
	tapped := tap.Informer(inf)

	var mu sync.Mutex
	got := map[string]int{}
	handler := func(name string) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, cur any) {
			if old != cur {
				t.Errorf("%s: old and new differ; a resync delivers one object", name)
			}
			mu.Lock()
			got[name+"/"+cur.(*appsv1.Deployment).Name]++
			mu.Unlock()
		}}
	}
	if _, err := tapped.AddEventHandler(handler("plain")); err != nil {
		t.Fatal(err)
	}
	if _, err := tapped.AddEventHandlerWithResyncPeriod(handler("resync"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := tapped.AddEventHandlerWithOptions(handler("options"), cache.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(handler("untapped")); err != nil {
		t.Fatal(err)
	}

	tap.Resync(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})

	want := map[string]int{"plain/web": 1, "resync/web": 1, "options/web": 1}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("deliveries = %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("deliveries = %v, want %v", got, want)
		}
	}
}

// The upstream Deployment controller registers its Deployment handlers
// through the informer it is given, so a tapped one records them: if a
// future version registered them some other way, Resync would reach nothing.
func TestUpstreamDeploymentControllerRegistersThroughTheTap(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	apps := informers.NewSharedInformerFactory(client, 0)
	var tap Tap
	if _, err := upstreamdeployment.NewDeploymentController(ctx, tap.Deployments(apps.Apps().V1().Deployments()),
		apps.Apps().V1().ReplicaSets(), apps.Core().V1().Pods(), client); err != nil {
		t.Fatal(err)
	}
	tap.mu.Lock()
	defer tap.mu.Unlock()
	if len(tap.handlers) == 0 {
		t.Fatal("the upstream Deployment controller added no handler through the tapped informer")
	}
}
