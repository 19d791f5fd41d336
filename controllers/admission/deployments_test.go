package admission

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// liveServer is an API server that answers every Deployment GET with
// stored (or hangs until the request is cancelled, when hang is set) and
// counts the GETs.
func liveServer(t *testing.T, stored *appsv1.Deployment, hang bool) (kubernetes.Interface, *atomic.Int32) {
	t.Helper()
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		if hang {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(stored)
	}))
	t.Cleanup(srv.Close)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return client, &gets
}

func cached(t *testing.T, objs ...*appsv1.Deployment) appslisters.DeploymentLister {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, d := range objs {
		if err := indexer.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	return appslisters.NewDeploymentLister(indexer)
}

func deploymentAt(resourceVersion string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", ResourceVersion: resourceVersion},
	}
}

// TestDeploymentReaderAnswersFromTheCacheOnlyAtTheReviewedVersion: a
// burst of reviews of a Deployment the cache holds costs no API request; a
// cache that lags the review (or lacks the Deployment) is never trusted.
func TestDeploymentReaderAnswersFromTheCacheOnlyAtTheReviewedVersion(t *testing.T) {
	client, gets := liveServer(t, deploymentAt("8"), false)
	r := &DeploymentReader{Cache: cached(t, deploymentAt("7")), Client: client.AppsV1(), Timeout: time.Second}
	for range 100 {
		d, err := r.Get(context.Background(), "team", "web", "7")
		if err != nil || d.ResourceVersion != "7" {
			t.Fatalf("cached read: %v, %v", d, err)
		}
	}
	if n := gets.Load(); n != 0 {
		t.Fatalf("%d live reads for a cached version, want 0", n)
	}
	if d, err := r.Get(context.Background(), "team", "web", "8"); err != nil || d.ResourceVersion != "8" {
		t.Fatalf("a review of a version newer than the cache's: got %v, %v; want the live read's version 8", d, err)
	}
	if d, err := r.Get(context.Background(), "team", "other", "3"); err != nil || d.ResourceVersion != "8" {
		t.Fatalf("a Deployment the cache lacks: got %v, %v; want the live read", d, err)
	}
	if n := gets.Load(); n != 2 {
		t.Fatalf("%d live reads, want 2", n)
	}
}

// TestDeploymentReaderBoundsItsLiveRead: a hung API server fails the
// read by the reader's deadline, not the API server's webhook timeout.
func TestDeploymentReaderBoundsItsLiveRead(t *testing.T) {
	client, _ := liveServer(t, nil, true)
	r := &DeploymentReader{Cache: cached(t), Client: client.AppsV1(), Timeout: 200 * time.Millisecond}
	start := time.Now()
	if _, err := r.Get(context.Background(), "team", "web", "1"); err == nil {
		t.Fatal("a hung live read returned no error")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the live read took %v, want about its 200ms deadline", took)
	}
}

// TestTrimForScaleReviewsKeepsWhatValidateScaleReads: the cached copy keeps
// the intent and replicas, and drops the template, status and the copies.
func TestTrimForScaleReviewsKeepsWhatValidateScaleReads(t *testing.T) {
	d := deploymentAt("5")
	d.Annotations = map[string]string{"scheduling.was-harness.io/deployment-scheduling": `{"x":1}`, lastApplied: "{...}"}
	d.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	d.Spec.Replicas = new(int32(4))
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "i"}}
	d.Status.Replicas = 4
	out, err := TrimForScaleReviews(d)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*appsv1.Deployment)
	if trimmed.Annotations["scheduling.was-harness.io/deployment-scheduling"] == "" || *trimmed.Spec.Replicas != 4 || trimmed.ResourceVersion != "5" {
		t.Errorf("lost what a scale review reads: %+v", trimmed)
	}
	if _, ok := trimmed.Annotations[lastApplied]; ok || trimmed.ManagedFields != nil ||
		len(trimmed.Spec.Template.Spec.Containers) != 0 || trimmed.Status.Replicas != 0 {
		t.Errorf("kept what no scale review reads: %+v", trimmed)
	}
	if _, ok := d.Annotations[lastApplied]; !ok {
		t.Error("trimmed the informer's input in place")
	}
}
