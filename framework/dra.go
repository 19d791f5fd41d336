package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
)

// DRA helpers: KEP-5729 PodGroup-level ResourceClaims as the KEP-6276/6277
// specs observe them. No kubelet runs here: kube-scheduler allocates a claim
// (status.allocation, with a nodeSelector naming the device's node) and the
// ResourceClaim controller generates claims from templates and reserves them
// (status.reservedFor).

// DeviceClassName is the harness's DeviceClass; every node has 2 devices of it.
const DeviceClassName = kwoknodes.DeviceClassName

// ResourceClaimTemplate is a template for devices devices of the harness
// class, one request each. devices 0 gives a claim without requests: it is
// allocated at once with no device and no node constraint, so a pod can use
// it without being pinned anywhere.
func ResourceClaimTemplate(name, namespace string, devices int) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec(devices)},
	}
}

// CreateResourceClaimTemplate creates, in the spec's namespace, a template of
// devices harness devices (0: a claim without requests).
func CreateResourceClaimTemplate(ctx context.Context, f *Framework, name string, devices int) {
	_, err := f.ClientSet.ResourceV1().ResourceClaimTemplates(f.Namespace).Create(ctx, ResourceClaimTemplate(name, f.Namespace, devices), metav1.CreateOptions{})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "creating ResourceClaimTemplate %s", name)
}

// ResourceClaim is a named claim for one device of the harness class.
func ResourceClaim(name, namespace string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: claimSpec(1)}
}

func claimSpec(devices int) resourcev1.ResourceClaimSpec {
	var spec resourcev1.ResourceClaimSpec
	for i := range devices {
		spec.Devices.Requests = append(spec.Devices.Requests, resourcev1.DeviceRequest{
			Name:    fmt.Sprintf("gpu-%d", i),
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: DeviceClassName},
		})
	}
	return spec
}

// ListClaims returns the namespace's ResourceClaims, sorted by name.
func ListClaims(ctx context.Context, cs kubernetes.Interface, namespace string) ([]resourcev1.ResourceClaim, error) {
	list, err := cs.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// ClaimsControlledBy returns the claims whose controller ownerReference has
// uid: claims generated from a template for that PodGroup (or pod).
func ClaimsControlledBy(claims []resourcev1.ResourceClaim, uid types.UID) []resourcev1.ResourceClaim {
	var out []resourcev1.ResourceClaim
	for _, c := range claims {
		if ref := metav1.GetControllerOf(&c); ref != nil && ref.UID == uid {
			out = append(out, c)
		}
	}
	return out
}

// ClaimNode is the node a claim's devices are on: the one value of the
// allocation's nodeSelector (metadata.name In [node], as the scheduler writes
// it for a node-local device). Empty when the claim is not allocated or its
// allocation is not bound to one node.
func ClaimNode(c *resourcev1.ResourceClaim) string {
	a := c.Status.Allocation
	if a == nil || a.NodeSelector == nil || len(a.NodeSelector.NodeSelectorTerms) != 1 {
		return ""
	}
	t := a.NodeSelector.NodeSelectorTerms[0]
	for _, reqs := range [][]corev1.NodeSelectorRequirement{t.MatchFields, t.MatchExpressions} {
		for _, r := range reqs {
			if (r.Key == "metadata.name" || r.Key == corev1.LabelHostname) && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// ReservedFor renders status.reservedFor as "group/resource/name" entries, so
// a mismatch prints who holds the claim.
func ReservedFor(c *resourcev1.ResourceClaim) []string {
	out := make([]string, 0, len(c.Status.ReservedFor))
	for _, r := range c.Status.ReservedFor {
		out = append(out, r.APIGroup+"/"+r.Resource+"/"+r.Name)
	}
	return out
}

// PodGroupConsumer is the reservedFor entry of a PodGroup-level claim.
func PodGroupConsumer(pg *schedulingv1beta1.PodGroup) resourcev1.ResourceClaimConsumerReference {
	return resourcev1.ResourceClaimConsumerReference{APIGroup: schedulingv1beta1.GroupName, Resource: "podgroups", Name: pg.Name, UID: pg.UID}
}

// PodConsumer is the reservedFor entry of a pod-scoped claim.
func PodConsumer(p *corev1.Pod) resourcev1.ResourceClaimConsumerReference {
	return resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID}
}

// ReservedOnlyFor reports whether the claim is allocated and reserved for
// exactly one consumer, want (name and UID).
func ReservedOnlyFor(c *resourcev1.ResourceClaim, want resourcev1.ResourceClaimConsumerReference) bool {
	return c.Status.Allocation != nil && len(c.Status.ReservedFor) == 1 && c.Status.ReservedFor[0] == want
}

// PodClaimName is the ResourceClaim a pod's claim entry uses: the named
// claim of spec.resourceClaims, or for a template the claim recorded in
// status.resourceClaimStatuses (the PodGroup's claim when the entry matches
// one; the status lists only template entries). Empty when unresolved.
func PodClaimName(p *corev1.Pod, entry string) string {
	for _, c := range p.Spec.ResourceClaims {
		if c.Name == entry && c.ResourceClaimName != nil {
			return *c.ResourceClaimName
		}
	}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.Name == entry && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	return ""
}

// PodGroupClaimName is the ResourceClaim a PodGroup's claim entry uses: the
// named claim of spec.resourceClaims, or the claim generated from the
// template as recorded in status.resourceClaimStatuses by the ResourceClaim
// controller (which records only template entries).
func PodGroupClaimName(pg *schedulingv1beta1.PodGroup, entry string) string {
	for _, c := range pg.Spec.ResourceClaims {
		if c.Name == entry && c.ResourceClaimName != nil {
			return *c.ResourceClaimName
		}
	}
	for _, s := range pg.Status.ResourceClaimStatuses {
		if s.Name == entry && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	return ""
}

// ClaimState is one claim as a spec sees it, printable in a failed wait.
type ClaimState struct {
	Name        string
	UID         types.UID
	Allocated   bool
	Node        string
	ReservedFor []string
	// Owner is "Kind/name" of the controller ownerReference ("" for none).
	Owner string
}

func (s ClaimState) String() string {
	return fmt.Sprintf("claim %s (allocated %t on %q, reservedFor [%s], owner %q)", s.Name, s.Allocated, s.Node, strings.Join(s.ReservedFor, " "), s.Owner)
}

// StateOf summarises a claim.
func StateOf(c *resourcev1.ResourceClaim) ClaimState {
	s := ClaimState{Name: c.Name, UID: c.UID, Allocated: c.Status.Allocation != nil, Node: ClaimNode(c), ReservedFor: ReservedFor(c)}
	if ref := metav1.GetControllerOf(c); ref != nil {
		s.Owner = ref.Kind + "/" + ref.Name
	}
	return s
}

// PodGroupClaimInput names a PodGroup's claim entry to wait for.
type PodGroupClaimInput struct {
	ClientSet kubernetes.Interface
	Namespace string
	// PodGroup is the group's name; its current UID is read at each poll.
	PodGroup string
	// Entry is the name of the entry in the PodGroup's spec.resourceClaims.
	Entry string
}

// WaitForPodGroupClaim waits until the PodGroup's claim entry has resolved to
// a ResourceClaim (PodGroup status.resourceClaimStatuses) that is allocated
// and reserved for exactly that PodGroup (reservedFor scheduling.k8s.io
// podgroups, name and UID), not for its pods, and returns the claim.
func WaitForPodGroupClaim(ctx context.Context, in PodGroupClaimInput) *resourcev1.ResourceClaim {
	var claim *resourcev1.ResourceClaim
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) (string, error) {
		pg, err := in.ClientSet.SchedulingV1beta1().PodGroups(in.Namespace).Get(ctx, in.PodGroup, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		name := PodGroupClaimName(pg, in.Entry)
		if name == "" {
			return fmt.Sprintf("PodGroup spec.resourceClaims %v, status.resourceClaimStatuses %v: entry %q not resolved yet",
				pg.Spec.ResourceClaims, pg.Status.ResourceClaimStatuses, in.Entry), nil
		}
		c, err := in.ClientSet.ResourceV1().ResourceClaims(in.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if !ReservedOnlyFor(c, PodGroupConsumer(pg)) {
			return StateOf(c).String(), nil
		}
		claim = c
		return "reserved for the PodGroup", nil
	}).WithTimeout(TestContext.Timeouts.PodsBound).WithPolling(TestContext.Timeouts.Poll).Should(gomega.Equal("reserved for the PodGroup"),
		"waiting for claim %q of PodGroup %s/%s to be allocated and reserved for exactly the PodGroup", in.Entry, in.Namespace, in.PodGroup)
	return claim
}

// WaitForClaimGone waits until the claim with this name and UID no longer
// exists (a claim recreated under the same name does not count).
func WaitForClaimGone(ctx context.Context, cs kubernetes.Interface, namespace, name string, uid types.UID) {
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) (string, error) {
		claims, err := ListClaims(ctx, cs, namespace)
		if err != nil {
			return "", err
		}
		for _, c := range claims {
			if c.UID == uid {
				return StateOf(&c).String() + fmt.Sprintf(" deleting %t", c.DeletionTimestamp != nil), nil
			}
		}
		return "gone", nil
	}).WithTimeout(TestContext.Timeouts.Cleanup).WithPolling(TestContext.Timeouts.Poll).Should(gomega.Equal("gone"),
		"waiting for ResourceClaim %s/%s (uid %s) to be deleted", namespace, name, uid)
}

// ExpectPodsShareClaim asserts every pod resolved its claim entry to claim
// (status.resourceClaimStatuses) and, when the claim's device is on one
// node, runs on that node.
func ExpectPodsShareClaim(pods []corev1.Pod, entry string, claim *resourcev1.ResourceClaim) {
	node := ClaimNode(claim)
	for _, p := range pods {
		gomega.ExpectWithOffset(1, PodClaimName(&p, entry)).To(gomega.Equal(claim.Name),
			"pod %s: claim entry %q must resolve to the shared claim (status.resourceClaimStatuses %v)", p.Name, entry, p.Status.ResourceClaimStatuses)
		if node != "" {
			gomega.ExpectWithOffset(1, p.Spec.NodeName).To(gomega.Equal(node), "pod %s must run on node %s, where claim %s's device is", p.Name, node, claim.Name)
		}
	}
}

// RequireDevices skips the spec unless the cluster publishes the harness's
// devices: DeviceClass DeviceClassName and ResourceSlices of driver
// kwoknodes.DeviceDriver. The harness's own cluster publishes them for its
// kwok nodes, where no kubelet has to prepare a device. Where real kubelets
// run (kind, a vendor's cluster) nothing publishes them: a slice without a
// driver's kubelet plugin would leave pods stuck in NodePrepareResources, so
// the DRA specs say why they cannot run instead of timing out.
func RequireDevices(ctx context.Context, cs kubernetes.Interface) {
	ginkgo.GinkgoHelper()
	if missing := MissingDevices(ctx, cs); missing != "" {
		ginkgo.Skip(missing)
	}
}

// MissingDevices says why the cluster does not publish the harness's devices
// (see RequireDevices), or "" when it does: for a spec that adds claims where
// it can and runs without them elsewhere.
func MissingDevices(ctx context.Context, cs kubernetes.Interface) string {
	ginkgo.GinkgoHelper()
	if _, err := cs.ResourceV1().DeviceClasses().Get(ctx, DeviceClassName, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("needs DRA devices: no DeviceClass %s on this cluster (the harness's cluster publishes it with devices on its kwok nodes; a cluster with real kubelets needs a DRA driver for them)", DeviceClassName)
		}
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reading DeviceClass %s", DeviceClassName)
	}
	slices, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + kwoknodes.DeviceDriver, Limit: 1})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing the ResourceSlices of driver %s", kwoknodes.DeviceDriver)
	if len(slices.Items) == 0 {
		return fmt.Sprintf("needs DRA devices: no ResourceSlice of driver %s offers DeviceClass %s's devices (the harness's cluster publishes them on its kwok nodes; a cluster with real kubelets, such as kind, needs a DRA driver)", kwoknodes.DeviceDriver, DeviceClassName)
	}
	return ""
}
