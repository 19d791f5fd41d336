package deployment

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/kubernetes/pkg/controller"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
)

// TestKEP6276BuildWorkload covers D-U1: the Deployment-owned Workload.
func TestKEP6276BuildWorkload(t *testing.T) {
	t.Run("D-U1_compiles_constraints_disruption_claims_owner_and_controllerRef", func(t *testing.T) {
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), nil)
		cfg := ktFullIntent()
		w, err := BuildWorkload(d, cfg)
		if err != nil {
			t.Fatalf("BuildWorkload: %v", err)
		}
		if w.Name != WorkloadName(d) || w.Namespace != d.Namespace {
			t.Errorf("workload %s/%s, want %s/%s", w.Namespace, w.Name, d.Namespace, WorkloadName(d))
		}
		if len(w.OwnerReferences) != 1 {
			t.Fatalf("ownerReferences = %+v, want exactly one (the Deployment)", w.OwnerReferences)
		}
		ref := w.OwnerReferences[0]
		if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name || ref.UID != d.UID || !ptr.Deref(ref.Controller, false) {
			t.Errorf("ownerReference = %+v, want controller apps/v1 Deployment %s uid %s", ref, d.Name, d.UID)
		}
		if !metav1.IsControlledBy(w, d) {
			t.Errorf("workload is not controlled by its Deployment")
		}
		wantCtrl := &schedulingv1beta1.TypedLocalObjectReference{APIGroup: "apps", Kind: "Deployment", Name: d.Name}
		if !equality.Semantic.DeepEqual(w.Spec.ControllerRef, wantCtrl) {
			t.Errorf("spec.controllerRef = %+v, want %+v", w.Spec.ControllerRef, wantCtrl)
		}
		if len(w.Spec.CompositePodGroupTemplates) != 0 {
			t.Errorf("compositePodGroupTemplates = %+v, want none", w.Spec.CompositePodGroupTemplates)
		}
		if len(w.Spec.PodGroupTemplates) != 1 {
			t.Fatalf("podGroupTemplates = %+v, want exactly one", w.Spec.PodGroupTemplates)
		}
		tmpl := w.Spec.PodGroupTemplates[0]
		if tmpl.Name != TemplateName(d) {
			t.Errorf("template name = %q, want %q", tmpl.Name, TemplateName(d))
		}
		if g := tmpl.SchedulingPolicy.Gang; g == nil || g.MinCount != 3 || tmpl.SchedulingPolicy.Basic != nil {
			t.Errorf("schedulingPolicy = %+v, want gang minCount 3 (derived from replicas)", tmpl.SchedulingPolicy)
		}
		wantTopo := &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: ktZone}}}
		if !equality.Semantic.DeepEqual(tmpl.SchedulingConstraints, wantTopo) {
			t.Errorf("schedulingConstraints = %+v, want %+v", tmpl.SchedulingConstraints, wantTopo)
		}
		if dm := tmpl.DisruptionMode; dm == nil || dm.All == nil || dm.Single != nil {
			t.Errorf("disruptionMode = %+v, want all", dm)
		}
		wantClaims := []schedulingv1beta1.PodGroupResourceClaim{
			{Name: "gpu-pool", ResourceClaimTemplateName: ptr.To("gpu-template")},
			{Name: "shared", ResourceClaimName: ptr.To("pinned-claim")},
		}
		if !equality.Semantic.DeepEqual(tmpl.ResourceClaims, wantClaims) {
			t.Errorf("resourceClaims = %+v, want %+v", tmpl.ResourceClaims, wantClaims)
		}
		if m := TemplateMinCount(w); m == nil || *m != 3 {
			t.Errorf("TemplateMinCount = %v, want 3", m)
		}
	})

	t.Run("D-U1_single_disruption_mode_and_no_constraints_stay_unset", func(t *testing.T) {
		d := ktDeployment(t, "web", ptr.To[int32](2), nil)
		cfg := ktGang(nil)
		cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{Single: &schedulingv1alpha3.WorkloadPodGroupSingleDisruptionMode{}}
		w, err := BuildWorkload(d, cfg)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := w.Spec.PodGroupTemplates[0]
		if dm := tmpl.DisruptionMode; dm == nil || dm.Single == nil || dm.All != nil {
			t.Errorf("disruptionMode = %+v, want single", dm)
		}
		if tmpl.SchedulingConstraints != nil || len(tmpl.ResourceClaims) != 0 {
			t.Errorf("constraints %+v / claims %+v compiled from an intent that has none", tmpl.SchedulingConstraints, tmpl.ResourceClaims)
		}
	})

	for _, tc := range []struct {
		name     string
		replicas *int32
		cfg      *intent.DeploymentSchedulingConfiguration
		wantGang *int32 // nil: basic
	}{
		{"D-U1_explicit_minCount_kept", ptr.To[int32](5), ktGang(ptr.To[int32](2)), ptr.To[int32](2)},
		{"D-U1_explicit_minCount_kept_at_zero_replicas", ptr.To[int32](0), ktGang(ptr.To[int32](3)), ptr.To[int32](3)},
		{"D-U1_unset_minCount_is_replicas", ptr.To[int32](4), ktGang(nil), ptr.To[int32](4)},
		{"D-U1_unset_minCount_at_zero_replicas_is_1", ptr.To[int32](0), ktGang(nil), ptr.To[int32](1)},
		{"D-U1_unset_minCount_with_nil_replicas_is_1", nil, ktGang(nil), ptr.To[int32](1)},
		{"D-U1_basic_policy_stays_basic", ptr.To[int32](4), &intent.DeploymentSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{}}}, nil},
		{"D-U1_empty_scheduling_is_basic", ptr.To[int32](4), &intent.DeploymentSchedulingConfiguration{}, nil},
		{"D-U1_nil_intent_is_basic", ptr.To[int32](4), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ktDeployment(t, "prefill-workers", tc.replicas, nil)
			before := ktSnapshot(t, tc.cfg)
			w, err := BuildWorkload(d, tc.cfg)
			if err != nil {
				t.Fatalf("BuildWorkload: %v", err)
			}
			if len(w.Spec.PodGroupTemplates) != 1 {
				t.Fatalf("podGroupTemplates = %+v, want one", w.Spec.PodGroupTemplates)
			}
			p := w.Spec.PodGroupTemplates[0].SchedulingPolicy
			if tc.wantGang == nil {
				if p.Basic == nil || p.Gang != nil {
					t.Errorf("schedulingPolicy = %+v, want basic", p)
				}
				if TemplateMinCount(w) != nil {
					t.Errorf("TemplateMinCount = %v, want nil for basic", *TemplateMinCount(w))
				}
			} else {
				if p.Gang == nil || p.Basic != nil {
					t.Fatalf("schedulingPolicy = %+v, want gang", p)
				}
				if p.Gang.MinCount != *tc.wantGang || p.Gang.MinCount < 1 {
					t.Errorf("gang.minCount = %d, want %d (positive)", p.Gang.MinCount, *tc.wantGang)
				}
				if got := ResolvedMinCount(tc.cfg, ptr.Deref(tc.replicas, 1)); got != *tc.wantGang {
					t.Errorf("ResolvedMinCount = %d, want %d", got, *tc.wantGang)
				}
			}
			// The user's intent is never written back (no derived minCount).
			if after := ktSnapshot(t, tc.cfg); after != before {
				t.Errorf("BuildWorkload mutated the intent:\n got %s\nwant %s", after, before)
			}
		})
	}

	t.Run("D-U1_intent_and_deployment_not_mutated", func(t *testing.T) {
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
		dBefore := d.DeepCopy()
		cfg, err := intent.FromAnnotations(d.Annotations)
		if err != nil || cfg == nil {
			t.Fatalf("FromAnnotations = %v, %v", cfg, err)
		}
		cfgBefore := ktSnapshot(t, cfg)
		for range 2 {
			if _, err := BuildWorkload(d, cfg); err != nil {
				t.Fatal(err)
			}
		}
		if cfg.SchedulingPolicy.Gang.MinCount != nil {
			t.Errorf("derived minCount %d written back into the intent", *cfg.SchedulingPolicy.Gang.MinCount)
		}
		if after := ktSnapshot(t, cfg); after != cfgBefore {
			t.Errorf("intent mutated: %s, was %s", after, cfgBefore)
		}
		if !equality.Semantic.DeepEqual(d, dBefore) {
			t.Errorf("deployment mutated")
		}
		// The annotation still round-trips to an intent without minCount.
		again, _ := intent.FromAnnotations(d.Annotations)
		if again.SchedulingPolicy.Gang.MinCount != nil {
			t.Errorf("annotation gained a minCount")
		}
	})

	t.Run("D-U1_deterministic", func(t *testing.T) {
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), nil)
		a, err1 := BuildWorkload(d, ktFullIntent())
		b, err2 := BuildWorkload(d.DeepCopy(), ktFullIntent())
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !equality.Semantic.DeepEqual(a, b) {
			t.Errorf("two compilations of the same Deployment differ:\n%+v\n%+v", a, b)
		}
	})
}

// TestKEP6276Names covers the deterministic names (D-U5: recovery relies on them).
func TestKEP6276Names(t *testing.T) {
	letters := func(n int) string { return strings.Repeat("a", n) }
	dotted := func(n int) string {
		// "abcdefghi.abcdefghi...." of length n, a valid DNS subdomain.
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			if i%10 == 9 && b.Len() < n-1 {
				b.WriteByte('.')
			} else {
				b.WriteByte(byte('b' + i%10))
			}
		}
		return b.String()
	}
	deployment := func(name string, uid types.UID) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ktNS, UID: uid}}
	}
	mustSubdomain := func(t *testing.T, what, s string) {
		t.Helper()
		if errs := validation.IsDNS1123Subdomain(s); len(errs) != 0 {
			t.Errorf("%s %q (len %d) is not a DNS subdomain: %v", what, s, len(s), errs)
		}
	}
	mustLabel := func(t *testing.T, what, s string) {
		t.Helper()
		if errs := validation.IsDNS1123Label(s); len(errs) != 0 {
			t.Errorf("%s %q (len %d) is not a DNS label: %v", what, s, len(s), errs)
		}
		if strings.Contains(s, ".") || len(s) > validation.DNS1123LabelMaxLength {
			t.Errorf("%s %q (len %d) has dots or exceeds 63", what, s, len(s))
		}
	}

	t.Run("D-U5_workload_name_is_deployment_dash_hash", func(t *testing.T) {
		d := deployment("inference-server", "0f3c1a52-6d0e-4a8e-9d0c-5b5d1f0e7a11")
		n := WorkloadName(d)
		if !strings.HasPrefix(n, "inference-server-") || len(n) <= len("inference-server-") {
			t.Errorf("WorkloadName = %q, want inference-server-<hash>", n)
		}
		mustSubdomain(t, "WorkloadName", n)
		if n != WorkloadName(d.DeepCopy()) {
			t.Errorf("WorkloadName is not stable")
		}
		if strings.Contains(strings.TrimPrefix(n, "inference-server-"), "-") {
			t.Errorf("hash part of %q contains a dash", n)
		}
	})

	for i, name := range []string{letters(253), dotted(253), letters(250) + ".bb", "a." + letters(251)} {
		t.Run(fmt.Sprintf("D-U5_workload_name_of_253_char_deployment_%d", i), func(t *testing.T) {
			mustSubdomain(t, "test input", name)
			d := deployment(name, "5e7c7c0e-8a51-4cf8-a0b0-6f0c0d3e2a77")
			n := WorkloadName(d)
			if len(n) > validation.DNS1123SubdomainMaxLength {
				t.Errorf("WorkloadName length %d > 253", len(n))
			}
			mustSubdomain(t, "WorkloadName", n)
			hash := n[strings.LastIndex(n, "-")+1:]
			if !strings.HasSuffix(n, "-"+hash) || hash == "" || !strings.HasPrefix(name, strings.TrimSuffix(n, "-"+hash)[:200]) {
				t.Errorf("WorkloadName %q does not keep <truncated name>-<hash>", n)
			}
		})
	}

	// A valid 253-character name whose truncation point, for this UID, falls
	// right after a dot: <...>.-<hash> is not a DNS subdomain.
	t.Run("D-U5_workload_name_valid_when_truncated_right_after_a_dot", func(t *testing.T) {
		d := deployment("", "5e7c7c0e-8a51-4cf8-a0b0-6f0c0d3e2a77")
		room := validation.DNS1123SubdomainMaxLength - len(uidHash(d)) - 1
		d.Name = letters(room-1) + "." + letters(validation.DNS1123SubdomainMaxLength-room)
		mustSubdomain(t, "test input", d.Name)
		if len(d.Name) != 253 {
			t.Fatalf("test input has length %d", len(d.Name))
		}
		n := WorkloadName(d)
		if len(n) > validation.DNS1123SubdomainMaxLength {
			t.Errorf("WorkloadName length %d > 253", len(n))
		}
		mustSubdomain(t, "WorkloadName", n)
	})

	for _, n := range []int{1, 56, 57, 58, 63, 64, 200, 253} {
		for kind, name := range map[string]string{"letters": letters(n), "dotted": dotted(n)} {
			t.Run(fmt.Sprintf("D-U5_template_name_is_a_DNS_label_len%d_%s", n, kind), func(t *testing.T) {
				for _, uid := range []types.UID{"u", "5e7c7c0e-8a51-4cf8-a0b0-6f0c0d3e2a77", "0f3c1a52-6d0e-4a8e-9d0c-5b5d1f0e7a11"} {
					d := deployment(name, uid)
					tn := TemplateName(d)
					mustLabel(t, "TemplateName", tn)
					if tn != TemplateName(d.DeepCopy()) {
						t.Errorf("TemplateName not stable")
					}
					// It is also a valid PodGroup workloadRef.templateName and
					// does not depend on the namespace.
					d2 := d.DeepCopy()
					d2.Namespace = "other"
					if TemplateName(d2) != tn {
						t.Errorf("TemplateName depends on the namespace")
					}
				}
			})
		}
	}

	t.Run("D-U5_template_name_of_dotted_name", func(t *testing.T) {
		d := deployment("api.v2.example", "u-1")
		tn := TemplateName(d)
		mustLabel(t, "TemplateName", tn)
		if !strings.HasPrefix(tn, "api-v2-example-") {
			t.Errorf("TemplateName = %q, want api-v2-example-<hash>", tn)
		}
	})

	t.Run("D-U5_same_name_different_uid_different_names", func(t *testing.T) {
		for _, name := range []string{"inference-server", letters(253), dotted(200)} {
			a := deployment(name, "11111111-1111-1111-1111-111111111111")
			b := deployment(name, "22222222-2222-2222-2222-222222222222")
			if WorkloadName(a) == WorkloadName(b) {
				t.Errorf("two Deployments named %q with different UIDs share Workload %q", ktShort(name), WorkloadName(a))
			}
			if TemplateName(a) == TemplateName(b) {
				t.Errorf("two Deployments named %q with different UIDs share template %q", ktShort(name), TemplateName(a))
			}
		}
	})

	// PodGroupName must equal the ReplicaSet's name, which the upstream
	// Deployment controller computes with generateReplicaSetName.
	upstreamRSName := func(deploymentName, hash string) string {
		max := validation.DNS1123SubdomainMaxLength - len("-") - len(hash)
		if len(deploymentName) > max && max > 0 {
			return deploymentName[:max] + "-" + hash
		}
		return deploymentName + "-" + hash
	}
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	hashes := []string{controller.ComputeHash(tmpl, nil), controller.ComputeHash(tmpl, ptr.To[int32](3)), "5d8f9c7b6", "x"}
	for _, name := range []string{"inference-server", letters(241), letters(242), letters(243), letters(244), letters(253), dotted(253)} {
		for _, hash := range hashes {
			t.Run(fmt.Sprintf("D-U5_podgroup_name_equals_replicaset_name_len%d_hash%d", len(name), len(hash)), func(t *testing.T) {
				got := PodGroupName(name, hash)
				if want := upstreamRSName(name, hash); got != want {
					t.Errorf("PodGroupName(%s, %s) = %q, want the ReplicaSet name %q", ktShort(name), hash, got, want)
				}
				if len(got) > validation.DNS1123SubdomainMaxLength {
					t.Errorf("length %d > 253", len(got))
				}
				if !strings.HasSuffix(got, "-"+hash) {
					t.Errorf("%q does not end with -%s", got, hash)
				}
				if prefix := strings.TrimSuffix(got, "-"+hash); !strings.HasPrefix(name, prefix) {
					t.Errorf("%q is not a prefix of the Deployment name", prefix)
				}
				if len(name)+1+len(hash) <= validation.DNS1123SubdomainMaxLength && got != name+"-"+hash {
					t.Errorf("short name truncated: %q", got)
				}
			})
		}
	}
}

// ktSnapshot renders an intent by value, to detect writes through its pointers.
func ktSnapshot(t *testing.T, cfg *intent.DeploymentSchedulingConfiguration) string {
	t.Helper()
	if cfg == nil {
		return "<nil>"
	}
	s, err := intent.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
