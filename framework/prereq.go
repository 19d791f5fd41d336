package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
	"github.com/workload-aware/apps-harness/testplan"
)

// Prerequisites of the suite on a cluster it did not start (vendor mode).
// CheckPrerequisites looks before any spec runs, so that a cluster without
// the APIs or without an implementation fails at once with one plain message
// instead of a hundred timeouts, and records what it saw for the report.

// DefaultCanaryTimeout bounds the wait for a canary's Workload. The KEPs
// bound no latency, and a canary that times out marks its whole KEP not
// implemented, hiding every verdict of it: so the bound is generous enough
// for a correct but slow implementation (a retry backoff, a delayed write),
// and is paid in full only for a KEP that is indeed missing.
const DefaultCanaryTimeout = 2 * time.Minute

// PrereqOptions tune CheckPrerequisites.
type PrereqOptions struct {
	// Canary creates a gang Deployment and a gang StatefulSet in a
	// temporary namespace and waits for their Workloads: proof that an
	// implementation of each KEP runs.
	Canary bool
	// CanaryTimeout bounds the wait for the canaries' Workloads (default
	// DefaultCanaryTimeout).
	CanaryTimeout time.Duration
	// Poll is the interval of that wait (default 200 ms).
	Poll time.Duration
	// Implements lists the KEPs the implementation under test declares
	// (--implements, e.g. ["KEP-6277"]); empty: found out by the canaries.
	// A declared KEP whose canary gets no answer stops the suite, where
	// auto-detection would only mark it not implemented: a vendor that
	// claims a KEP must not get a green run with the KEP's specs skipped.
	Implements []string
}

// ParseImplements reads --implements: a comma-separated list of the KEPs'
// labels (KEP-6276, KEP-6277); empty or "auto" means found out by the
// canaries (nil).
func ParseImplements(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "auto" {
		return nil, nil
	}
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if k != kepDeployment && k != kepStatefulSet {
			return nil, fmt.Errorf("--implements (env IMPLEMENTS): %q is not a KEP of the suite; give %s, %s, both comma-separated, or auto", k, kepDeployment, kepStatefulSet)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// CheckPrerequisites inspects the cluster of cfg and returns what it saw;
// Problems marked essential mean the suite cannot run (PrerequisiteError).
// It changes nothing outside the temporary namespace of the canary.
func CheckPrerequisites(ctx context.Context, cfg *rest.Config, opts PrereqOptions) *testplan.Environment {
	if opts.CanaryTimeout <= 0 {
		opts.CanaryTimeout = DefaultCanaryTimeout
	}
	if opts.Poll <= 0 {
		opts.Poll = 200 * time.Millisecond
	}
	env := &testplan.Environment{Server: cfg.Host, CheckedAt: time.Now()}
	problem := func(essential bool, format string, args ...any) {
		env.Problems = append(env.Problems, testplan.Problem{Essential: essential, Message: fmt.Sprintf(format, args...)})
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		problem(true, "cannot build a client for %s: %v", cfg.Host, err)
		return env
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		problem(true, "cannot reach the apiserver at %s: %v", cfg.Host, err)
		return env
	}
	env.ServerVersion = v.GitVersion

	// The group versions and gates are api/cluster's: the ones the local
	// cluster serves and turns on.
	for _, api := range cluster.APIs {
		served := Serves(cs, api.GroupVersion, api.Resources)
		env.APIs = append(env.APIs, testplan.APICheck{GroupVersion: api.GroupVersion, Resources: api.Resources, Served: served, Required: api.Required})
		if !served {
			problem(api.Required, "%s (%s) is not served: %s", api.GroupVersion, strings.Join(api.Resources, ", "), api.Without)
		}
	}

	if gates, err := apiServerGates(ctx, cs); err != nil {
		// Not essential: a vendor may not expose /metrics to the suite's user.
		problem(false, "feature gates not observable: reading kube-apiserver /metrics: %v (grant get on the non-resource URL /metrics to see them)", err)
	} else {
		// The KEPs' own gates are recorded only when the server knows them
		// (1.37 does not).
		env.APIServerGates = map[string]bool{}
		for _, g := range cluster.Gates {
			on, known := gates[g.Name]
			if known {
				env.APIServerGates[g.Name] = on
			}
			if !on && g.Without != "" && (known || g.Essential) {
				problem(g.Essential, "kube-apiserver reports %s=%t: %s", g.Name, on, g.Without)
			}
		}
	}

	seam, err := NewIntentSeam(cfg)
	if err != nil {
		problem(true, "cannot tell how to write scheduling intent: %v", err)
		return env
	}
	env.IntentDeployment, env.IntentStatefulSet = string(seam.Mode), string(seam.StatefulSetMode)
	validationMechanisms(ctx, cs, seam, env, problem)

	if opts.Canary && len(env.Essentials()) == 0 {
		canary(ctx, cs, seam, opts, env, problem)
	}
	return env
}

// Serves reports whether discovery lists every resource of gv.
func Serves(cs kubernetes.Interface, gv string, resources []string) bool {
	list, err := cs.Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil {
		return false
	}
	for _, r := range resources {
		if !slices.ContainsFunc(list.APIResources, func(a metav1.APIResource) bool { return a.Name == r }) {
			return false
		}
	}
	return true
}

// apiServerGates reads kubernetes_feature_enabled{name=...} from the
// apiserver's /metrics: every gate the server knows, on or off.
func apiServerGates(ctx context.Context, cs kubernetes.Interface) (map[string]bool, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseFeatureGates(raw)
}

func parseFeatureGates(raw []byte) (map[string]bool, error) {
	families, err := parseMetrics(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	fam, ok := families["kubernetes_feature_enabled"]
	if !ok {
		return nil, fmt.Errorf("/metrics has no kubernetes_feature_enabled")
	}
	out := map[string]bool{}
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" {
				out[l.GetValue()] = m.GetGauge().GetValue() == 1
			}
		}
	}
	return out, nil
}

// validationMechanisms records, as information only, what may validate
// scheduling intent: the apiserver itself (native spec.scheduling), the
// ValidatingWebhookConfigurations and ValidatingAdmissionPolicies whose rules
// cover CREATE of apps/v1 Deployments or StatefulSets. The check judges
// validation by behaviour (the canaries' dry runs), never by mechanism: the
// KEPs put validation in kube-apiserver, and a webhook, a policy or native
// code are all ways to get there.
func validationMechanisms(ctx context.Context, cs kubernetes.Interface, seam *IntentSeam, env *testplan.Environment, problem func(bool, string, ...any)) {
	if seam.Mode == IntentNative {
		env.Evidence = append(env.Evidence, "validation mechanism: native (apps/v1 DeploymentSpec has spec.scheduling)")
	}
	if seam.StatefulSetMode == IntentNative {
		env.Evidence = append(env.Evidence, "validation mechanism: native (apps/v1 StatefulSetSpec has spec.scheduling)")
	}
	if list, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err != nil {
		problem(false, "cannot list ValidatingWebhookConfigurations (information only): %v", err)
	} else {
		for _, f := range webhooksFor(list.Items, "deployments", "statefulsets") {
			env.Evidence = append(env.Evidence, "validation mechanism: "+f)
		}
	}
	policies, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		problem(false, "cannot list ValidatingAdmissionPolicies (information only): %v", err)
		return
	}
	bindings, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		problem(false, "cannot list ValidatingAdmissionPolicyBindings (information only): %v", err)
		return
	}
	for _, f := range policiesFor(policies.Items, bindings.Items, "deployments", "statefulsets") {
		env.Evidence = append(env.Evidence, "validation mechanism: "+f)
	}
}

// coveredBy returns which of resources the rules cover for CREATE of apps/v1.
func coveredBy(rules []admissionregistrationv1.RuleWithOperations, resources []string) []string {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	var covered []string
	for _, r := range rules {
		if !has(r.APIGroups, "apps") || !has(r.APIVersions, "v1") ||
			!(slices.Contains(r.Operations, admissionregistrationv1.Create) || slices.Contains(r.Operations, admissionregistrationv1.OperationAll)) {
			continue
		}
		for _, res := range resources {
			if has(r.Resources, res) && !slices.Contains(covered, res) {
				covered = append(covered, res)
			}
		}
	}
	return covered
}

// webhooksFor names the webhooks whose rules cover CREATE of apps/v1 resources.
func webhooksFor(configs []admissionregistrationv1.ValidatingWebhookConfiguration, resources ...string) []string {
	var out []string
	for _, c := range configs {
		for _, w := range c.Webhooks {
			if covered := coveredBy(w.Rules, resources); len(covered) > 0 {
				out = append(out, fmt.Sprintf("ValidatingWebhookConfiguration %s, webhook %s, covers apps/v1 %s", c.Name, w.Name, strings.Join(covered, ", ")))
			}
		}
	}
	return out
}

// policiesFor names the ValidatingAdmissionPolicies whose match constraints
// cover CREATE of apps/v1 resources, with the bindings that put them in effect.
func policiesFor(policies []admissionregistrationv1.ValidatingAdmissionPolicy, bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding, resources ...string) []string {
	var out []string
	for _, p := range policies {
		if p.Spec.MatchConstraints == nil {
			continue
		}
		rules := make([]admissionregistrationv1.RuleWithOperations, 0, len(p.Spec.MatchConstraints.ResourceRules))
		for _, r := range p.Spec.MatchConstraints.ResourceRules {
			rules = append(rules, r.RuleWithOperations)
		}
		covered := coveredBy(rules, resources)
		if len(covered) == 0 {
			continue
		}
		var bound []string
		for _, b := range bindings {
			if b.Spec.PolicyName == p.Name {
				bound = append(bound, b.Name)
			}
		}
		boundBy := "no binding (not in effect)"
		if len(bound) > 0 {
			boundBy = "bound by " + strings.Join(bound, ", ")
		}
		out = append(out, fmt.Sprintf("ValidatingAdmissionPolicy %s covers apps/v1 %s, %s", p.Name, strings.Join(covered, ", "), boundBy))
	}
	return out
}

// The KEPs' spec labels, which the check's verdicts name and the central
// skip (suite.go) matches.
var (
	kepDeployment  = KEP(6276)[0]
	kepStatefulSet = KEP(6277)[0]
)

// kepProbe is what the canary saw of one KEP.
type kepProbe struct {
	KEP  string // its spec label, e.g. "KEP-6276"
	Kind string // "Deployment" or "StatefulSet"
	// Invalid describes the invalid gang object the dry run created.
	Invalid string
	// Rejected: the dry-run create of Invalid was refused as invalid or
	// forbidden, by whatever mechanism; Rejection is its first line, or
	// ValidationErr the unexpected error (neither: it was accepted).
	Rejected      bool
	Rejection     string
	ValidationErr error
	// CreateErr: the valid gang canary could not be created.
	CreateErr error
	// Workload is the Workload that came to reference the canary by an
	// ownerReference ("" none, within Timeout), written by field manager
	// Manager, Waited after the create; Controller: that reference is the
	// controller one.
	Workload   string
	Controller bool
	Manager    string
	Waited     time.Duration
	Timeout    time.Duration
}

func (p kepProbe) implemented() bool { return p.CreateErr == nil && p.Workload != "" }

// notImplementedReason says why p shows its KEP not implemented.
func (p kepProbe) notImplementedReason() string {
	if p.CreateErr != nil {
		return fmt.Sprintf("creating a valid gang %s was refused: %v", p.Kind, firstLineOf(p.CreateErr.Error()))
	}
	return fmt.Sprintf("a valid gang %s got no Workload that references it within %s", p.Kind, p.Timeout)
}

// judgeKEPs is the check's decision, from the probes and the declared KEPs
// (implements; empty: auto-detect). Auto-detected, a KEP is implemented when
// its canary got a Workload that references it; the suite is refused only
// when neither KEP is: an implementation of one KEP alone is correct, and
// the other KEP's specs then skip as not implemented. Declared, a KEP whose
// canary got no answer refuses the suite, and a KEP not declared is not
// judged (its specs skip), whatever its canary saw. A KEP implemented
// without validation is not refused either: its admission specs fail, which
// is the verdict such an implementation earns. The canary asks for a
// reference, not the controller one, so that an implementation that gets
// ownership wrong is judged by the ownership specs (D-I7, S-U10), by name,
// instead of being told it implements nothing.
func judgeKEPs(probes []kepProbe, implements []string) (keps []testplan.KEPCheck, evidence []string, problems []testplan.Problem) {
	var missing []string
	for _, p := range probes {
		switch {
		case p.Rejected:
			evidence = append(evidence, fmt.Sprintf("%s admission: dry-run create of %s rejected: %s", p.KEP, p.Invalid, p.Rejection))
		case p.ValidationErr != nil:
			problems = append(problems, testplan.Problem{Message: fmt.Sprintf("%s validation probe: dry-run create of %s: unexpected error: %v", p.KEP, p.Invalid, p.ValidationErr)})
		case p.implemented():
			problems = append(problems, testplan.Problem{Message: fmt.Sprintf("%s validation missing: a dry-run create of %s was accepted; the KEP's admission specs will fail", p.KEP, p.Invalid)})
		}
		switch {
		case !declares(implements, p.KEP):
			keps = append(keps, testplan.KEPCheck{KEP: p.KEP, Reason: fmt.Sprintf("not declared: the implementation under test declares --implements=%s", strings.Join(implements, ","))})
			continue
		case !p.implemented() && len(implements) > 0:
			problems = append(problems, testplan.Problem{Essential: true, Message: fmt.Sprintf("%s is declared (--implements=%s) but %s; start its controllers with the gate on, or leave it out of --implements (env IMPLEMENTS)",
				p.KEP, strings.Join(implements, ","), p.notImplementedReason())})
			keps = append(keps, testplan.KEPCheck{KEP: p.KEP, Reason: p.notImplementedReason()})
			continue
		case !p.implemented():
			reason := p.notImplementedReason()
			keps = append(keps, testplan.KEPCheck{KEP: p.KEP, Reason: reason})
			missing = append(missing, p.KEP+": "+reason)
			continue
		}
		how := "controlled by it"
		if !p.Controller {
			how = "referencing it, but not as its controller (the ownership specs judge that)"
		}
		keps = append(keps, testplan.KEPCheck{KEP: p.KEP, Implemented: true,
			Reason: fmt.Sprintf("a gang %s canary got Workload %s, %s, in %s (field manager %q)", p.Kind, p.Workload, how, p.Waited.Round(100*time.Millisecond), p.Manager)})
	}
	if len(missing) == len(probes) && len(probes) > 0 {
		problems = append(problems, testplan.Problem{Essential: true, Message: "no implementation of KEP-6276 or KEP-6277 answered (" + strings.Join(missing, "; ") +
			"); start the implementation's controllers with their gates on (reference implementation: was-controller-manager --feature-gates=WorkloadWithDeployment=true,WorkloadWithStatefulSet=true, with kube-controller-manager's deployment, replicaset and statefulset controllers off)"})
	}
	return keps, evidence, problems
}

// canary proves an implementation runs, KEP by KEP, in a temporary
// namespace: a dry-run create of an invalid gang object of each kind must be
// rejected (recorded), and a tiny valid gang Deployment (KEP-6276) and gang
// Parallel StatefulSet (KEP-6277) must each get a Workload that references
// them within opts.CanaryTimeout (judgeKEPs says why not "controls"). Both KEPs say so of a minimal correct
// implementation: KEP-6276 "The Workload object has an ownerReference to the
// Deployment with controller: true"; KEP-6277 "The Workload carries an
// ownerReference to the StatefulSet with controller: true, when the
// StatefulSet controller created it" (and, Initial Creation Lifecycle, it
// "discovers, or creates, the Workload object" for a Parallel gang
// StatefulSet). The two canaries wait side by side, so one KEP missing
// costs one timeout, not two.
func canary(ctx context.Context, cs kubernetes.Interface, seam *IntentSeam, opts PrereqOptions, env *testplan.Environment, problem func(bool, string, ...any)) {
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "was-prereq-", Labels: map[string]string{"was-harness.io/prerequisite-check": "canary"},
	}}, metav1.CreateOptions{})
	if err != nil {
		problem(true, "canary: cannot create a temporary namespace: %v", err)
		return
	}
	defer deleteCanaryNamespace(ctx, cs, ns.Name, opts.Poll, problem)

	gang := func(minCount *int32) *DeploymentScheduling {
		return &DeploymentScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: minCount},
		}}
	}
	d := builder.Deployment("canary", ns.Name).Replicas(2).Recreate().Request(corev1.ResourceCPU, "10m").Obj()
	set := func() *builder.StatefulSetWrapper {
		return builder.StatefulSet("canary", ns.Name).Replicas(2).PodTemplate(func(p *builder.PodWrapper) { p.Request(corev1.ResourceCPU, "10m") })
	}
	probes := []kepProbe{
		// minCount above replicas is invalid under both KEP texts (D-U4).
		{KEP: kepDeployment, Kind: "Deployment", Invalid: "a gang Deployment with minCount 5 > replicas 2", Timeout: opts.CanaryTimeout},
		// KEP-6277: "Admission validation MUST reject a StatefulSet that
		// specifies both OrderedReady and a gang scheduling policy".
		{KEP: kepStatefulSet, Kind: "StatefulSet", Invalid: "a gang StatefulSet with podManagementPolicy OrderedReady", Timeout: opts.CanaryTimeout},
	}
	five := int32(5)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	invalidD, err := seam.WithDeploymentScheduling(d, gang(&five))
	if err == nil {
		_, err = seam.dynamic.Resource(deploymentsGVR).Namespace(ns.Name).Create(ctx, invalidD, dryRun)
	}
	probes[0].judgeRejection(err)
	invalidS, err := seam.WithStatefulSetScheduling(set().OrderedReady().Obj(), gang(nil))
	if err == nil {
		_, err = seam.dynamic.Resource(statefulSetsGVR).Namespace(ns.Name).Create(ctx, invalidS, dryRun)
	}
	probes[1].judgeRejection(err)

	start := time.Now()
	var owners [2]metav1.Object
	// A KEP not declared is not judged: no canary to wait for (its
	// validation probe above is still recorded, as information).
	if declares(opts.Implements, probes[0].KEP) {
		if created, err := seam.CreateDeployment(ctx, d, gang(nil)); err != nil {
			probes[0].CreateErr = err
		} else {
			owners[0] = created
		}
	}
	if declares(opts.Implements, probes[1].KEP) {
		if created, err := seam.CreateStatefulSet(ctx, set().Parallel().Obj(), gang(nil)); err != nil {
			probes[1].CreateErr = err
		} else {
			owners[1] = created
		}
	}
	// The condition: each created canary is referenced by a Workload; bounded by
	// opts.CanaryTimeout (a missing KEP ends the wait at the bound).
	_ = wait.PollUntilContextTimeout(ctx, opts.Poll, opts.CanaryTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := cs.SchedulingV1beta1().Workloads(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // transient; the reasons say what was awaited
		}
		done := true
		for i, owner := range owners {
			if owner == nil || probes[i].Workload != "" {
				continue
			}
			for _, w := range list.Items {
				if !referencedBy(&w, owner) || (probes[i].Controller && !metav1.IsControlledBy(&w, owner)) {
					continue
				}
				probes[i].Workload, probes[i].Waited = w.Name, time.Since(start)
				probes[i].Controller = metav1.IsControlledBy(&w, owner)
				if len(w.ManagedFields) > 0 {
					probes[i].Manager = w.ManagedFields[0].Manager
				}
			}
			done = done && probes[i].Workload != ""
		}
		return done, nil
	})

	keps, evidence, problems := judgeKEPs(probes, opts.Implements)
	env.KEPs = keps
	env.Evidence = append(env.Evidence, evidence...)
	env.Problems = append(env.Problems, problems...)
	var managers []string
	for _, p := range probes {
		if p.Manager != "" && !slices.Contains(managers, p.Manager) {
			managers = append(managers, p.Manager)
		}
	}
	if len(managers) > 0 {
		env.Implementation = strings.Join(managers, ", ") + " (field manager of the canaries' Workloads)"
	}
}

// declares: the implementation under test claims kep (every KEP when
// nothing was declared: auto-detection judges them all).
func declares(implements []string, kep string) bool {
	return len(implements) == 0 || slices.Contains(implements, kep)
}

// referencedBy: obj has an ownerReference to owner (by UID), controller or not.
func referencedBy(obj, owner metav1.Object) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == owner.GetUID() })
}

// judgeRejection records the dry-run create's answer: a rejection as
// invalid, forbidden or bad request is validation at work, whoever did it.
func (p *kepProbe) judgeRejection(err error) {
	switch {
	case err == nil:
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err):
		p.Rejected, p.Rejection = true, firstLineOf(err.Error())
	default:
		p.ValidationErr = err
	}
}

// deleteCanaryNamespace deletes the canaries' namespace and waits (bounded)
// until it is gone, so that their pods take no capacity from the first
// specs, some of which fill the whole cluster.
func deleteCanaryNamespace(ctx context.Context, cs kubernetes.Interface, name string, poll time.Duration, problem func(bool, string, ...any)) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	err := cs.CoreV1().Namespaces().Delete(dctx, name, metav1.DeleteOptions{})
	if err == nil {
		err = wait.PollUntilContextCancel(dctx, poll, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		problem(false, "canary: namespace %s not deleted within a minute: %v (delete it by hand)", name, err)
	}
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

// PrerequisiteError is nil when env has no essential problem, else one plain
// message listing what is missing and how to fix it.
func PrerequisiteError(env *testplan.Environment, kubeconfig string) error {
	missing := env.Essentials()
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the cluster of %s lacks what the suite needs, so no spec runs:\n  - %s\n(rerun just this check with: was-harness conformance --check-only --kubeconfig=%s)",
		kubeconfig, strings.Join(missing, "\n  - "), kubeconfig)
}

// checkExistingCluster runs the prerequisite check in vendor mode, records
// it in $ARTIFACTS/environment.json and fails the suite on what is missing.
func checkExistingCluster(ctx context.Context, cfg *rest.Config) error {
	implements, err := ParseImplements(TestContext.Implements)
	if err != nil {
		return err
	}
	// First, and in a second: a hook that cannot run would otherwise fail
	// every spec that needs it, after the whole run.
	if err := CheckHooks(ctx, TestContext.Hooks()); err != nil {
		return err
	}
	env := CheckPrerequisites(ctx, cfg, PrereqOptions{
		Canary:     true,
		Implements: implements,
		// Never below the specs' own pods-bound bound (scaled with --timeout-scale).
		CanaryTimeout: max(DefaultCanaryTimeout, TestContext.Timeouts.PodsBound),
		Poll:          TestContext.Timeouts.Poll,
	})
	env.Cluster = "existing"
	if env.Implementation == "" {
		env.Implementation = "unknown"
	}
	writeEnvironment(env)
	// SetupSuite hands these to every process: their specs skip.
	notImplemented = env.NotImplemented()
	if w := undeclaredWarning(implements, notImplemented); w != "" {
		fmt.Fprintln(os.Stderr, w)
	}
	return PrerequisiteError(env, TestContext.Kubeconfig)
}

// undeclaredWarning is what a run without --implements says when the
// canaries found a KEP not implemented: its specs will skip, which is right
// for an implementation of the other KEP alone and a silent failure for one
// that claims both. Empty when the KEPs were declared or all answered.
func undeclaredWarning(implements []string, notImpl map[string]string) string {
	if len(implements) > 0 || len(notImpl) == 0 {
		return ""
	}
	var keps []string
	for k := range notImpl {
		keps = append(keps, k)
	}
	slices.Sort(keps)
	return fmt.Sprintf("[prerequisites] WARNING: %s found not implemented; its specs will report NOT-IMPLEMENTED, not FAIL. "+
		"If your implementation claims it, declare what it implements (IMPLEMENTS=%s,%s, flag --implements) and a silent KEP stops the run instead.",
		strings.Join(keps, " and "), kepDeployment, kepStatefulSet)
}

// recordLocalEnvironment records the harness's own cluster: what it
// observes (no canary: the reference implementation is known to run) plus
// the gates each component was started with.
func recordLocalEnvironment(ctx context.Context, c *localcluster.Cluster) {
	cfg, err := c.RESTConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "[cluster] environment record: %v\n", err)
		return
	}
	env := CheckPrerequisites(ctx, cfg, PrereqOptions{})
	env.Cluster = "local"
	conf := c.Config()
	env.Implementation = "none (the local cluster runs no add-on)"
	if len(conf.Addons) > 0 {
		env.Implementation = fmt.Sprintf("add-on %s of the local cluster (%s)", conf.Addons[0].Name, TestContext.Addon)
	}
	env.ComponentGates = map[string]map[string]bool{}
	for _, name := range c.RunningComponents() {
		if g := conf.EffectiveFeatureGates(name); len(g) > 0 {
			env.ComponentGates[string(name)] = g
		}
	}
	writeEnvironment(env)
}

func writeEnvironment(env *testplan.Environment) {
	path := filepath.Join(TestContext.Artifacts, testplan.EnvironmentFile)
	if err := testplan.WriteEnvironment(path, env); err != nil {
		fmt.Fprintf(os.Stderr, "writing %s: %v\n", path, err)
		return
	}
	fmt.Fprintf(os.Stderr, "environment recorded in %s:\n%s", path, testplan.EnvironmentMarkdown(env))
}
