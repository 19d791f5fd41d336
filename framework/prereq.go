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

// PrereqOptions tune CheckPrerequisites.
type PrereqOptions struct {
	// Canary creates a gang Deployment in a temporary namespace and waits
	// for its Workload: proof that an implementation runs.
	Canary bool
	// CanaryTimeout bounds the wait for the canary's Workload (default 30 s).
	CanaryTimeout time.Duration
	// Poll is the interval of that wait (default 200 ms).
	Poll time.Duration
}

// CheckPrerequisites inspects the cluster of cfg and returns what it saw;
// Problems marked essential mean the suite cannot run (PrerequisiteError).
// It changes nothing outside the temporary namespace of the canary.
func CheckPrerequisites(ctx context.Context, cfg *rest.Config, opts PrereqOptions) *testplan.Environment {
	if opts.CanaryTimeout <= 0 {
		opts.CanaryTimeout = 30 * time.Second
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
	checkValidation(ctx, cs, seam, env, problem)

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

// checkValidation records what validates scheduling intent: the apiserver
// itself when apps/v1 has spec.scheduling, else a validating webhook on
// apps/v1 Deployments and StatefulSets.
func checkValidation(ctx context.Context, cs kubernetes.Interface, seam *IntentSeam, env *testplan.Environment, problem func(bool, string, ...any)) {
	if seam.Mode == IntentNative && seam.StatefulSetMode == IntentNative {
		env.Evidence = append(env.Evidence, "native validation: apps/v1 DeploymentSpec and StatefulSetSpec have spec.scheduling")
		return
	}
	list, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		problem(false, "cannot list ValidatingWebhookConfigurations: %v", err)
		return
	}
	found := webhooksFor(list.Items, "deployments", "statefulsets")
	for _, f := range found {
		env.Evidence = append(env.Evidence, "admission: "+f)
	}
	if len(found) == 0 {
		problem(true, "nothing validates scheduling intent: apps/v1 has no spec.scheduling and no ValidatingWebhookConfiguration covers apps/v1 deployments or statefulsets; install the implementation's admission webhook (for the reference implementation: kubectl apply -k deploy/)")
	}
}

// webhooksFor names the webhooks whose rules cover CREATE of apps/v1 resources.
func webhooksFor(configs []admissionregistrationv1.ValidatingWebhookConfiguration, resources ...string) []string {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	var out []string
	for _, c := range configs {
		for _, w := range c.Webhooks {
			var covered []string
			for _, r := range w.Rules {
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
			if len(covered) > 0 {
				out = append(out, fmt.Sprintf("ValidatingWebhookConfiguration %s, webhook %s, covers apps/v1 %s", c.Name, w.Name, strings.Join(covered, ", ")))
			}
		}
	}
	return out
}

// canary proves an implementation runs: in a temporary namespace, a dry-run
// create of an invalid gang Deployment must be rejected, and a tiny valid
// one must get a Workload it controls within opts.CanaryTimeout.
func canary(ctx context.Context, cs kubernetes.Interface, seam *IntentSeam, opts PrereqOptions, env *testplan.Environment, problem func(bool, string, ...any)) {
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "was-prereq-", Labels: map[string]string{"was-harness.io/prerequisite-check": "canary"},
	}}, metav1.CreateOptions{})
	if err != nil {
		problem(true, "canary: cannot create a temporary namespace: %v", err)
		return
	}
	defer func() {
		// Waited for (bounded), so that the canary's pods take no capacity
		// from the first specs, some of which fill the whole cluster.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err := cs.CoreV1().Namespaces().Delete(dctx, ns.Name, metav1.DeleteOptions{})
		if err == nil {
			err = wait.PollUntilContextCancel(dctx, opts.Poll, true, func(ctx context.Context) (bool, error) {
				_, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			problem(false, "canary: namespace %s not deleted within a minute: %v (delete it by hand)", ns.Name, err)
		}
	}()
	gang := func(minCount *int32) *DeploymentScheduling {
		return &DeploymentScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: minCount},
		}}
	}
	d := builder.Deployment("canary", ns.Name).Replicas(2).Recreate().Request(corev1.ResourceCPU, "10m").Obj()

	// minCount above replicas is invalid under both KEP texts (D-U4).
	five := int32(5)
	invalid, err := seam.WithDeploymentScheduling(d, gang(&five))
	if err == nil {
		_, err = seam.dynamic.Resource(deploymentsGVR).Namespace(ns.Name).Create(ctx, invalid, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	}
	switch {
	case err == nil:
		problem(true, "validation missing: a gang Deployment with minCount 5 > replicas 2 was accepted (server-side dry run); the implementation's admission is not in effect")
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err):
		env.Evidence = append(env.Evidence, "admission: dry-run gang Deployment with minCount 5 > replicas 2 rejected: "+firstLineOf(err.Error()))
	default:
		problem(false, "validation probe: unexpected error: %v", err)
	}

	start := time.Now()
	created, err := seam.CreateDeployment(ctx, d, gang(nil))
	if err != nil {
		problem(true, "canary: creating a gang Deployment in %s was refused: %v", ns.Name, err)
		return
	}
	var manager, workload string
	err = wait.PollUntilContextTimeout(ctx, opts.Poll, opts.CanaryTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := cs.SchedulingV1beta1().Workloads(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // transient; the timeout says what was awaited
		}
		for _, w := range list.Items {
			if metav1.IsControlledBy(&w, created) {
				workload = w.Name
				if len(w.ManagedFields) > 0 {
					manager = w.ManagedFields[0].Manager
				}
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		problem(true, "no implementation of KEP-6276 answered: a gang Deployment got no Workload controlled by it within %s; start the implementation's controllers with their gates on (reference implementation: was-controller-manager --feature-gates=WorkloadWithDeployment=true, with kube-controller-manager's deployment and replicaset controllers off)", opts.CanaryTimeout)
		return
	}
	env.Evidence = append(env.Evidence, fmt.Sprintf("canary: gang Deployment %s/canary got Workload %s in %s, written by field manager %q",
		ns.Name, workload, time.Since(start).Round(100*time.Millisecond), manager))
	if manager != "" {
		env.Implementation = manager + " (field manager of the canary's Workload)"
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
	env := CheckPrerequisites(ctx, cfg, PrereqOptions{
		Canary: true,
		// Half the pods-bound bound (30 s by default), scaled with --timeout-scale.
		CanaryTimeout: TestContext.Timeouts.PodsBound / 2,
		Poll:          TestContext.Timeouts.Poll,
	})
	env.Cluster = "existing"
	if env.Implementation == "" {
		env.Implementation = "unknown"
	}
	writeEnvironment(env)
	return PrerequisiteError(env, TestContext.Kubeconfig)
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
