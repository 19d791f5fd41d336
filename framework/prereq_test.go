package framework

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/workload-aware/apps-harness/testplan"
)

func TestParseFeatureGates(t *testing.T) {
	raw := `# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="GenericWorkload",stage="BETA"} 1
kubernetes_feature_enabled{name="CompositePodGroup",stage="ALPHA"} 0
apiserver_request_total{verb="GET"} 3
`
	got, err := parseFeatureGates([]byte(raw))
	if err != nil || !reflect.DeepEqual(got, map[string]bool{"GenericWorkload": true, "CompositePodGroup": false}) {
		t.Errorf("parseFeatureGates = %v, %v", got, err)
	}
	if _, err := parseFeatureGates([]byte("up 1\n")); err == nil || !strings.Contains(err.Error(), "no kubernetes_feature_enabled") {
		t.Errorf("metrics without gates: err = %v", err)
	}
}

func TestWebhooksFor(t *testing.T) {
	rule := func(groups, resources []string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: []string{"v1"}, Resources: resources}}
	}
	cfgs := []admissionregistrationv1.ValidatingWebhookConfiguration{
		{ObjectMeta: metav1.ObjectMeta{Name: "vendor"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "apps.vendor.io", Rules: []admissionregistrationv1.RuleWithOperations{rule([]string{"apps"}, []string{"deployments", "statefulsets"}, admissionregistrationv1.Create)}},
			{Name: "pods.vendor.io", Rules: []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"pods"}, admissionregistrationv1.Create)}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "wildcard"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "all.io", Rules: []admissionregistrationv1.RuleWithOperations{rule([]string{"*"}, []string{"*"}, admissionregistrationv1.OperationAll)}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "delete-only"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "del.io", Rules: []admissionregistrationv1.RuleWithOperations{rule([]string{"apps"}, []string{"deployments"}, admissionregistrationv1.Delete)}},
		}},
	}
	want := []string{
		"ValidatingWebhookConfiguration vendor, webhook apps.vendor.io, covers apps/v1 deployments, statefulsets",
		"ValidatingWebhookConfiguration wildcard, webhook all.io, covers apps/v1 deployments, statefulsets",
	}
	if got := webhooksFor(cfgs, "deployments", "statefulsets"); !reflect.DeepEqual(got, want) {
		t.Errorf("webhooksFor = %q, want %q", got, want)
	}
}

// A cluster without the Workload API, without GenericWorkload and without
// any validation of intent: the check names each gap with its fix and
// never gets to the canary.
func TestCheckPrerequisitesSaysWhatIsMissing(t *testing.T) {
	mux := http.NewServeMux()
	reply := func(path, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		})
	}
	reply("/version", `{"gitVersion":"v1.37.2"}`)
	reply("/metrics", "kubernetes_feature_enabled{name=\"GenericWorkload\",stage=\"BETA\"} 0\n")
	reply("/openapi/v3", `{"paths":{"apis/apps/v1":{"serverRelativeURL":"/openapi/v3/apis/apps/v1"}}}`)
	reply("/openapi/v3/apis/apps/v1", `{"components":{"schemas":{"io.k8s.api.apps.v1.DeploymentSpec":{"properties":{"replicas":{}}},"io.k8s.api.apps.v1.StatefulSetSpec":{"properties":{"replicas":{}}}}}}`)
	reply("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", `{"kind":"ValidatingWebhookConfigurationList","apiVersion":"admissionregistration.k8s.io/v1","items":[]}`)
	reply("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", `{"kind":"ValidatingAdmissionPolicyList","apiVersion":"admissionregistration.k8s.io/v1","items":[]}`)
	reply("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", `{"kind":"ValidatingAdmissionPolicyBindingList","apiVersion":"admissionregistration.k8s.io/v1","items":[]}`)
	mux.HandleFunc("/", http.NotFound) // no scheduling.k8s.io, no resource.k8s.io
	srv := httptest.NewServer(mux)
	defer srv.Close()

	env := CheckPrerequisites(context.Background(), &rest.Config{Host: srv.URL}, PrereqOptions{Canary: true})
	if env.ServerVersion != "v1.37.2" || env.IntentDeployment != "annotation" || env.APIServerGates["GenericWorkload"] {
		t.Errorf("environment = %+v", env)
	}
	for _, a := range env.APIs {
		if a.Served {
			t.Errorf("%s reported served", a.GroupVersion)
		}
	}
	err := PrerequisiteError(env, "/k/config")
	if err == nil {
		t.Fatalf("no error; problems %+v", env.Problems)
	}
	for _, s := range []string{
		"the cluster of /k/config lacks what the suite needs",
		"scheduling.k8s.io/v1beta1 (workloads, podgroups) is not served: start kube-apiserver with --runtime-config=scheduling.k8s.io/v1beta1=true and --feature-gates=GenericWorkload=true",
		"kube-apiserver reports GenericWorkload=false",
		"was-harness conformance --check-only --kubeconfig=/k/config",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q:\n%v", s, err)
		}
	}
	// Not essential: only the DRA and CompositePodGroup specs need these.
	if strings.Contains(err.Error(), "resource.k8s.io/v1") || strings.Contains(err.Error(), "v1alpha3") {
		t.Errorf("optional APIs reported as essential:\n%v", err)
	}
	if strings.Contains(strings.Join(env.Evidence, " "), "canary") {
		t.Errorf("the canary ran although essentials were missing: %v", env.Evidence)
	}
}

// fakeAPIServer answers the check's read-only requests for a cluster that
// serves the Workload API with GenericWorkload on, has no
// ValidatingWebhookConfiguration at all and validates intent with a bound
// ValidatingAdmissionPolicy instead (whatever body policies is).
func fakeAPIServer(t *testing.T, policies string) *httptest.Server {
	mux := http.NewServeMux()
	reply := func(path, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		})
	}
	reply("/version", `{"gitVersion":"v1.37.2"}`)
	reply("/metrics", "# TYPE kubernetes_feature_enabled gauge\nkubernetes_feature_enabled{name=\"GenericWorkload\",stage=\"BETA\"} 1\n")
	reply("/apis/scheduling.k8s.io/v1beta1", `{"kind":"APIResourceList","groupVersion":"scheduling.k8s.io/v1beta1","resources":[{"name":"workloads","namespaced":true,"kind":"Workload","verbs":["get"]},{"name":"podgroups","namespaced":true,"kind":"PodGroup","verbs":["get"]}]}`)
	reply("/openapi/v3", `{"paths":{"apis/apps/v1":{"serverRelativeURL":"/openapi/v3/apis/apps/v1"}}}`)
	reply("/openapi/v3/apis/apps/v1", `{"components":{"schemas":{"io.k8s.api.apps.v1.DeploymentSpec":{"properties":{"replicas":{}}},"io.k8s.api.apps.v1.StatefulSetSpec":{"properties":{"replicas":{}}}}}}`)
	reply("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", `{"kind":"ValidatingWebhookConfigurationList","apiVersion":"admissionregistration.k8s.io/v1","items":[]}`)
	reply("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", policies)
	reply("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", `{"kind":"ValidatingAdmissionPolicyBindingList","apiVersion":"admissionregistration.k8s.io/v1","items":[{"metadata":{"name":"vendor-intent-binding"},"spec":{"policyName":"vendor-intent","validationActions":["Deny"]}}]}`)
	mux.HandleFunc("/", http.NotFound)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// Validation by a ValidatingAdmissionPolicy, with no webhook on apps/v1, is
// not refused (it used to be: "nothing validates scheduling intent"); the
// policy is recorded as the mechanism seen, information only.
func TestCheckPrerequisitesAcceptsAnyValidationMechanism(t *testing.T) {
	srv := fakeAPIServer(t, `{"kind":"ValidatingAdmissionPolicyList","apiVersion":"admissionregistration.k8s.io/v1","items":[{"metadata":{"name":"vendor-intent"},"spec":{"matchConstraints":{"resourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["deployments","statefulsets"]}]},"validations":[{"expression":"true"}]}}]}`)
	env := CheckPrerequisites(context.Background(), &rest.Config{Host: srv.URL}, PrereqOptions{})
	if err := PrerequisiteError(env, "/k/config"); err != nil {
		t.Errorf("a cluster validating by ValidatingAdmissionPolicy was refused: %v", err)
	}
	want := "validation mechanism: ValidatingAdmissionPolicy vendor-intent covers apps/v1 deployments, statefulsets, bound by vendor-intent-binding"
	if !slices.Contains(env.Evidence, want) {
		t.Errorf("evidence %q lacks %q", env.Evidence, want)
	}
}

func TestPoliciesFor(t *testing.T) {
	policy := func(name string, ops []admissionregistrationv1.OperationType, resources ...string) admissionregistrationv1.ValidatingAdmissionPolicy {
		return admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: resources}},
			}}},
		}}
	}
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	got := policiesFor([]admissionregistrationv1.ValidatingAdmissionPolicy{
		policy("sts", create, "statefulsets"),
		policy("unbound", []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}, "*"),
		policy("delete-only", []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, "deployments"),
		{ObjectMeta: metav1.ObjectMeta{Name: "no-constraints"}},
	}, []admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "b1"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "sts"}},
	}, "deployments", "statefulsets")
	want := []string{
		"ValidatingAdmissionPolicy sts covers apps/v1 statefulsets, bound by b1",
		"ValidatingAdmissionPolicy unbound covers apps/v1 deployments, statefulsets, no binding (not in effect)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("policiesFor = %q, want %q", got, want)
	}
}

// The check's decision from the probes: which KEPs are implemented, and a
// refusal only when neither is.
func TestJudgeKEPs(t *testing.T) {
	ok := func(kep, kind string) kepProbe {
		return kepProbe{KEP: kep, Kind: kind, Invalid: "an invalid " + kind, Rejected: true, Rejection: "denied", Workload: "w", Controller: true, Manager: "m", Waited: time.Second, Timeout: 15 * time.Second}
	}
	absent := func(p kepProbe) kepProbe {
		p.Workload, p.Manager, p.Rejected, p.Controller = "", "", false, false
		return p
	}
	noValidation := func(p kepProbe) kepProbe { p.Rejected = false; return p }
	notController := func(p kepProbe) kepProbe { p.Controller = false; return p }
	refused := func(p kepProbe) kepProbe {
		p.Workload, p.CreateErr = "", errors.New("admission webhook denied")
		return p
	}
	d, s := ok("KEP-6276", "Deployment"), ok("KEP-6277", "StatefulSet")
	for _, c := range []struct {
		name        string
		probes      []kepProbe
		implements  []string
		implemented []bool
		essential   bool
		problems    []string
		reasons     []string
	}{
		{"both", []kepProbe{d, s}, nil, []bool{true, true}, false, nil, nil},
		{"KEP-6277 alone", []kepProbe{absent(d), s}, nil, []bool{false, true}, false, nil, nil},
		{"KEP-6276 alone", []kepProbe{d, absent(s)}, nil, []bool{true, false}, false, nil, nil},
		{"neither", []kepProbe{absent(d), absent(s)}, nil, []bool{false, false}, true, []string{"no implementation of KEP-6276 or KEP-6277 answered (KEP-6276: a valid gang Deployment got no Workload that references it within 15s; KEP-6277: a valid gang StatefulSet got no Workload that references it within 15s)"}, nil},
		{"canary refused", []kepProbe{refused(d), s}, nil, []bool{false, true}, false, nil, nil},
		// Implemented without validation: not refused, noted; its admission specs fail.
		{"no validation", []kepProbe{noValidation(d), s}, nil, []bool{true, true}, false, []string{"KEP-6276 validation missing: a dry-run create of an invalid Deployment was accepted"}, nil},
		// Ownership wrong is still an implementation: the ownership specs judge it.
		{"not the controller", []kepProbe{notController(d), s}, nil, []bool{true, true}, false, nil, []string{"referencing it, but not as its controller"}},
		// Declared: a KEP that does not answer stops the suite, instead of
		// skipping its specs as auto-detection would.
		{"declared both, KEP-6276 silent", []kepProbe{absent(d), s}, []string{"KEP-6276", "KEP-6277"}, []bool{false, true}, true, []string{"KEP-6276 is declared (--implements=KEP-6276,KEP-6277) but a valid gang Deployment got no Workload that references it within 15s"}, nil},
		{"declared both, both answer", []kepProbe{d, s}, []string{"KEP-6276", "KEP-6277"}, []bool{true, true}, false, nil, nil},
		{"declared KEP-6277 alone", []kepProbe{absent(d), s}, []string{"KEP-6277"}, []bool{false, true}, false, nil, []string{"not declared: the implementation under test declares --implements=KEP-6277"}},
		// Not declared is not judged, even when its canary answered.
		{"declared KEP-6276, KEP-6277 answers too", []kepProbe{d, s}, []string{"KEP-6276"}, []bool{true, false}, false, nil, nil},
		{"declared KEP-6276 alone, silent", []kepProbe{absent(d), s}, []string{"KEP-6276"}, []bool{false, false}, true, []string{"KEP-6276 is declared"}, nil},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			keps, _, problems := judgeKEPs(c.probes, c.implements)
			for i, k := range keps {
				if k.KEP != c.probes[i].KEP || k.Implemented != c.implemented[i] || k.Reason == "" {
					t.Errorf("KEP %d = %+v, want %s implemented=%t with a reason", i, k, c.probes[i].KEP, c.implemented[i])
				}
			}
			env := &testplan.Environment{Problems: problems}
			if got := len(env.Essentials()) > 0; got != c.essential {
				t.Errorf("refused = %t, want %t (%+v)", got, c.essential, problems)
			}
			for _, want := range c.problems {
				if !slices.ContainsFunc(problems, func(p testplan.Problem) bool { return strings.Contains(p.Message, want) }) {
					t.Errorf("problems %+v lack %q", problems, want)
				}
			}
			for _, want := range c.reasons {
				if !slices.ContainsFunc(keps, func(k testplan.KEPCheck) bool { return strings.Contains(k.Reason, want) }) {
					t.Errorf("reasons %+v lack %q", keps, want)
				}
			}
		})
	}
	keps, _, _ := judgeKEPs([]kepProbe{refused(d)}, nil)
	if want := "creating a valid gang Deployment was refused: admission webhook denied"; keps[0].Reason != want {
		t.Errorf("reason %q, want %q", keps[0].Reason, want)
	}
}

func TestParseImplements(t *testing.T) {
	for in, want := range map[string][]string{
		"": nil, "auto": nil, "KEP-6277": {"KEP-6277"}, " KEP-6276 , KEP-6277 ": {"KEP-6276", "KEP-6277"}, "KEP-6276,KEP-6276": {"KEP-6276"},
	} {
		got, err := ParseImplements(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseImplements(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"6276", "KEP-6276,deployments", "both"} {
		if _, err := ParseImplements(in); err == nil || !strings.Contains(err.Error(), "--implements (env IMPLEMENTS)") {
			t.Errorf("ParseImplements(%q): error %v, want one naming the flag", in, err)
		}
	}
}

// The central skip: a spec skips only for a KEP label found not implemented.
func TestNotImplementedReason(t *testing.T) {
	notImpl := map[string]string{"KEP-6276": "no Workload within 15s"}
	for _, c := range []struct {
		labels []string
		want   string
	}{
		{[]string{"D-I1", "KEP-6276"}, testplan.NotImplementedPrefix + "KEP-6276: no Workload within 15s"},
		{[]string{"D-P5", "S-P7", "KEP-6276", "KEP-6277"}, testplan.NotImplementedPrefix + "KEP-6276: no Workload within 15s"},
		{[]string{"S-I1", "KEP-6277"}, ""},
		{[]string{"Harness"}, ""},
	} {
		got, skip := notImplementedReason(c.labels, notImpl)
		if got != c.want || skip != (c.want != "") {
			t.Errorf("labels %q: %q, %t; want %q", c.labels, got, skip, c.want)
		}
	}
	if _, skip := notImplementedReason([]string{"KEP-6276"}, nil); skip {
		t.Errorf("skipped with nothing recorded as not implemented")
	}
}

// Without --implements, a KEP found silent is only skipped: the run says so
// loudly and names the declaration that would make it a failure.
func TestUndeclaredWarning(t *testing.T) {
	notImpl := map[string]string{"KEP-6276": "no Workload"}
	if w := undeclaredWarning(nil, notImpl); !strings.Contains(w, "KEP-6276 found not implemented") || !strings.Contains(w, "IMPLEMENTS=KEP-6276,KEP-6277") {
		t.Errorf("warning %q", w)
	}
	if w := undeclaredWarning([]string{"KEP-6277"}, notImpl); w != "" {
		t.Errorf("declared, yet warned: %q", w)
	}
	if w := undeclaredWarning(nil, map[string]string{}); w != "" {
		t.Errorf("both answered, yet warned: %q", w)
	}
}
