package upgrade

import (
	"context"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/workload-aware/apps-harness/api/crashpoint"
	"github.com/workload-aware/apps-harness/framework"
)

// referencePods are the pods of the DaemonSet that runs the reference
// controller-manager on an existing cluster (--reference-controllers), as
// they were right after the hook armed a crash point. The crash is seen the
// way the kubelet reports it, not by a PID the suite cannot reach: a
// container whose restartCount rose since, whose last termination has
// crashpoint.ExitCode, and whose previous log names the point.
type referencePods struct {
	client          kubernetes.Interface
	namespace, name string
	restarts        map[types.UID]int32 // restartCount per pod when armed
}

func armedReferencePods(ctx context.Context, client kubernetes.Interface) *referencePods {
	ns, name, ok := strings.Cut(framework.TestContext.ReferenceControllers, "/")
	if !ok || ns == "" || name == "" {
		ginkgo.Fail(fmt.Sprintf("--reference-controllers=%q: want namespace/name of the reference controller-manager's DaemonSet", framework.TestContext.ReferenceControllers))
	}
	r := &referencePods{client: client, namespace: ns, name: name, restarts: map[types.UID]int32{}}
	pods, err := r.pods(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing the pods of daemonset %s/%s (--reference-controllers)", ns, name)
	gomega.Expect(pods).NotTo(gomega.BeEmpty(), "daemonset %s/%s (--reference-controllers) has no pod: is the reference deployed (deploy/)?", ns, name)
	for _, p := range pods {
		r.restarts[p.UID] = restartCount(p)
	}
	return r
}

// pods lists the DaemonSet's pods (controlled by it, by UID).
func (r *referencePods) pods(ctx context.Context) ([]corev1.Pod, error) {
	ds, err := r.client.AppsV1().DaemonSets(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, err
	}
	list, err := r.client.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if metav1.IsControlledBy(&p, ds) {
			out = append(out, p)
		}
	}
	return out, nil
}

func restartCount(p corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// waitCrash waits until one of the pods' containers restarted after exiting
// with crashpoint.ExitCode, its previous run having logged the point.
func (r *referencePods) waitCrash(ctx context.Context, point crashpoint.Point) {
	marker := crashpoint.Marker(point)
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		pods, err := r.pods(ctx)
		if err != nil {
			return "", err
		}
		var seen []string
		for _, p := range pods {
			for _, s := range p.Status.ContainerStatuses {
				t := s.LastTerminationState.Terminated
				if t == nil || restartCount(p) <= r.restarts[p.UID] {
					seen = append(seen, fmt.Sprintf("%s/%s: restartCount %d, no new termination", p.Name, s.Name, s.RestartCount))
					continue
				}
				if t.ExitCode != crashpoint.ExitCode {
					seen = append(seen, fmt.Sprintf("%s/%s: last exit %d", p.Name, s.Name, t.ExitCode))
					continue
				}
				log, err := r.client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: s.Name, Previous: true}).DoRaw(ctx)
				if err != nil {
					return "", fmt.Errorf("previous log of %s/%s: %w", p.Name, s.Name, err)
				}
				if strings.Contains(string(log), marker) {
					return "crashed", nil
				}
				seen = append(seen, fmt.Sprintf("%s/%s: exit %d, previous log without %q", p.Name, s.Name, t.ExitCode, marker))
			}
		}
		return strings.Join(seen, "; "), nil
	}).WithTimeout(framework.TestContext.Timeouts.PodsBound).WithPolling(framework.TestContext.Timeouts.Poll).Should(
		gomega.Equal("crashed"), "waiting for a pod of daemonset %s/%s to exit %d after logging %q", r.namespace, r.name, crashpoint.ExitCode, marker)
}
