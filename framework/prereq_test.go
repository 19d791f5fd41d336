package framework

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
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
		"nothing validates scheduling intent",
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
