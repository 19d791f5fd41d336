// Package handback lets the reference hand an object back to an upstream
// controller imported as a library, whose work queue is private.
//
// The upstream Deployment controller drops a key after 15 failed syncs
// (maxRetries in k8s.io/kubernetes/pkg/controller/deployment: about 3 minutes
// of backoff). The reference's ReplicaSet hook fails those syncs for as long
// as the Workload cannot be written, for example while the apiserver does not
// serve scheduling.k8s.io/v1beta1. After a longer outage nothing would sync
// the Deployment again until it changes or the informer resyncs (12 hours),
// so it would never converge, where the KEP says it converges once the API is
// served. A Tap records the event handlers the upstream controller registers
// on its informer, and Resync calls them as an informer resync would, for one
// object: the controller enqueues it as for any update.
package handback

import (
	"sync"
	"time"

	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/tools/cache"
)

// Tap records the event handlers registered through the informers it wraps.
// The zero value is ready to use.
type Tap struct {
	mu       sync.Mutex
	handlers []cache.ResourceEventHandler
}

// Informer wraps inf: handlers added through the result are added to inf and
// recorded, so Resync reaches them.
func (t *Tap) Informer(inf cache.SharedIndexInformer) cache.SharedIndexInformer {
	return &tappedInformer{SharedIndexInformer: inf, tap: t}
}

// Deployments wraps a Deployment informer for the upstream Deployment
// controller's constructor: its handlers are recorded.
func (t *Tap) Deployments(inf appsinformers.DeploymentInformer) appsinformers.DeploymentInformer {
	return tappedDeployments{DeploymentInformer: inf, informer: t.Informer(inf.Informer())}
}

type tappedDeployments struct {
	appsinformers.DeploymentInformer
	informer cache.SharedIndexInformer
}

func (d tappedDeployments) Informer() cache.SharedIndexInformer { return d.informer }

// Resync delivers obj to every recorded handler as an update to itself, which
// is what an informer's periodic resync delivers.
func (t *Tap) Resync(obj any) {
	t.mu.Lock()
	handlers := append([]cache.ResourceEventHandler(nil), t.handlers...)
	t.mu.Unlock()
	for _, h := range handlers {
		h.OnUpdate(obj, obj)
	}
}

func (t *Tap) record(h cache.ResourceEventHandler) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.handlers = append(t.handlers, h)
}

type tappedInformer struct {
	cache.SharedIndexInformer
	tap *Tap
}

func (i *tappedInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	reg, err := i.SharedIndexInformer.AddEventHandler(h)
	if err == nil {
		i.tap.record(h)
	}
	return reg, err
}

func (i *tappedInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	reg, err := i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(h, resync)
	if err == nil {
		i.tap.record(h)
	}
	return reg, err
}

func (i *tappedInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	reg, err := i.SharedIndexInformer.AddEventHandlerWithOptions(h, o)
	if err == nil {
		i.tap.record(h)
	}
	return reg, err
}
