package builder

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const ns = "ns"

// wantEqual fails the test with a diff when got and want differ. cmp uses
// resource.Quantity's Equal method, so quantities compare by value.
func wantEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func owner(name string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "apps/v1",
		Kind:       "Deployment",
		Name:       name,
		UID:        types.UID("uid-" + name),
		Controller: ptr.To(true),
	}
}

func wantDefaultSpec() corev1.PodSpec {
	return corev1.PodSpec{
		Containers:                    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptr.To[int64](0),
	}
}

func TestPodDefaults(t *testing.T) {
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec:       wantDefaultSpec(),
	}
	wantEqual(t, "pod", Pod("p", ns).Obj(), want)
}

func TestPodOptions(t *testing.T) {
	tol := corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	got := Pod("p", ns).
		Label("a", "1").
		Annotation("b", "2").
		Request(corev1.ResourceCPU, "100m").
		Request("memory", "64Mi").
		SchedulingGroup("pg").
		NodeSelector("zone", "z1").
		PriorityClass("high").
		Toleration(tol).
		OwnerReference(owner("o")).
		ResourceClaim("gpu", "", "gpu-tmpl").
		ResourceClaim("shared", "shared-claim", "").
		Obj()

	spec := wantDefaultSpec()
	spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		},
		Claims: []corev1.ResourceClaim{{Name: "gpu"}, {Name: "shared"}},
	}
	spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("pg")}
	spec.NodeSelector = map[string]string{"zone": "z1"}
	spec.PriorityClassName = "high"
	spec.Tolerations = []corev1.Toleration{tol}
	spec.ResourceClaims = []corev1.PodResourceClaim{
		{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-tmpl")},
		{Name: "shared", ResourceClaimName: ptr.To("shared-claim")},
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "p",
			Namespace:       ns,
			Labels:          map[string]string{"a": "1"},
			Annotations:     map[string]string{"b": "2"},
			OwnerReferences: []metav1.OwnerReference{owner("o")},
		},
		Spec: spec,
	}
	wantEqual(t, "pod", got, want)
}

func TestPodRequestInvalidQuantityPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Request with an invalid quantity did not panic")
		}
	}()
	Pod("p", ns).Request(corev1.ResourceCPU, "lots")
}

func wantAppTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       wantDefaultSpec(),
	}
}

func TestDeploymentDefaults(t *testing.T) {
	want := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: wantAppTemplate("d"),
		},
	}
	wantEqual(t, "deployment", Deployment("d", ns).Obj(), want)
}

func TestDeploymentOptions(t *testing.T) {
	got := Deployment("d", ns).
		Label("a", "1").
		Annotation("b", "2").
		OwnerReference(owner("o")).
		Replicas(3).
		ProgressDeadlineSeconds(30).
		RollingUpdate(intstr.FromInt32(1), intstr.FromString("25%")).
		Request(corev1.ResourceCPU, "1").
		SchedulingGroup("pg").
		PodTemplate(func(p *PodWrapper) {
			p.Label("tier", "x").Annotation("t", "y").NodeSelector("zone", "z1").PriorityClass("high")
		}).
		Obj()

	tmpl := wantAppTemplate("d")
	tmpl.Labels["tier"] = "x"
	tmpl.Annotations = map[string]string{"t": "y"}
	tmpl.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}
	tmpl.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("pg")}
	tmpl.Spec.NodeSelector = map[string]string{"zone": "z1"}
	tmpl.Spec.PriorityClassName = "high"
	want := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "d",
			Namespace:       ns,
			Labels:          map[string]string{"a": "1"},
			Annotations:     map[string]string{"b": "2"},
			OwnerReferences: []metav1.OwnerReference{owner("o")},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas:                ptr.To[int32](3),
			ProgressDeadlineSeconds: ptr.To[int32](30),
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
					MaxUnavailable: ptr.To(intstr.FromString("25%")),
				},
			},
			Template: tmpl,
		},
	}
	wantEqual(t, "deployment", got, want)
}

func TestDeploymentRecreateClearsRollingUpdate(t *testing.T) {
	got := Deployment("d", ns).RollingUpdate(intstr.FromInt32(1), intstr.FromInt32(0)).Recreate().Obj()
	wantEqual(t, "strategy", got.Spec.Strategy, appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType})
}

func TestStatefulSetDefaults(t *testing.T) {
	want := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: "s",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "s"}},
			Template:    wantAppTemplate("s"),
		},
	}
	wantEqual(t, "statefulset", StatefulSet("s", ns).Obj(), want)
}

func TestStatefulSetOptions(t *testing.T) {
	got := StatefulSet("s", ns).
		Label("a", "1").
		Annotation("b", "2").
		OwnerReference(owner("o")).
		Replicas(4).
		Parallel().
		Partition(2).
		Request(corev1.ResourceMemory, "1Gi").
		SchedulingGroup("pg").
		PodTemplate(func(p *PodWrapper) { p.ResourceClaim("gpu", "", "gpu-tmpl") }).
		Obj()

	tmpl := wantAppTemplate("s")
	tmpl.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		Claims:   []corev1.ResourceClaim{{Name: "gpu"}},
	}
	tmpl.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("pg")}
	tmpl.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-tmpl")}}
	want := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "s",
			Namespace:       ns,
			Labels:          map[string]string{"a": "1"},
			Annotations:     map[string]string{"b": "2"},
			OwnerReferences: []metav1.OwnerReference{owner("o")},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](4),
			ServiceName:         "s",
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "s"}},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)},
			},
			Template: tmpl,
		},
	}
	wantEqual(t, "statefulset", got, want)
}

func TestStatefulSetOrderedReadyAndPartitionKeepsMaxUnavailable(t *testing.T) {
	s := StatefulSet("s", ns).Parallel().OrderedReady()
	mu := intstr.FromInt32(2)
	s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: &mu}
	got := s.Partition(1).Obj()
	if got.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement {
		t.Errorf("podManagementPolicy = %q, want OrderedReady", got.Spec.PodManagementPolicy)
	}
	wantEqual(t, "updateStrategy", got.Spec.UpdateStrategy, appsv1.StatefulSetUpdateStrategy{
		Type:          appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1), MaxUnavailable: &mu},
	})
}

func TestPodTemplateOptionsMatchPodOptions(t *testing.T) {
	apply := func(p *PodWrapper) {
		p.Label("x", "y").Request(corev1.ResourceCPU, "2").SchedulingGroup("pg").
			ResourceClaim("c", "claim", "").Toleration(corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
	}
	pod := Pod("d", ns).Label("app", "d")
	apply(pod)
	dep := Deployment("d", ns).PodTemplate(apply).Obj()
	sts := StatefulSet("d", ns).PodTemplate(apply).Obj()
	wantEqual(t, "deployment template spec", dep.Spec.Template.Spec, pod.Spec)
	wantEqual(t, "statefulset template spec", sts.Spec.Template.Spec, pod.Spec)
	wantEqual(t, "deployment template labels", dep.Spec.Template.Labels, pod.Labels)
	wantEqual(t, "statefulset template labels", sts.Spec.Template.Labels, pod.Labels)
	if dep.Spec.Template.Name != "" || dep.Spec.Template.Namespace != "" {
		t.Errorf("template metadata got a name/namespace: %q/%q", dep.Spec.Template.Namespace, dep.Spec.Template.Name)
	}
}

func TestPodGroupTemplateDefaults(t *testing.T) {
	want := schedulingv1beta1.PodGroupTemplate{
		Name:             "t",
		SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}},
	}
	wantEqual(t, "template", PodGroupTemplate("t").Obj(), want)
}

func TestPodGroupTemplateOptions(t *testing.T) {
	got := PodGroupTemplate("t").
		Gang(3).
		Topology("topology.kubernetes.io/rack").
		DisruptionAll().
		ResourceClaim("gpu", "", "gpu-tmpl").
		ResourceClaim("shared", "shared-claim", "").
		PriorityClass("high").
		Obj()
	want := schedulingv1beta1.PodGroupTemplate{
		Name:             "t",
		SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 3}},
		SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{
			Topology: []schedulingv1beta1.TopologyConstraint{{Key: "topology.kubernetes.io/rack"}},
		},
		DisruptionMode: &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}},
		ResourceClaims: []schedulingv1beta1.PodGroupResourceClaim{
			{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-tmpl")},
			{Name: "shared", ResourceClaimName: ptr.To("shared-claim")},
		},
		PriorityClassName: "high",
	}
	wantEqual(t, "template", got, want)

	// Policy and disruption mode are unions: setting one member clears the other.
	got = PodGroupTemplate("t").Gang(3).Basic().DisruptionAll().DisruptionSingle().Obj()
	wantEqual(t, "policy", got.SchedulingPolicy, schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}})
	wantEqual(t, "disruption", got.DisruptionMode, &schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}})

	// Topology appends, so negative tests can build more than the API allows.
	got = PodGroupTemplate("t").Topology("a").Topology("b").Obj()
	wantEqual(t, "topology", got.SchedulingConstraints.Topology, []schedulingv1beta1.TopologyConstraint{{Key: "a"}, {Key: "b"}})
}

func TestWorkloadDefaults(t *testing.T) {
	want := &schedulingv1beta1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns}}
	wantEqual(t, "workload", Workload("w", ns).Obj(), want)
}

func TestWorkloadOptions(t *testing.T) {
	workers := PodGroupTemplate("workers").Gang(4)
	got := Workload("w", ns).
		Label("a", "1").
		Annotation("b", "2").
		OwnerReference(owner("o")).
		ControllerRef("apps", "Deployment", "d").
		PodGroupTemplate(PodGroupTemplate("driver")).
		PodGroupTemplate(workers).
		Obj()
	want := &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "w",
			Namespace:       ns,
			Labels:          map[string]string{"a": "1"},
			Annotations:     map[string]string{"b": "2"},
			OwnerReferences: []metav1.OwnerReference{owner("o")},
		},
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{APIGroup: "apps", Kind: "Deployment", Name: "d"},
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{
				{Name: "driver", SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}},
				{Name: "workers", SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}}},
			},
		},
	}
	wantEqual(t, "workload", got, want)

	// The Workload holds a copy of the template, not the wrapper's object.
	workers.Gang(9)
	if n := got.Spec.PodGroupTemplates[1].SchedulingPolicy.Gang.MinCount; n != 4 {
		t.Errorf("changing the template wrapper changed the Workload: minCount = %d, want 4", n)
	}
}

func TestPodGroupDefaults(t *testing.T) {
	want := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: ns},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}},
		},
	}
	wantEqual(t, "podgroup", PodGroup("g", ns).Obj(), want)
}

func TestPodGroupOptions(t *testing.T) {
	got := PodGroup("g", ns).
		Label("a", "1").
		Annotation("b", "2").
		OwnerReference(owner("o")).
		WorkloadRef("w", "workers").
		Gang(2).
		Topology("topology.kubernetes.io/rack").
		DisruptionAll().
		ResourceClaim("gpu", "", "gpu-tmpl").
		PriorityClass("high").
		Obj()
	want := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "g",
			Namespace:       ns,
			Labels:          map[string]string{"a": "1"},
			Annotations:     map[string]string{"b": "2"},
			OwnerReferences: []metav1.OwnerReference{owner("o")},
		},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:      &schedulingv1beta1.WorkloadReference{WorkloadName: "w", TemplateName: "workers"},
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}},
			SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{
				Topology: []schedulingv1beta1.TopologyConstraint{{Key: "topology.kubernetes.io/rack"}},
			},
			DisruptionMode:    &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}},
			ResourceClaims:    []schedulingv1beta1.PodGroupResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-tmpl")}},
			PriorityClassName: "high",
		},
	}
	wantEqual(t, "podgroup", got, want)

	got = PodGroup("g", ns).Gang(2).Basic().DisruptionAll().DisruptionSingle().Obj()
	wantEqual(t, "policy", got.Spec.SchedulingPolicy, schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}})
	wantEqual(t, "disruption", got.Spec.DisruptionMode, &schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}})
}

func TestWrapPodGroupCopies(t *testing.T) {
	orig := PodGroup("g", "ns").Gang(2).Obj()
	got := WrapPodGroup(orig).Gang(5).Label("a", "b").Obj()
	if orig.Spec.SchedulingPolicy.Gang.MinCount != 2 || len(orig.Labels) != 0 {
		t.Errorf("WrapPodGroup modified its input: %+v", orig)
	}
	if got.Spec.SchedulingPolicy.Gang.MinCount != 5 || got.Labels["a"] != "b" {
		t.Errorf("options did not apply to the wrapped PodGroup: %+v", got)
	}
}

func TestObjReturnsIndependentCopies(t *testing.T) {
	t.Run("Pod", func(t *testing.T) {
		w := Pod("p", ns).Label("a", "1").Request(corev1.ResourceCPU, "1").SchedulingGroup("pg").ResourceClaim("c", "x", "")
		a := w.Obj()
		a.Labels["a"] = "changed"
		a.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("9")
		*a.Spec.SchedulingGroup.PodGroupName = "changed"
		*a.Spec.ResourceClaims[0].ResourceClaimName = "changed"
		*a.Spec.TerminationGracePeriodSeconds = 30
		b := w.Obj()
		if b.Labels["a"] != "1" || b.Spec.Containers[0].Resources.Requests.Cpu().String() != "1" ||
			*b.Spec.SchedulingGroup.PodGroupName != "pg" || *b.Spec.ResourceClaims[0].ResourceClaimName != "x" ||
			*b.Spec.TerminationGracePeriodSeconds != 0 {
			t.Errorf("mutating one Obj() result leaked into the next: %+v", b)
		}
		w.Label("a", "later")
		if a.Labels["a"] != "changed" {
			t.Errorf("a later option changed an earlier Obj() result")
		}
	})
	t.Run("Deployment", func(t *testing.T) {
		w := Deployment("d", ns).Request(corev1.ResourceCPU, "1")
		a := w.Obj()
		*a.Spec.Replicas = 5
		a.Spec.Selector.MatchLabels["app"] = "changed"
		a.Spec.Template.Labels["app"] = "changed"
		a.Spec.Template.Spec.Containers[0].Image = "changed"
		wantEqual(t, "deployment", w.Obj(), Deployment("d", ns).Request(corev1.ResourceCPU, "1").Obj())
	})
	t.Run("StatefulSet", func(t *testing.T) {
		w := StatefulSet("s", ns).Partition(1)
		a := w.Obj()
		*a.Spec.Replicas = 5
		*a.Spec.UpdateStrategy.RollingUpdate.Partition = 4
		a.Spec.Template.Labels["app"] = "changed"
		wantEqual(t, "statefulset", w.Obj(), StatefulSet("s", ns).Partition(1).Obj())
	})
	t.Run("Workload", func(t *testing.T) {
		w := Workload("w", ns).ControllerRef("apps", "Deployment", "d").PodGroupTemplate(PodGroupTemplate("t").Gang(2))
		a := w.Obj()
		a.Spec.ControllerRef.Name = "changed"
		a.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = 9
		wantEqual(t, "workload", w.Obj(),
			Workload("w", ns).ControllerRef("apps", "Deployment", "d").PodGroupTemplate(PodGroupTemplate("t").Gang(2)).Obj())
	})
	t.Run("PodGroupTemplate", func(t *testing.T) {
		w := PodGroupTemplate("t").Gang(2).Topology("k").ResourceClaim("c", "", "ct")
		a := w.Obj()
		a.SchedulingPolicy.Gang.MinCount = 9
		a.SchedulingConstraints.Topology[0].Key = "changed"
		*a.ResourceClaims[0].ResourceClaimTemplateName = "changed"
		wantEqual(t, "template", w.Obj(), PodGroupTemplate("t").Gang(2).Topology("k").ResourceClaim("c", "", "ct").Obj())
	})
	t.Run("PodGroup", func(t *testing.T) {
		w := PodGroup("g", ns).Gang(2).WorkloadRef("w", "t").DisruptionAll()
		a := w.Obj()
		a.Spec.SchedulingPolicy.Gang.MinCount = 9
		a.Spec.WorkloadRef.TemplateName = "changed"
		a.Spec.DisruptionMode.All = nil
		wantEqual(t, "podgroup", w.Obj(), PodGroup("g", ns).Gang(2).WorkloadRef("w", "t").DisruptionAll().Obj())
	})
}

// TestSchedulingJSONShape checks the wire form of the union members, which is
// what the API server sees: an empty struct member must serialise as {}.
func TestSchedulingJSONShape(t *testing.T) {
	pg := PodGroup("g", ns).Gang(2).WorkloadRef("w", "t").DisruptionAll().Topology("k").Obj()
	b, err := json.Marshal(pg.Spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"workloadRef":{"workloadName":"w","templateName":"t"}`,
		`"schedulingPolicy":{"gang":{"minCount":2}}`,
		`"schedulingConstraints":{"topology":[{"key":"k"}]}`,
		`"disruptionMode":{"all":{}}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("PodGroup spec JSON %s lacks %s", b, want)
		}
	}
	wl := Workload("w", ns).PodGroupTemplate(PodGroupTemplate("t")).Obj()
	b, err = json.Marshal(wl.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"schedulingPolicy":{"basic":{}}`; !strings.Contains(string(b), want) {
		t.Errorf("Workload spec JSON %s lacks %s", b, want)
	}
}

// A volumeClaimTemplate binds only to a static PV (storageClassName "", not
// nil: a default StorageClass must not provision it) and is mounted.
func TestStatefulSetVolumeClaimTemplate(t *testing.T) {
	s := StatefulSet("s", ns).VolumeClaimTemplate("data", "1Mi").Obj()
	want := []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
		},
	}}
	wantEqual(t, "volumeClaimTemplates", s.Spec.VolumeClaimTemplates, want)
	wantEqual(t, "volumeMounts", s.Spec.Template.Spec.Containers[0].VolumeMounts, []corev1.VolumeMount{{Name: "data", MountPath: "/data"}})
}
