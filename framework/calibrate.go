package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework/builder"
)

// Calibration is what the suite measured of the cluster under test before
// its first spec, and the timeouts it derived from that.
//
// Why: the suite's waits have two kinds of bounds. An Eventually bound only
// has to be long enough; a Consistently window ("nothing binds", "nothing
// is created") proves something only if it is several times longer than the
// time in which the thing would have happened. Both depend on how fast the
// cluster is right now, which on a shared 2-core machine (or under `make
// stress`, with every core busy) varies by a factor of ten. So the suite
// measures the pipeline every spec waits on, a Deployment created until its
// pod is bound (apiserver, Deployment and ReplicaSet controllers, scheduler),
// and derives the windows from it rather than from fixed sleeps.
type Calibration struct {
	// Samples are the create-to-bound times of the probe Deployments.
	Samples []time.Duration `json:"samples"`
	// Slowest is the largest sample: the bound a "would have happened by
	// now" argument must exceed.
	Slowest time.Duration `json:"slowest"`
	// Scale is how much the Eventually bounds were stretched (>= 1).
	Scale float64 `json:"scale"`
	// Timeouts are the bounds the specs use.
	Timeouts Timeouts `json:"timeouts"`
}

const (
	// calibrationSamples probe Deployments are created one after another.
	calibrationSamples = 3
	// referenceLatency is the slowest create-to-bound time of the probe on
	// an idle 2-core machine with the local cluster, where the default
	// timeouts were tuned; slower clusters stretch them proportionally.
	referenceLatency = 2 * time.Second
	// windowFactor: a Consistently window lasts at least this many times
	// the slowest create-to-bound time, so "it did not happen" means the
	// cluster had several chances to make it happen.
	windowFactor = 4
)

// Derive returns the timeouts for samples measured on top of base: Eventually
// bounds scaled by Slowest/referenceLatency (never shrunk) up to
// base.MaxBound, and the StaysUnbound window at least base.RetryWindow plus
// windowFactor × Slowest (Timeouts.Bounded).
func Derive(base Timeouts, samples []time.Duration) Calibration {
	c := Calibration{Samples: samples, Scale: 1}
	if len(samples) > 0 {
		c.Slowest = slices.Max(samples)
	}
	if r := float64(c.Slowest) / float64(referenceLatency); r > 1 {
		c.Scale = r
	}
	t := base.Scaled(c.Scale)
	t.StaysUnbound = base.StaysUnbound // the window follows Slowest, below
	c.Timeouts = t.Bounded(c.Slowest)
	return c
}

// CalibrateTimeouts measures the cluster (see Calibration), applies the
// derived timeouts to TestContext, writes $ARTIFACTS/calibration.json and
// returns the result. A probe that fails leaves the timeouts as configured
// and returns the error: the specs then fail with their own, clearer
// messages.
func CalibrateTimeouts(ctx context.Context, cs kubernetes.Interface) (Calibration, error) {
	base := TestContext.Timeouts
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "calibrate-", Labels: map[string]string{NamespaceLabel: "true"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return Calibration{}, fmt.Errorf("creating the calibration namespace: %w", err)
	}
	defer func() {
		_ = cs.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{})
	}()
	if err := waitDefaultServiceAccount(ctx, cs, ns.Name, base); err != nil {
		return Calibration{}, err
	}
	var samples []time.Duration
	for i := range calibrationSamples {
		d, err := probeCreateToBound(ctx, cs, ns.Name, fmt.Sprintf("probe-%d", i), base.PodsBound)
		if err != nil {
			return Calibration{}, err
		}
		samples = append(samples, d)
	}
	c := Derive(base, samples)
	TestContext.Timeouts = c.Timeouts
	if b, err := json.MarshalIndent(c, "", "  "); err == nil && TestContext.Artifacts != "" {
		_ = os.MkdirAll(TestContext.Artifacts, 0o755)
		_ = os.WriteFile(filepath.Join(TestContext.Artifacts, "calibration.json"), b, 0o644)
	}
	return c, nil
}

func waitDefaultServiceAccount(ctx context.Context, cs kubernetes.Interface, ns string, t Timeouts) error {
	return wait.PollUntilContextTimeout(ctx, t.Poll, t.Namespace, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// probeCreateToBound creates a one-replica Deployment without scheduling
// intent and returns the time until its pod is bound; it then deletes it.
func probeCreateToBound(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) (time.Duration, error) {
	d := builder.Deployment(name, ns).Obj()
	start := time.Now()
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("creating calibration Deployment %s/%s: %w", ns, name, err)
	}
	var took time.Duration
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: builder.AppLabel + "=" + name})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				took = time.Since(start)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return 0, fmt.Errorf("calibration Deployment %s/%s: no pod bound within %s: %w", ns, name, timeout, err)
	}
	_ = cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	return took, nil
}
