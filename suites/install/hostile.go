package install

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

// The hostile client's load: what a pod of any namespace could send to the
// webhook's port (its NetworkPolicy admits any source: the API server's
// address is not known to the install).
const (
	forgedRate     = 500
	forgedDuration = time.Minute
)

// forgerSummary is hack/forger's last line.
type forgerSummary struct {
	Seconds  float64        `json:"seconds"`
	Sent     int64          `json:"sent"`
	Refused  int64          `json:"refused"`
	Served   int64          `json:"served"`
	Statuses map[string]int `json:"statuses"`
	Late     int64          `json:"late"`
	Errors   []string       `json:"errors"`
}

var _ = ginkgo.Describe("Install of the reference implementation: the webhook under hostile load", framework.Harness, framework.Serial, func() {
	f := framework.New("install-hostile")

	// The webhook fails closed: a webhook that a flood slows past the
	// registration's timeoutSeconds rejects every Deployment scale of the
	// cluster. It serves only the API server's client certificate
	// (--client-ca-file), so a forged review is refused in the TLS
	// handshake, before it is read, and costs no API request; real scale
	// reviews are answered from a cache.
	ginkgo.It("refuses 500 forged reviews a second from a pod without the API server's client certificate, while every real scale is reviewed and none is rejected", func(ctx context.Context) {
		in := requireInstalled(ctx, f, framework.ReferenceWebhook)
		if in.local != nil {
			ginkgo.Skip("the forger must run as a pod, and the local cluster's kwok nodes run no containers: this spec runs on kind (make kind-smoke)")
		}
		if framework.TestContext.ForgerImage == "" {
			ginkgo.Skip("no --forger-image (env FORGER_IMAGE): make e2e-kind builds hack/forger and loads it into the nodes")
		}
		if framework.Intent.Mode != framework.IntentAnnotation {
			ginkgo.Skip("the reference webhook sees only intent written as its annotation; the server serves spec.scheduling natively")
		}
		before := in.pods(ctx, f)
		gomega.Expect(before).NotTo(gomega.BeEmpty(), "no webhook pod runs")
		limit := before[0].Spec.Containers[0].Resources.Limits.Memory()
		running := in.running(ctx, f)

		ginkgo.By("scaling a gang Deployment with an explicit minCount once a second, through the webhook")
		real := startScaler(ctx, f, time.Second)

		ginkgo.By(fmt.Sprintf("forging %d reviews a second for %s from a pod of %s, without the API server's client certificate", forgedRate, forgedDuration, f.Namespace))
		forger := startForger(ctx, f, webhookServiceURL())
		memory := sampleMemory(ctx, f, before)
		pod := waitPodEnded(ctx, f, forger, forgedDuration+3*time.Minute)
		peak := memory.stop()
		real.expectEveryScaleReviewed(int(forgedDuration.Seconds())/3, "during the forged load")

		ginkgo.By("reading the forger's count")
		gomega.Expect(pod.Status.Phase).To(gomega.Equal(corev1.PodSucceeded), "the forger pod ended %s", pod.Status.Phase)
		sum := forgerResult(ctx, f, forger)
		rate := float64(sum.Sent) / sum.Seconds
		ginkgo.AddReportEntry("forged load", fmt.Sprintf("%d forged reviews in %.0fs (%.0f/s), %d refused in the handshake, %d served %v; webhook peak working set %s of its %s limit",
			sum.Sent, sum.Seconds, rate, sum.Refused, sum.Served, sum.Statuses, peak.String(), limit.String()))
		gomega.Expect(sum.Served).To(gomega.BeZero(), "forged reviews the webhook read and answered (%v): it must refuse any client without the API server's certificate", sum.Statuses)
		gomega.Expect(rate).To(gomega.BeNumerically(">=", 0.8*forgedRate),
			"the forger reached %.0f/s of %d/s (%d ticks dropped): the load was not the one this spec claims", rate, forgedRate, sum.Late)

		ginkgo.By("checking that every webhook pod ran through it, within its memory limit")
		gomega.Expect(in.running(ctx, f)).To(gomega.Equal(running), "webhook pods restarted or were replaced under the load")
		gomega.Expect(peak.IsZero()).To(gomega.BeFalse(), "the kubelets reported no working set for the webhook's pods: the memory bound was not measured")
		if !limit.IsZero() {
			gomega.Expect(peak.Cmp(*limit)).To(gomega.BeNumerically("<", 0), "the webhook's peak working set %s reached its limit %s", peak.String(), limit.String())
		}
	})
})

// webhookServiceURL is the URL the registration gives the API server.
func webhookServiceURL() string {
	svc := rendered().webhookConfiguration().Webhooks[0].ClientConfig.Service
	return fmt.Sprintf("https://%s.%s.svc:%d%s", svc.Name, svc.Namespace, ptr.Deref(svc.Port, 443), ptr.Deref(svc.Path, "/"))
}

func startForger(ctx context.Context, f *framework.Framework, target string) *corev1.Pod {
	ginkgo.GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "forger", Namespace: f.Namespace},
		Spec: corev1.PodSpec{
			RestartPolicy:   corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "forger", Image: framework.TestContext.ForgerImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Args: []string{"--target=" + target, fmt.Sprintf("--rate=%d", forgedRate), "--duration=" + forgedDuration.String(),
					"--namespace=" + f.Namespace, "--name=scaled", "--workers=256"},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	created, err := f.ClientSet.CoreV1().Pods(f.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating the forger pod")
	return created
}

func waitPodEnded(ctx context.Context, f *framework.Framework, pod *corev1.Pod, timeout time.Duration) *corev1.Pod {
	ginkgo.GinkgoHelper()
	var last *corev1.Pod
	gomega.Eventually(ctx, func() (corev1.PodPhase, error) {
		p, err := f.ClientSet.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		last = p
		return p.Status.Phase, nil
	}).WithTimeout(timeout).WithPolling(2*time.Second).Should(gomega.BeElementOf(corev1.PodSucceeded, corev1.PodFailed), "the forger pod %s did not end", pod.Name)
	return last
}

func forgerResult(ctx context.Context, f *framework.Framework, pod *corev1.Pod) forgerSummary {
	ginkgo.GinkgoHelper()
	raw, err := f.ClientSet.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reading the forger's log")
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	var sum forgerSummary
	gomega.Expect(json.Unmarshal([]byte(lines[len(lines)-1]), &sum)).To(gomega.Succeed(), "the forger's last line is not its summary:\n%s", raw)
	return sum
}

// memorySampler keeps the largest working set the kubelets report for the
// given pods' containers (their stats summary, through the API server's
// node proxy, every 2 s).
type memorySampler struct {
	mu     sync.Mutex
	peak   resource.Quantity
	cancel context.CancelFunc
	done   chan struct{}
}

func sampleMemory(ctx context.Context, f *framework.Framework, pods []corev1.Pod) *memorySampler {
	ctx, cancel := context.WithCancel(ctx)
	m := &memorySampler{cancel: cancel, done: make(chan struct{})}
	ginkgo.DeferCleanup(func() { m.stop() })
	watched := map[string]bool{}
	nodes := map[string]bool{}
	for _, p := range pods {
		watched[p.Namespace+"/"+p.Name] = true
		nodes[p.Spec.NodeName] = true
	}
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(m.done)
		for ctx.Err() == nil {
			for node := range nodes {
				m.sample(ctx, f, node, watched)
			}
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
	}()
	return m
}

// kubeletSummary is the part of the kubelet's /stats/summary read here.
type kubeletSummary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		Containers []struct {
			Memory *struct {
				WorkingSetBytes *int64 `json:"workingSetBytes"`
			} `json:"memory"`
		} `json:"containers"`
	} `json:"pods"`
}

func (m *memorySampler) sample(ctx context.Context, f *framework.Framework, node string, watched map[string]bool) {
	raw, err := f.ClientSet.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "stats", "summary").DoRaw(ctx)
	if err != nil {
		return // the next sample will do; the figure is a peak
	}
	var sum kubeletSummary
	if json.Unmarshal(raw, &sum) != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range sum.Pods {
		if !watched[p.PodRef.Namespace+"/"+p.PodRef.Name] {
			continue
		}
		for _, c := range p.Containers {
			if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
				if q := resource.NewQuantity(*c.Memory.WorkingSetBytes, resource.BinarySI); q.Cmp(m.peak) > 0 {
					m.peak = *q
				}
			}
		}
	}
}

// stop ends the sampling and returns the peak.
func (m *memorySampler) stop() resource.Quantity {
	m.cancel()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak
}
