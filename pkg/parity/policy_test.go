package parity

import (
	"context"
	"os"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/fixtures"
	"github.com/workload-aware/apps-harness/internal/apitest"
)

func TestMain(m *testing.M) { os.Exit(apitest.Run(m)) }

// installPolicy creates the fixture's MutatingAdmissionPolicy and binding
// and removes them when the test ends.
func installPolicy(t *testing.T, c kubernetes.Interface, file string) {
	t.Helper()
	docs, err := fixtures.Documents(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	api := c.AdmissionregistrationV1()
	for _, doc := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatal(err)
		}
		switch tm.Kind {
		case "MutatingAdmissionPolicy":
			p := &admissionregistrationv1.MutatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict(doc, p); err != nil {
				t.Fatal(err)
			}
			if _, err := api.MutatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: the API server refuses the policy: %v", file, err)
			}
			t.Cleanup(func() { _ = api.MutatingAdmissionPolicies().Delete(ctx, p.Name, metav1.DeleteOptions{}) })
		case "MutatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict(doc, b); err != nil {
				t.Fatal(err)
			}
			if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: the API server refuses the binding: %v", file, err)
			}
			t.Cleanup(func() { _ = api.MutatingAdmissionPolicyBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}) })
		default:
			t.Fatalf("%s: unexpected %s", file, tm.Kind)
		}
	}
}

// namespace makes a namespace like the upstream e2e framework's (label
// e2e-run), with the extra labels.
func namespace(t *testing.T, c kubernetes.Interface, labels map[string]string) string {
	t.Helper()
	ns, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "parity-", Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10.2"}}},
	}
}

func deployment(strategy appsv1.DeploymentStrategyType, annotations map[string]string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "d-", Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: podTemplate(),
			Strategy: appsv1.DeploymentStrategy{Type: strategy},
		},
	}
	return d
}

func statefulSet(policy appsv1.PodManagementPolicyType) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "s-"},
		Spec: appsv1.StatefulSetSpec{
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template:            podTemplate(),
			PodManagementPolicy: policy,
		},
	}
}

// admitDeployment creates d with a server-side dry run: the policies run,
// nothing is stored.
func admitDeployment(t *testing.T, c kubernetes.Interface, ns string, d *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	got, err := c.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	return got
}

func admitStatefulSet(t *testing.T, c kubernetes.Interface, ns string, s *appsv1.StatefulSet) *appsv1.StatefulSet {
	t.Helper()
	got, err := c.AppsV1().StatefulSets(ns).Create(context.Background(), s, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	return got
}

// waitInForce waits until the policy gives a Recreate Deployment the
// intent want: the API server loads policies, and drops those of an
// earlier test, through an informer.
func waitInForce(t *testing.T, c kubernetes.Interface, ns, want string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got := admitDeployment(t, c, ns, deployment(appsv1.RecreateDeploymentStrategyType, nil))
		return policyOf(t, got.Annotations, intent.DeploymentAnnotation) == want, nil
	})
	if err != nil {
		t.Fatal("the policy did not take effect within 30s")
	}
}

func policyOf(t *testing.T, annotations map[string]string, key string) string {
	t.Helper()
	p := intentOf(annotations, key) // the observer's reading
	if p == "invalid" {
		t.Fatalf("the policy wrote intent the reference cannot parse: %s", annotations[key])
	}
	return p
}

// TestBasicPolicy: basic intent on every Deployment and StatefulSet in an
// e2e namespace, nothing else changed; other namespaces, and objects that
// already carry intent, untouched.
func TestBasicPolicy(t *testing.T) {
	api := apitest.Start(t)
	c := api.Client
	installPolicy(t, c, "parity/basic.yaml")
	e2e := namespace(t, c, map[string]string{E2ERunLabel: "x"})
	other := namespace(t, c, nil)
	waitInForce(t, c, e2e, "basic")

	got := admitDeployment(t, c, e2e, deployment(appsv1.RollingUpdateDeploymentStrategyType, nil))
	if p := policyOf(t, got.Annotations, intent.DeploymentAnnotation); p != "basic" {
		t.Errorf("Deployment in an e2e namespace: intent %q, want basic", p)
	}
	if got.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("strategy %q changed", got.Spec.Strategy.Type)
	}
	set := admitStatefulSet(t, c, e2e, statefulSet(appsv1.OrderedReadyPodManagement))
	if p := policyOf(t, set.Annotations, intent.StatefulSetAnnotation); p != "basic" {
		t.Errorf("StatefulSet in an e2e namespace: intent %q, want basic", p)
	}
	if got := admitDeployment(t, c, other, deployment(appsv1.RecreateDeploymentStrategyType, nil)); len(got.Annotations) != 0 {
		t.Errorf("Deployment outside the e2e namespaces got annotations %v", got.Annotations)
	}
	gang := map[string]string{intent.DeploymentAnnotation: `{"schedulingPolicy":{"gang":{}}}`}
	if got := admitDeployment(t, c, e2e, deployment(appsv1.RecreateDeploymentStrategyType, gang)); got.Annotations[intent.DeploymentAnnotation] != gang[intent.DeploymentAnnotation] {
		t.Errorf("existing intent overwritten: %v", got.Annotations)
	}
}

// TestGangPolicy: gang where the KEPs allow it as written (Recreate,
// Parallel); where the namespace allows a rewrite, the strategy rewritten
// to allow gang; elsewhere basic.
func TestGangPolicy(t *testing.T) {
	api := apitest.Start(t)
	c := api.Client
	installPolicy(t, c, "parity/gang.yaml")
	asWritten := namespace(t, c, map[string]string{E2ERunLabel: "x", StrategyLabel: StrategyAsWritten})
	rewrite := namespace(t, c, map[string]string{E2ERunLabel: "x", StrategyLabel: StrategyRewrite})
	waitInForce(t, c, asWritten, "gang")

	for _, tc := range []struct {
		ns           string
		strategy     appsv1.DeploymentStrategyType
		wantStrategy appsv1.DeploymentStrategyType
		wantIntent   string
	}{
		{asWritten, appsv1.RecreateDeploymentStrategyType, appsv1.RecreateDeploymentStrategyType, "gang"},
		{asWritten, appsv1.RollingUpdateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType, "basic"},
		{rewrite, appsv1.RecreateDeploymentStrategyType, appsv1.RecreateDeploymentStrategyType, "gang"},
		{rewrite, appsv1.RollingUpdateDeploymentStrategyType, appsv1.RecreateDeploymentStrategyType, "gang"},
	} {
		got := admitDeployment(t, c, tc.ns, deployment(tc.strategy, nil))
		if p := policyOf(t, got.Annotations, intent.DeploymentAnnotation); p != tc.wantIntent || got.Spec.Strategy.Type != tc.wantStrategy {
			t.Errorf("%s Deployment in %s: %s intent, strategy %s; want %s, %s", tc.strategy, tc.ns, p, got.Spec.Strategy.Type, tc.wantIntent, tc.wantStrategy)
		}
		if wantFrom := map[bool]string{true: string(tc.strategy), false: ""}[tc.strategy != tc.wantStrategy]; got.Annotations[RewrittenFromAnnotation] != wantFrom {
			t.Errorf("%s Deployment in %s: %s=%q, want %q", tc.strategy, tc.ns, RewrittenFromAnnotation, got.Annotations[RewrittenFromAnnotation], wantFrom)
		}
		if got.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && got.Spec.Strategy.RollingUpdate != nil {
			t.Errorf("%s Deployment in %s: Recreate with rollingUpdate %v", tc.strategy, tc.ns, got.Spec.Strategy.RollingUpdate)
		}
	}
	for _, tc := range []struct {
		ns                 string
		policy, wantPolicy appsv1.PodManagementPolicyType
		wantIntent         string
	}{
		{asWritten, appsv1.ParallelPodManagement, appsv1.ParallelPodManagement, "gang"},
		{asWritten, appsv1.OrderedReadyPodManagement, appsv1.OrderedReadyPodManagement, "basic"},
		{rewrite, appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement, "gang"},
	} {
		got := admitStatefulSet(t, c, tc.ns, statefulSet(tc.policy))
		if wantFrom := map[bool]string{true: string(tc.policy), false: ""}[tc.policy != tc.wantPolicy]; got.Annotations[RewrittenFromAnnotation] != wantFrom {
			t.Errorf("%s StatefulSet in %s: %s=%q, want %q", tc.policy, tc.ns, RewrittenFromAnnotation, got.Annotations[RewrittenFromAnnotation], wantFrom)
		}
		if p := policyOf(t, got.Annotations, intent.StatefulSetAnnotation); p != tc.wantIntent || got.Spec.PodManagementPolicy != tc.wantPolicy {
			t.Errorf("%s StatefulSet in %s: %s intent, %s; want %s, %s", tc.policy, tc.ns, p, got.Spec.PodManagementPolicy, tc.wantIntent, tc.wantPolicy)
		}
	}
}
