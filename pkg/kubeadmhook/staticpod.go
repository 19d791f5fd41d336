package kubeadmhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// kubeadm runs kube-apiserver, kube-controller-manager and kube-scheduler as
// static pods: the kubelet of each control-plane node runs what
// /etc/kubernetes/manifests/<component>.yaml says and mirrors it as the pod
// <component>-<node> in kube-system. Reconfiguring one rewrites that file
// from a pristine copy kept outside the manifests directory (the kubelet
// would run a copy inside it as a second pod) and removed again when the
// component is back to pristine: a cluster is left as it was found.
const (
	ManifestDir = "/etc/kubernetes/manifests"
	// PristineDir holds the manifests as installed while a component is
	// reconfigured.
	PristineDir = "/etc/kubernetes/was-harness-pristine"
)

// StaticPodComponents are the components kubeadm runs as static pods.
var StaticPodComponents = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

func manifestPath(component string) string { return path.Join(ManifestDir, component+".yaml") }
func pristinePath(component string) string { return path.Join(PristineDir, component+".yaml") }

// reconfigureStaticPod applies c to component on every control-plane node,
// one node at a time, as an operator upgrades a control plane.
func (h *Hook) reconfigureStaticPod(ctx context.Context, component string, c Change) error {
	nodes, err := h.controlPlaneNodes(ctx)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		if err := h.reconfigureStaticPodOn(ctx, node, component, c); err != nil {
			return err
		}
	}
	return nil
}

func (h *Hook) reconfigureStaticPodOn(ctx context.Context, node, component string, c Change) error {
	current, err := h.Exec.Run(ctx, node, "cat "+manifestPath(component), nil)
	if err != nil {
		return fmt.Errorf("reading %s's manifest: %w", component, err)
	}
	pristine, err := h.Exec.Run(ctx, node, "cat "+pristinePath(component)+" 2>/dev/null || true", nil)
	if err != nil {
		return err
	}
	havePristine := len(pristine) > 0
	if !havePristine {
		if c.IsZero() {
			h.logf("%s on %s: already pristine", component, node)
			return nil
		}
		pristine = current
		if _, err := h.Exec.Run(ctx, node, "mkdir -p "+PristineDir+" && cat >"+pristinePath(component), pristine); err != nil {
			return fmt.Errorf("keeping %s's pristine manifest: %w", component, err)
		}
	}
	desired := pristine
	if !c.IsZero() {
		if desired, err = renderManifest(pristine, c); err != nil {
			return fmt.Errorf("%s on %s: %w", component, node, err)
		}
	}
	want, err := decodePod(desired)
	if err != nil {
		return err
	}
	if c.Version != "" {
		// A version runs an image preloaded on the node (no registry need be
		// reachable): say so at once rather than wait for a pod that never starts.
		image := want.Spec.Containers[0].Image
		if _, err := h.Exec.Run(ctx, node, "crictl inspecti -q "+shellQuote(image)+" >/dev/null", nil); err != nil {
			return fmt.Errorf("%s %s: image %s is not on node %s (preload it: the harness's kind node image has the previous minor's, hack/kind-image.sh): %w", component, c.Version, image, node, err)
		}
	}
	mirror := component + "-" + node
	before := h.containerID(ctx, mirror)
	if !bytes.Equal(desired, current) {
		h.logf("%s on %s: %s", component, node, c)
		// Written beside the pristine copy, then moved: the kubelet never
		// reads a half-written manifest.
		next := path.Join(PristineDir, "."+component+".next")
		script := fmt.Sprintf("mkdir -p %s && cat >%s && mv %s %s", PristineDir, next, next, manifestPath(component))
		if _, err := h.Exec.Run(ctx, node, script, desired); err != nil {
			return fmt.Errorf("writing %s's manifest: %w", component, err)
		}
	}
	if err := h.waitStaticPod(ctx, mirror, want, before, !bytes.Equal(desired, current)); err != nil {
		return err
	}
	if c.IsZero() {
		if _, err := h.Exec.Run(ctx, node, "rm -f "+pristinePath(component)+" && rmdir "+PristineDir+" 2>/dev/null || true", nil); err != nil {
			return err
		}
	}
	return nil
}

// renderManifest applies c to a static pod manifest: flags into the first
// container's command, Version into its image tag.
func renderManifest(manifest []byte, c Change) ([]byte, error) {
	pod, err := decodePod(manifest)
	if err != nil {
		return nil, err
	}
	ctr := &pod.Spec.Containers[0]
	ctr.Command = ApplyToFlags(ctr.Command, c)
	if c.Version != "" {
		ctr.Image = WithTag(ctr.Image, c.Version)
		// The image is preloaded: never pull it (no registry may be reachable).
		ctr.ImagePullPolicy = corev1.PullNever
	}
	return yaml.Marshal(pod)
}

func decodePod(manifest []byte) (*corev1.Pod, error) {
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(manifest, &pod); err != nil {
		return nil, fmt.Errorf("decoding a static pod manifest: %w", err)
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, errors.New("the static pod manifest has no container")
	}
	return &pod, nil
}

// containerID is the mirror pod's container, "" when unknown (the
// apiserver may be the component being restarted).
func (h *Hook) containerID(ctx context.Context, mirror string) string {
	p, err := h.Client.CoreV1().Pods("kube-system").Get(ctx, mirror, metav1.GetOptions{})
	if err != nil || len(p.Status.ContainerStatuses) == 0 {
		return ""
	}
	return p.Status.ContainerStatuses[0].ContainerID
}

// waitStaticPod waits until the mirror pod shows the wanted command and
// image, runs a new container (when the manifest changed) and is ready, and
// kube-apiserver answers /readyz. The apiserver may be down meanwhile: every
// error is a reason to look again, until the timeout.
func (h *Hook) waitStaticPod(ctx context.Context, mirror string, want *corev1.Pod, before string, changed bool) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, h.timeout(), true, func(ctx context.Context) (bool, error) {
		if err := h.readyz(ctx); err != nil {
			last = "kube-apiserver /readyz: " + err.Error()
			return false, nil
		}
		p, err := h.Client.CoreV1().Pods("kube-system").Get(ctx, mirror, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ctr, wantCtr := p.Spec.Containers[0], want.Spec.Containers[0]
		switch {
		case !slices.Equal(ctr.Command, wantCtr.Command) || ctr.Image != wantCtr.Image:
			last = fmt.Sprintf("mirror pod %s still shows image %s, command %v", mirror, ctr.Image, ctr.Command)
		case len(p.Status.ContainerStatuses) == 0:
			last = "mirror pod " + mirror + " has no container status yet"
		case changed && p.Status.ContainerStatuses[0].ContainerID == before:
			last = "mirror pod " + mirror + " still runs the container from before the change"
		case !p.Status.ContainerStatuses[0].Ready || p.Status.ContainerStatuses[0].State.Running == nil:
			last = fmt.Sprintf("mirror pod %s's container is not ready: %+v", mirror, p.Status.ContainerStatuses[0].State)
		default:
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting %s for %s: %w; last seen: %s", h.timeout(), mirror, err, last)
	}
	h.logf("%s is ready", mirror)
	return nil
}

func (h *Hook) readyz(ctx context.Context) error {
	return h.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
}
