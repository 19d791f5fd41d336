// Package schedulingapi gives the reference controllers cached access to
// Workloads and PodGroups that survives the API not being served.
//
// A cluster whose apiserver does not serve scheduling.k8s.io/v1beta1 (gate off,
// runtime-config missing, an older version) must still run Deployments and
// StatefulSets: informers for an unserved resource would never sync and would
// block the controllers that wait on them. So the scheduling informers start
// only once discovery shows the resources, and until then every caller gets
// ErrNotServed and retries with backoff, as the KEPs' version-skew sections say.
package schedulingapi

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/client-go/informers"
	schedulinginformers "k8s.io/client-go/informers/scheduling/v1beta1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// GroupVersion is the served version the controllers write.
const GroupVersion = "scheduling.k8s.io/v1beta1"

// ErrNotServed means the apiserver does not serve Workloads and PodGroups (yet).
var ErrNotServed = errors.New(GroupVersion + " workloads/podgroups are not served by the apiserver; retrying")

// Informers are the Workload and PodGroup informers, started lazily.
type Informers struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	ready   atomic.Bool
	// PollInterval is how often discovery is asked while the API is not served.
	PollInterval time.Duration
}

// New returns informers that resync every resync (0: never).
func New(client kubernetes.Interface, resync time.Duration) *Informers {
	return &Informers{client: client, factory: informers.NewSharedInformerFactory(client, resync), PollInterval: 5 * time.Second}
}

// Scheduling returns the v1beta1 informers; add event handlers before Start.
func (i *Informers) Scheduling() schedulinginformers.Interface {
	return i.factory.Scheduling().V1beta1()
}

// Ready returns nil once the informers have synced, ErrNotServed before.
func (i *Informers) Ready() error {
	if i.ready.Load() {
		return nil
	}
	return ErrNotServed
}

// Served asks discovery whether both resources are served.
func Served(client kubernetes.Interface) (bool, error) {
	list, err := client.Discovery().ServerResourcesForGroupVersion(GroupVersion)
	if err != nil {
		return false, err
	}
	found := map[string]bool{}
	for _, r := range list.APIResources {
		found[r.Name] = true
	}
	return found["workloads"] && found["podgroups"], nil
}

// Start waits (in the background) until the API is served, then starts the
// informers and marks them ready once synced. It returns at once.
func (i *Informers) Start(ctx context.Context) {
	logger := klog.FromContext(ctx)
	// Touch both informers so the factory starts them.
	i.Scheduling().Workloads().Informer()
	i.Scheduling().PodGroups().Informer()
	go func() {
		for {
			ok, err := Served(i.client)
			if ok {
				break
			}
			logger.Info("Waiting for the scheduling API", "groupVersion", GroupVersion, "err", fmt.Sprint(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(i.PollInterval):
			}
		}
		i.factory.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), i.Scheduling().Workloads().Informer().HasSynced, i.Scheduling().PodGroups().Informer().HasSynced) {
			return
		}
		i.ready.Store(true)
		logger.Info("Scheduling informers synced", "groupVersion", GroupVersion)
	}()
}
