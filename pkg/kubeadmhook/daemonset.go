package kubeadmhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// The implementation runs as DaemonSets (deploy/). Their pristine container
// args and what the hooks changed are kept in annotations on the DaemonSet
// itself, so that any later call, from any process, computes the args from
// the same two facts, and a DaemonSet back to pristine carries neither.
const (
	annotationPristine = "was-harness.io/pristine-args"
	annotationState    = "was-harness.io/hook-state"
)

// dsState is what the hooks changed on one DaemonSet.
type dsState struct {
	// Reconfigure is the reconfigure hook's last Change.
	Reconfigure Change `json:"reconfigure,omitempty"`
	// Stopped: the controller-restart hook's stop (--controllers= empty: the
	// process keeps serving /healthz and runs no controller).
	Stopped bool `json:"stopped,omitempty"`
	// Unscheduled: StopAdmission's stop (no node runs a pod of it).
	Unscheduled bool `json:"unscheduled,omitempty"`
}

func (s dsState) isZero() bool { return s.Reconfigure.IsZero() && !s.Stopped && !s.Unscheduled }

// unscheduledLabel is a node label no node carries: a DaemonSet whose pods
// select it runs nowhere, so stopping it keeps everything else of its
// template as it was.
const unscheduledLabel = "was-harness.io/daemonset-stopped-by-harness"

// setScheduled makes the pod template select no node (unscheduled) or its
// own nodes again.
func setScheduled(spec *corev1.PodSpec, unscheduled bool) {
	if !unscheduled {
		delete(spec.NodeSelector, unscheduledLabel)
		return
	}
	if spec.NodeSelector == nil {
		spec.NodeSelector = map[string]string{}
	}
	spec.NodeSelector[unscheduledLabel] = "true"
}

// updateDaemonSet changes the hook state of DaemonSet name with edit,
// rewrites its first container's args from pristine plus that state, and
// waits until the rollout is complete.
func (h *Hook) updateDaemonSet(ctx context.Context, name string, edit func(*dsState)) (*appsv1.DaemonSet, dsState, error) {
	api := h.Client.AppsV1().DaemonSets(h.Namespace)
	var updated *appsv1.DaemonSet
	var state dsState
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pristine, st, err := readState(ds)
		if err != nil {
			return err
		}
		edit(&st)
		state = st
		args := pristine
		if ds.Annotations == nil {
			ds.Annotations = map[string]string{}
		}
		if st.isZero() {
			delete(ds.Annotations, annotationPristine)
			delete(ds.Annotations, annotationState)
		} else {
			change := st.Reconfigure
			if st.Stopped {
				change.Args = map[string]string{}
				for k, v := range st.Reconfigure.Args {
					change.Args[k] = v
				}
				change.Args["controllers"] = ""
			}
			args = ApplyToFlags(pristine, change)
			p, _ := json.Marshal(pristine)
			s, _ := json.Marshal(st)
			ds.Annotations[annotationPristine], ds.Annotations[annotationState] = string(p), string(s)
		}
		ctr := &ds.Spec.Template.Spec.Containers[0]
		if slices.Equal(ctr.Args, args) {
			h.logf("daemonset %s/%s: args unchanged", h.Namespace, name)
		}
		ctr.Args = args
		setScheduled(&ds.Spec.Template.Spec, st.Unscheduled)
		updated, err = api.Update(ctx, ds, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, state, fmt.Errorf("updating daemonset %s/%s: %w", h.Namespace, name, err)
	}
	return updated, state, h.waitRollout(ctx, updated)
}

// StopAdmission stops the admission side: its DaemonSet runs no pod (its
// pods select a node label no node has), so the API server's calls to the
// webhook fail as they do when it is down. It returns once no pod of it is
// left. StartAdmission, or Restore, undoes it.
func (h *Hook) StopAdmission(ctx context.Context) error {
	_, _, err := h.updateDaemonSet(ctx, h.AdmissionDaemonSet, func(s *dsState) { s.Unscheduled = true })
	return err
}

// StartAdmission undoes StopAdmission and returns once the webhook answers.
func (h *Hook) StartAdmission(ctx context.Context) error {
	since := time.Now()
	ds, _, err := h.updateDaemonSet(ctx, h.AdmissionDaemonSet, func(s *dsState) { s.Unscheduled = false })
	if err != nil {
		return err
	}
	return h.waitServing(ctx, ImplementationAdmission, ds, since)
}

// readState returns the DaemonSet's pristine args and hook state.
func readState(ds *appsv1.DaemonSet) ([]string, dsState, error) {
	var st dsState
	if len(ds.Spec.Template.Spec.Containers) == 0 {
		return nil, st, fmt.Errorf("daemonset %s/%s has no container", ds.Namespace, ds.Name)
	}
	// A copy: the caller compares the template's args with what it computes.
	pristine := slices.Clone(ds.Spec.Template.Spec.Containers[0].Args)
	if p, ok := ds.Annotations[annotationPristine]; ok {
		pristine = nil
		if err := json.Unmarshal([]byte(p), &pristine); err != nil {
			return nil, st, fmt.Errorf("daemonset %s/%s: annotation %s: %w", ds.Namespace, ds.Name, annotationPristine, err)
		}
	}
	if s, ok := ds.Annotations[annotationState]; ok {
		if err := json.Unmarshal([]byte(s), &st); err != nil {
			return nil, st, fmt.Errorf("daemonset %s/%s: annotation %s: %w", ds.Namespace, ds.Name, annotationState, err)
		}
	}
	return pristine, st, nil
}

// waitRollout waits until every pod of ds runs its current template and is
// ready, and no pod of an older template is left (kubectl rollout status,
// plus the terminating pods it does not count).
func (h *Hook) waitRollout(ctx context.Context, ds *appsv1.DaemonSet) error {
	var last string
	sel := labels.SelectorFromSet(ds.Spec.Selector.MatchLabels)
	err := wait.PollUntilContextTimeout(ctx, time.Second, h.timeout(), true, func(ctx context.Context) (bool, error) {
		cur, err := h.Client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if refused, err := h.refusedToRun(ctx, ds, sel); err != nil || refused != "" {
			if refused != "" {
				return false, fmt.Errorf("daemonset %s/%s does not run with these settings: %s", ds.Namespace, ds.Name, refused)
			}
			last = err.Error()
			return false, nil
		}
		s := cur.Status
		if cur.Status.ObservedGeneration < ds.Generation || s.UpdatedNumberScheduled != s.DesiredNumberScheduled ||
			s.NumberReady != s.DesiredNumberScheduled || s.NumberAvailable != s.DesiredNumberScheduled {
			last = fmt.Sprintf("generation %d observed %d, desired %d, updated %d, ready %d, available %d",
				ds.Generation, s.ObservedGeneration, s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady, s.NumberAvailable)
			return false, nil
		}
		pods, err := h.Client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if n := len(pods.Items); n != int(s.DesiredNumberScheduled) {
			last = fmt.Sprintf("%d pods (some still terminating), want %d", n, s.DesiredNumberScheduled)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting %s for the rollout of daemonset %s/%s: %w; last seen: %s", h.timeout(), ds.Namespace, ds.Name, err, last)
	}
	h.logf("daemonset %s/%s rolled out", ds.Namespace, ds.Name)
	return nil
}

// podTemplateGenerationLabel is the DaemonSet controller's label of the
// template generation a pod was made from (extensions/v1beta1's
// DaemonSetTemplateGenerationKey).
const podTemplateGenerationLabel = "pod-template-generation"

// refusedToRun says how a pod of ds's current template keeps exiting with
// an error ("" while none does): a component that refuses its settings
// (flags, feature gates) exits at start, again after each restart, and the
// rollout would only time out. Three failed runs in a row, the kubelet
// backing off, are needed, not one: a component may exit once on purpose (a
// crash point) or twice on a transient error, and then stay up.
func (h *Hook) refusedToRun(ctx context.Context, ds *appsv1.DaemonSet, sel labels.Selector) (string, error) {
	pods, err := h.Client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.Labels[podTemplateGenerationLabel] != strconv.FormatInt(ds.Generation, 10) {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.LastTerminationState.Terminated
			backingOff := cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
			if cs.RestartCount >= 3 && backingOff && t != nil && t.ExitCode != 0 {
				return fmt.Sprintf("container %s of pod %s exited with code %d %d times: %s", cs.Name, p.Name, t.ExitCode, cs.RestartCount,
					lastLine(t.Message)), nil
			}
		}
	}
	return "", nil
}

// lastLine is the end of a termination message, where a Go program's
// fatal error is.
func lastLine(msg string) string {
	msg = strings.TrimSpace(msg)
	if i := strings.LastIndex(msg, "\n"); i >= 0 {
		msg = msg[i+1:]
	}
	const max = 500
	if len(msg) > max {
		msg = msg[len(msg)-max:]
	}
	return msg
}

// waitCABundle waits until every webhook of the admission configuration has
// a caBundle: the reference's webhook publishes its certificate's CA there
// when it starts.
func (h *Hook) waitCABundle(ctx context.Context) error {
	if h.WebhookConfiguration == "" {
		return nil
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, h.timeout(), true, func(ctx context.Context) (bool, error) {
		found := false
		if v, err := h.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, h.WebhookConfiguration, metav1.GetOptions{}); err == nil {
			found = true
			for _, w := range v.Webhooks {
				if len(w.ClientConfig.CABundle) == 0 {
					last = "validating webhook " + w.Name + " has no caBundle"
					return false, nil
				}
			}
		}
		if m, err := h.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, h.WebhookConfiguration, metav1.GetOptions{}); err == nil {
			found = true
			for _, w := range m.Webhooks {
				if len(w.ClientConfig.CABundle) == 0 {
					last = "mutating webhook " + w.Name + " has no caBundle"
					return false, nil
				}
			}
		}
		if !found {
			last = "no webhook configuration named " + h.WebhookConfiguration
		}
		return found, nil
	})
	if err != nil {
		return fmt.Errorf("waiting %s for the caBundle of %s: %w; last seen: %s", h.timeout(), h.WebhookConfiguration, err, last)
	}
	return nil
}

// waitLeader waits until a pod of ds holds the implementation's Lease with
// a renewal after since: its controllers run again. Identities are
// "<hostname>_<uuid>" (kube-controller-manager's scheme), and a pod's
// hostname is its name.
func (h *Hook) waitLeader(ctx context.Context, ds *appsv1.DaemonSet, since time.Time) error {
	sel := labels.SelectorFromSet(ds.Spec.Selector.MatchLabels)
	return h.waitLease(ctx, since, fmt.Sprintf("a pod of %s/%s", ds.Namespace, ds.Name), func(ctx context.Context, holder string) (bool, string, error) {
		pods, err := h.Client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && strings.HasPrefix(holder, p.Name+"_") {
				return true, "", nil
			}
		}
		return false, "not a current pod", nil
	})
}

// waitLease waits until the implementation's Lease is held, renewed after
// since, by an identity accept takes (what it waits for is who; accept says
// why not otherwise). Without a Lease there is nothing to wait for.
func (h *Hook) waitLease(ctx context.Context, since time.Time, who string, accept func(ctx context.Context, holder string) (bool, string, error)) error {
	if h.Lease == "" {
		return nil
	}
	ns, name, ok := strings.Cut(h.Lease, "/")
	if !ok {
		return fmt.Errorf("lease %q: want namespace/name", h.Lease)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, h.timeout(), true, func(ctx context.Context) (bool, error) {
		l, err := h.Client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		renewed := l.Spec.RenewTime != nil && !l.Spec.RenewTime.Time.Before(since.Truncate(time.Second))
		ok, why := false, "no holder"
		if holder != "" {
			if ok, why, err = accept(ctx, holder); err != nil {
				last = err.Error()
				return false, nil
			}
		}
		if ok && renewed {
			h.logf("lease %s held by %s", h.Lease, holder)
			return true, nil
		}
		last = fmt.Sprintf("lease holder %q (renewed since %s: %t) %s", holder, since.Format(time.TimeOnly), renewed, why)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting %s for %s to hold lease %s: %w; last seen: %s", h.timeout(), who, h.Lease, err, last)
	}
	return nil
}

// waitAdmissionAnswers waits until the apiserver reaches the webhook: a
// dry-run create of a Deployment carrying AdmissionProbeAnnotation (the
// reference's webhook sees only Deployments that may carry intent: its
// matchConditions) gets any answer but "failed calling webhook": admitted or
// rejected, the webhook was reached. A rolled-out DaemonSet is not enough:
// on one node its old pod goes before the new one is ready, and the
// Service's endpoints and kube-proxy's rules follow the new pod a little
// later (measured on kind: "connection refused" right after the rollout).
func (h *Hook) waitAdmissionAnswers(ctx context.Context) error {
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "was-harness-admission-probe", Namespace: metav1.NamespaceDefault},
	}
	if h.AdmissionProbeAnnotation != "" {
		probe.Annotations = map[string]string{h.AdmissionProbeAnnotation: "{}"}
	}
	probe.Spec = appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "was-harness-admission-probe"}},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "was-harness-admission-probe"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "registry.k8s.io/pause"}}},
		},
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, h.timeout(), true, func(ctx context.Context) (bool, error) {
		_, err := h.Client.AppsV1().Deployments(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		// Only an unreachable webhook is worth waiting for: any other answer,
		// a rejection included, came from an admission chain that works.
		if err != nil && (strings.Contains(err.Error(), "failed calling webhook") || apierrors.IsServiceUnavailable(err) ||
			apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)) {
			last = err.Error()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting %s for the admission webhook to answer a dry-run create: %w; last error: %s", h.timeout(), err, last)
	}
	return nil
}
