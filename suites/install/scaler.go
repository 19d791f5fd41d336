package install

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// scalerMinCount is the explicit gang minCount of the scaler's Deployment.
// KEP-6276: a scale below an explicit minCount is rejected, so every scale
// of it needs the webhook's review of the stored Deployment.
const scalerMinCount = 2

// scaler is real traffic through the webhook's scale reviews: it scales a
// gang Deployment with an explicit minCount through the scale subresource
// (as kubectl scale and the HPA do) once per interval, between minCount
// and minCount+1, and every controlEvery-th time below minCount, a control
// the webhook must deny as Invalid on spec.replicas (so a webhook that lets
// everything through does not pass for one that reviews). Its pods never
// schedule (a node selector no node has): the spec is about admission.
type scaler struct {
	mu       sync.Mutex
	ok       int      // scales admitted
	rejected []string // scales at or above minCount that failed: must stay empty
	controls int      // controls denied as Invalid, as they must be
	wrong    []string // controls admitted, or failed otherwise
	cancel   context.CancelFunc
	done     chan struct{}
}

const controlEvery = 10

func startScaler(ctx context.Context, f *framework.Framework, interval time.Duration) *scaler {
	ginkgo.GinkgoHelper()
	d := builder.Deployment("scaled", f.Namespace).Replicas(scalerMinCount).Recreate().Obj()
	d.Spec.Template.Spec.NodeSelector = map[string]string{"was-harness.io/no-such-node": "true"}
	cfg := &framework.DeploymentScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: ptr.To[int32](scalerMinCount)},
	}}
	created, err := framework.Intent.CreateDeployment(ctx, d, cfg)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating the gang Deployment %s with minCount %d", d.Name, scalerMinCount)
	ctx, cancel := context.WithCancel(ctx)
	s := &scaler{cancel: cancel, done: make(chan struct{})}
	ginkgo.DeferCleanup(s.stop)
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(s.done)
		for i := 1; ctx.Err() == nil; i++ {
			s.once(ctx, f, created, i)
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	}()
	return s
}

func (s *scaler) once(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, i int) {
	control := i%controlEvery == 0
	replicas := int32(scalerMinCount + i%2)
	if control {
		replicas = scalerMinCount - 1
	}
	err := scale(ctx, f.ClientSet, d, replicas)
	if ctx.Err() != nil {
		return
	}
	at := time.Now().Format(time.RFC3339)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case control && err == nil:
		s.wrong = append(s.wrong, fmt.Sprintf("%s: the scale to %d, below minCount %d, was admitted", at, replicas, scalerMinCount))
	case control && !invalidReplicas(err):
		s.wrong = append(s.wrong, fmt.Sprintf("%s: the scale to %d was refused, but not as Invalid on spec.replicas: %v", at, replicas, err))
	case control:
		s.controls++
	case err != nil:
		s.rejected = append(s.rejected, fmt.Sprintf("%s: scale to %d: %v", at, replicas, err))
	default:
		s.ok++
	}
}

// invalidReplicas: the API server's Invalid error naming spec.replicas.
func invalidReplicas(err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == "spec.replicas" {
			return true
		}
	}
	return false
}

func (s *scaler) stop() {
	s.cancel()
	<-s.done
}

// expectEveryScaleReviewed stops the scaler and checks that at least
// minScales real scales were admitted, none was rejected, and every control
// was denied as Invalid.
func (s *scaler) expectEveryScaleReviewed(minScales int, during string) {
	ginkgo.GinkgoHelper()
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	ginkgo.AddReportEntry("real scales "+during, fmt.Sprintf("%d admitted, %d rejected; %d controls below minCount denied, %d wrong",
		s.ok, len(s.rejected), s.controls, len(s.wrong)))
	gomega.Expect(s.rejected).To(gomega.BeEmpty(), "real scales rejected %s", during)
	gomega.Expect(s.wrong).To(gomega.BeEmpty(), "scales below the explicit minCount %s: the webhook must deny each as Invalid on spec.replicas", during)
	gomega.Expect(s.ok).To(gomega.BeNumerically(">=", minScales), "real scales admitted %s", during)
	gomega.Expect(s.controls).To(gomega.BeNumerically(">=", 1), "controls denied %s", during)
}
