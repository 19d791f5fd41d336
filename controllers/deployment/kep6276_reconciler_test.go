package deployment

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubernetes/pkg/controller"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/events"
	"github.com/workload-aware/apps-harness/controllers/internal/fakeapi"
)

// ktGangSetup is a gang Deployment (full intent, replicas 4) in the lister,
// its Workload in the API and the informer, and a ReplicaSet of it with 3
// replicas: the template minCount (4) differs from the ReplicaSet's size.
// ktCachedPodGroup gets or creates rs's PodGroup and waits until the
// informer cache holds it, as most cases start.
func ktCachedPodGroup(t *testing.T, e *ktEnv, rs *appsv1.ReplicaSet) *schedulingv1beta1.PodGroup {
	t.Helper()
	pg, err := e.r.EnsurePodGroup(e.Ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	e.WaitPodGroupCached(pg.Name, pg.ResourceVersion)
	return pg
}

func ktGangSetup(t *testing.T, e *ktEnv) (*appsv1.Deployment, *schedulingv1beta1.Workload, *appsv1.ReplicaSet) {
	t.Helper()
	d := ktDeployment(t, "inference-server", ptr.To[int32](4), ktFullIntent())
	e.storeDeployment(d)
	w := e.ensureWorkloadCached(d)
	return d, w, e.replicaSet(d, "5d8f9c7b6", 3)
}

// TestKEP6276EnsurePodGroup covers D-U2: the ReplicaSet-owned PodGroup.
func TestKEP6276EnsurePodGroup(t *testing.T) {
	t.Run("D-U2_podgroup_from_the_workload_template", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d, w, rs := ktGangSetup(t, e)
		e.Client.ClearActions()

		pg, err := e.r.EnsurePodGroup(e.Ctx, rs)
		if err != nil || pg == nil {
			t.Fatalf("EnsurePodGroup = %v, %v", pg, err)
		}
		if got := e.Writes(); !reflect.DeepEqual(got, []string{"create podgroups"}) {
			t.Errorf("writes = %v, want one PodGroup create", got)
		}
		stored := e.GetPodGroup(PodGroupName(d.Name, "5d8f9c7b6"))
		for _, got := range []*schedulingv1beta1.PodGroup{pg, stored} {
			if got.Name != rs.Name || got.Name != PodGroupName(d.Name, "5d8f9c7b6") || got.Namespace != ktNS {
				t.Errorf("podgroup %s/%s, want %s/%s", got.Namespace, got.Name, ktNS, PodGroupName(d.Name, "5d8f9c7b6"))
			}
			wantRef := &schedulingv1beta1.WorkloadReference{WorkloadName: WorkloadName(d), TemplateName: TemplateName(d)}
			if !equality.Semantic.DeepEqual(got.Spec.WorkloadRef, wantRef) {
				t.Errorf("workloadRef = %+v, want %+v", got.Spec.WorkloadRef, wantRef)
			}
			tmpl := w.Spec.PodGroupTemplates[0]
			if g := got.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 || got.Spec.SchedulingPolicy.Basic != nil {
				t.Errorf("schedulingPolicy = %+v, want gang minCount 4 (the template's, not the ReplicaSet's 3)", got.Spec.SchedulingPolicy)
			}
			if !equality.Semantic.DeepEqual(got.Spec.SchedulingConstraints, tmpl.SchedulingConstraints) {
				t.Errorf("schedulingConstraints = %+v, want %+v", got.Spec.SchedulingConstraints, tmpl.SchedulingConstraints)
			}
			if !equality.Semantic.DeepEqual(got.Spec.DisruptionMode, tmpl.DisruptionMode) || got.Spec.DisruptionMode == nil || got.Spec.DisruptionMode.All == nil {
				t.Errorf("disruptionMode = %+v, want all", got.Spec.DisruptionMode)
			}
			if !equality.Semantic.DeepEqual(got.Spec.ResourceClaims, tmpl.ResourceClaims) || len(got.Spec.ResourceClaims) != 2 {
				t.Errorf("resourceClaims = %+v, want the template's %+v", got.Spec.ResourceClaims, tmpl.ResourceClaims)
			}
			if len(got.OwnerReferences) != 2 {
				t.Fatalf("ownerReferences = %+v, want the ReplicaSet and the Workload", got.OwnerReferences)
			}
			c := got.OwnerReferences[0]
			if c.APIVersion != "apps/v1" || c.Kind != "ReplicaSet" || c.Name != rs.Name || c.UID != rs.UID || !ptr.Deref(c.Controller, false) {
				t.Errorf("controller ownerReference = %+v, want apps/v1 ReplicaSet %s", c, rs.Name)
			}
			o := got.OwnerReferences[1]
			if o.APIVersion != "scheduling.k8s.io/v1beta1" || o.Kind != "Workload" || o.Name != w.Name || o.UID != w.UID || w.UID == "" || ptr.Deref(o.Controller, false) {
				t.Errorf("workload ownerReference = %+v, want non-controller scheduling.k8s.io/v1beta1 Workload %s uid %s", o, w.Name, w.UID)
			}
			if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != rs.UID {
				t.Errorf("controller of the PodGroup = %+v, want the ReplicaSet", ref)
			}
		}
		if !fakeapi.HasEvent(e.Events(), "Normal "+events.PodGroupCreated) {
			t.Errorf("no %s event", events.PodGroupCreated)
		}
	})

	t.Run("D-U2_claims_left_off_with_DRAWorkloadResourceClaims_off", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{claimsOff: true})
		d, w, rs := ktGangSetup(t, e)
		if len(w.Spec.PodGroupTemplates[0].ResourceClaims) != 2 {
			t.Fatalf("the Workload template keeps the claims whatever the gate: %+v", w.Spec.PodGroupTemplates[0].ResourceClaims)
		}
		pg, err := e.r.EnsurePodGroup(e.Ctx, rs)
		if err != nil || pg == nil {
			t.Fatalf("EnsurePodGroup = %v, %v", pg, err)
		}
		if stored := e.GetPodGroup(PodGroupName(d.Name, "5d8f9c7b6")); len(stored.Spec.ResourceClaims) != 0 || len(pg.Spec.ResourceClaims) != 0 {
			t.Errorf("resourceClaims = %+v, want none with DRAWorkloadResourceClaims off", stored.Spec.ResourceClaims)
		}
		if pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 4 {
			t.Errorf("rest of the PodGroup lost: %+v", pg.Spec)
		}
	})

	t.Run("D-U2_pod_control_creates_podgroup_before_pods", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		e.Client.ClearActions()
		inner := &ktPodControl{client: e.Client}
		pc := e.r.PodControl(inner)
		before := rs.DeepCopy()
		template := &rs.Spec.Template

		if err := pc.CreatePods(e.Ctx, ktNS, template, rs, ktRSControllerRef(rs)); err != nil {
			t.Fatalf("CreatePods: %v", err)
		}
		if err := pc.CreatePodsWithGenerateName(e.Ctx, ktNS, template, rs, ktRSControllerRef(rs), rs.Name+"-"); err != nil {
			t.Fatalf("CreatePodsWithGenerateName: %v", err)
		}
		if inner.calls != 2 {
			t.Fatalf("inner pod control called %d times, want 2", inner.calls)
		}
		// At the first call the PodGroup had been created, and only once.
		if got := inner.writesAtCall[0]; !reflect.DeepEqual(got, []string{"create podgroups"}) {
			t.Errorf("writes when the first pod was created = %v, want the PodGroup create before it", got)
		}
		if got := inner.writesAtCall[1]; !reflect.DeepEqual(got, []string{"create podgroups"}) {
			t.Errorf("writes when the second pod was created = %v, want no second PodGroup write", got)
		}
		for i, got := range inner.templates {
			if got == template {
				t.Errorf("call %d: the caller's template was passed on, want a copy", i)
			}
			if sg := got.Spec.SchedulingGroup; sg == nil || ptr.Deref(sg.PodGroupName, "") != rs.Name {
				t.Errorf("call %d: schedulingGroup = %+v, want podGroupName %s", i, sg, rs.Name)
			}
			// Apart from the schedulingGroup, the pod is the ReplicaSet's template.
			cp := got.DeepCopy()
			cp.Spec.SchedulingGroup = nil
			cp.GenerateName = ""
			if !equality.Semantic.DeepEqual(cp, &before.Spec.Template) {
				t.Errorf("call %d: template changed beyond schedulingGroup:\n%+v", i, cp)
			}
		}
		if inner.generateNames[1] != rs.Name+"-" || inner.controllerRefs[0].UID != rs.UID {
			t.Errorf("arguments not passed through: generateName %q, controllerRef %+v", inner.generateNames[1], inner.controllerRefs[0])
		}
		if !equality.Semantic.DeepEqual(rs, before) || rs.Spec.Template.Spec.SchedulingGroup != nil {
			t.Errorf("the ReplicaSet (its stored template) was modified")
		}
	})

	t.Run("D-U2_real_pod_control_pod_joins_podgroup_with_ownerReference", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		e.Client.ClearActions()
		pc := e.r.PodControl(controller.RealPodControl{
			KubeClient: e.r.ReplicaSetControllerClient(e.Client),
			Recorder:   record.NewFakeRecorder(10),
		})
		if err := pc.CreatePods(e.Ctx, ktNS, &rs.Spec.Template, rs, ktRSControllerRef(rs)); err != nil {
			t.Fatalf("CreatePods: %v", err)
		}
		if got := e.Writes(); !reflect.DeepEqual(got, []string{"create podgroups", "create pods"}) {
			t.Errorf("writes = %v, want the PodGroup then the pod", got)
		}
		pods, err := e.Client.CoreV1().Pods(ktNS).List(e.Ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("pods = %v, %v", pods, err)
		}
		pod := pods.Items[0]
		pg := e.GetPodGroup(rs.Name)
		if ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, "") != pg.Name {
			t.Errorf("pod schedulingGroup = %+v, want %s", pod.Spec.SchedulingGroup, pg.Name)
		}
		ktCheckPodOwners(t, &pod, rs, pg)
	})

	for _, n := range []int{0, 2} {
		t.Run(fmt.Sprintf("D-U2_workload_with_%d_templates_is_an_error", n), func(t *testing.T) {
			e := ktNewEnv(t, ktEnvOptions{})
			d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktGang(nil))
			e.storeDeployment(d)
			w, err := BuildWorkload(d, ktGang(nil))
			if err != nil {
				t.Fatal(err)
			}
			tmpls := []schedulingv1beta1.PodGroupTemplate{}
			for i := range n {
				tp := *w.Spec.PodGroupTemplates[0].DeepCopy()
				tp.Name = tp.Name + strings.Repeat("x", i)
				tmpls = append(tmpls, tp)
			}
			w.Spec.PodGroupTemplates = tmpls
			e.Seed(w)
			rs := e.replicaSet(d, "5d8f9c7b6", 3)
			e.Client.ClearActions()

			if pg, err := e.r.EnsurePodGroup(e.Ctx, rs); err == nil || pg != nil {
				t.Errorf("EnsurePodGroup with %d templates = %v, %v; want an error", n, pg, err)
			}
			inner := &ktPodControl{client: e.Client}
			if err := e.r.PodControl(inner).CreatePods(e.Ctx, ktNS, &rs.Spec.Template, rs, ktRSControllerRef(rs)); err == nil {
				t.Errorf("CreatePods succeeded with %d templates", n)
			}
			if inner.calls != 0 {
				t.Errorf("%d pods created", inner.calls)
			}
			if got := e.Writes(); len(got) != 0 {
				t.Errorf("writes = %v, want none", got)
			}
			if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.WorkloadCreationFailed+" Error building PodGroup") {
				t.Errorf("events = %v, want Warning %s about building the PodGroup", ev, events.WorkloadCreationFailed)
			}
		})
	}

	t.Run("D-U2_missing_workload_is_an_error_not_ungrouped_pods", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktGang(nil))
		e.storeDeployment(d)
		rs := e.replicaSet(d, "5d8f9c7b6", 3)
		inner := &ktPodControl{client: e.Client}
		if err := e.r.PodControl(inner).CreatePods(e.Ctx, ktNS, &rs.Spec.Template, rs, ktRSControllerRef(rs)); err == nil {
			t.Errorf("CreatePods succeeded without a Workload")
		}
		if inner.calls != 0 || e.Count("create", "podgroups") != 0 {
			t.Errorf("pods (%d) or PodGroups created without a Workload", inner.calls)
		}
	})

	t.Run("D-U2_hooked_pod_create_adds_podgroup_ownerReference", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		pg, err := e.r.EnsurePodGroup(e.Ctx, rs)
		if err != nil {
			t.Fatal(err)
		}
		pods := e.r.ReplicaSetControllerClient(e.Client).CoreV1().Pods(ktNS)
		pod := ktPod("p1", rs, &pg.Name)
		podBefore := pod.DeepCopy()
		created, err := pods.Create(e.Ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ktCheckPodOwners(t, created, rs, pg)
		stored, _ := e.Client.CoreV1().Pods(ktNS).Get(e.Ctx, "p1", metav1.GetOptions{})
		ktCheckPodOwners(t, stored, rs, pg)
		if !equality.Semantic.DeepEqual(pod, podBefore) {
			t.Errorf("the caller's pod was modified")
		}

		// Same once the informer has caught up with the PodGroup.
		e.WaitPodGroupCached(pg.Name, pg.ResourceVersion)
		created, err = pods.Create(e.Ctx, ktPod("p2", rs, &pg.Name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ktCheckPodOwners(t, created, rs, pg)
	})

	t.Run("D-U2_hooked_pod_create_leaves_bring_your_own_podgroup_alone", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		e.Client.ClearActions()
		other := ktReplicaSet(ktDeployment(t, "other", ptr.To[int32](1), nil), "aaaa", 1)
		byo := []*schedulingv1beta1.PodGroup{
			{ObjectMeta: metav1.ObjectMeta{Name: "byo-unowned", Namespace: ktNS}},
			{ObjectMeta: metav1.ObjectMeta{Name: "byo-other", Namespace: ktNS, OwnerReferences: []metav1.OwnerReference{*ktRSControllerRef(other)}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "byo-noncontroller", Namespace: ktNS, OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}}}},
		}
		pods := e.r.ReplicaSetControllerClient(e.Client).CoreV1().Pods(ktNS)
		for _, pg := range byo {
			pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
			e.Seed(pg)
			created, err := pods.Create(e.Ctx, ktPod("pod-"+pg.Name, rs, &pg.Name), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(created.OwnerReferences) != 1 {
				t.Errorf("pod in %s got ownerReferences %+v, want only its ReplicaSet", pg.Name, created.OwnerReferences)
			}
		}
		// No schedulingGroup, or one naming a PodGroup that does not exist.
		for i, name := range []*string{nil, ptr.To("missing")} {
			created, err := pods.Create(e.Ctx, ktPod("plain-"+string(rune('a'+i)), rs, name), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(created.OwnerReferences) != 1 {
				t.Errorf("pod got ownerReferences %+v, want only its ReplicaSet", created.OwnerReferences)
			}
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none", got)
		}
	})

	t.Run("D-U2_existing_podgroup_minCount_follows_the_template", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d, _, rs := ktGangSetup(t, e)
		pg := ktCachedPodGroup(t, e, rs)
		// Scale the Deployment: its Workload template goes to 6.
		d = d.DeepCopy()
		d.Spec.Replicas = ptr.To[int32](6)
		e.storeDeployment(d)
		e.ensureWorkloadCached(d)
		e.Client.ClearActions()
		got, err := e.r.EnsurePodGroup(e.Ctx, rs)
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.SchedulingPolicy.Gang.MinCount != 6 || e.GetPodGroup(pg.Name).Spec.SchedulingPolicy.Gang.MinCount != 6 {
			t.Errorf("PodGroup minCount = %d, want the template's 6", got.Spec.SchedulingPolicy.Gang.MinCount)
		}
		if w := e.Writes(); !reflect.DeepEqual(w, []string{"update podgroups"}) {
			t.Errorf("writes = %v, want one PodGroup update", w)
		}
	})
}

func ktPod(name string, rs *appsv1.ReplicaSet, podGroup *string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ktNS, OwnerReferences: []metav1.OwnerReference{*ktRSControllerRef(rs)}},
		Spec:       *rs.Spec.Template.Spec.DeepCopy(),
	}
	if podGroup != nil {
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: podGroup}
	}
	return pod
}

func ktCheckPodOwners(t *testing.T, pod *corev1.Pod, rs *appsv1.ReplicaSet, pg *schedulingv1beta1.PodGroup) {
	t.Helper()
	if len(pod.OwnerReferences) != 2 {
		t.Fatalf("pod ownerReferences = %+v, want the ReplicaSet and the PodGroup", pod.OwnerReferences)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != rs.UID {
		t.Errorf("pod controller = %+v, want the ReplicaSet", ref)
	}
	var found bool
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "PodGroup" {
			found = true
			if ref.APIVersion != "scheduling.k8s.io/v1beta1" || ref.Name != pg.Name || ref.UID != pg.UID || pg.UID == "" || ptr.Deref(ref.Controller, false) {
				t.Errorf("PodGroup ownerReference = %+v, want non-controller scheduling.k8s.io/v1beta1 PodGroup %s uid %s", ref, pg.Name, pg.UID)
			}
		}
	}
	if !found {
		t.Errorf("no PodGroup ownerReference in %+v", pod.OwnerReferences)
	}
}

// TestKEP6276ScaleToZero covers D-U3.
func TestKEP6276ScaleToZero(t *testing.T) {
	t.Run("D-U3_zero_replicas_deletes_podgroup_and_positive_recreates_it_before_pods", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d, _, rs := ktGangSetup(t, e)
		pg := ktCachedPodGroup(t, e, rs)
		e.Events()
		e.Client.ClearActions()

		zero := rs.DeepCopy()
		zero.Spec.Replicas = ptr.To[int32](0)
		got, err := e.r.EnsurePodGroup(e.Ctx, zero)
		if err != nil || got != nil {
			t.Fatalf("EnsurePodGroup at zero = %v, %v; want nil, nil", got, err)
		}
		var deletes []clienttesting.DeleteActionImpl
		for _, a := range e.Client.Actions() {
			if da, ok := a.(clienttesting.DeleteActionImpl); ok && a.GetResource().Resource == "podgroups" {
				deletes = append(deletes, da)
			}
		}
		if len(deletes) != 1 || deletes[0].Name != pg.Name {
			t.Fatalf("podgroup deletes = %+v, want one of %s", deletes, pg.Name)
		}
		if pre := deletes[0].DeleteOptions.Preconditions; pre == nil || pre.UID == nil || *pre.UID != pg.UID {
			t.Errorf("delete preconditions = %+v, want UID %s", pre, pg.UID)
		}
		if got := e.SchedulingWrites(); !reflect.DeepEqual(got, []string{"delete podgroups"}) {
			t.Errorf("scheduling writes = %v, want only the PodGroup delete (the Workload is retained)", got)
		}
		if _, err := e.Client.SchedulingV1beta1().PodGroups(ktNS).Get(e.Ctx, pg.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("PodGroup still there: %v", err)
		}
		if !fakeapi.HasEvent(e.Events(), "Normal "+events.PodGroupDeleted) {
			t.Errorf("no %s event", events.PodGroupDeleted)
		}
		// At zero nothing is grouped: the pod control passes the template through.
		inner := &ktPodControl{client: e.Client}
		pc := e.r.PodControl(inner)
		if err := pc.CreatePods(e.Ctx, ktNS, &zero.Spec.Template, zero, ktRSControllerRef(zero)); err != nil {
			t.Fatal(err)
		}
		if inner.templates[0].Spec.SchedulingGroup != nil {
			t.Errorf("pod at zero replicas got schedulingGroup %+v", inner.templates[0].Spec.SchedulingGroup)
		}
		if n := e.Count("create", "podgroups"); n != 0 {
			t.Errorf("%d PodGroups created at zero replicas", n)
		}
		// The Workload is kept at zero with minCount 1.
		zd := d.DeepCopy()
		zd.Spec.Replicas = ptr.To[int32](0)
		e.storeDeployment(zd)
		w, err := e.r.EnsureWorkload(e.Ctx, zd)
		if err != nil || TemplateMinCount(w) == nil || *TemplateMinCount(w) != 1 {
			t.Errorf("Workload at zero replicas = %+v, %v; want kept with minCount 1", w, err)
		}
		e.WaitWorkloadCached(w.Name, w.ResourceVersion)

		// Scale back: the PodGroup is recreated before the first pod.
		e.WaitPodGroupGone(pg.Name)
		e.storeDeployment(d)
		w = e.ensureWorkloadCached(d)
		e.Client.ClearActions()
		inner = &ktPodControl{client: e.Client}
		pc = e.r.PodControl(inner)
		if err := pc.CreatePods(e.Ctx, ktNS, &rs.Spec.Template, rs, ktRSControllerRef(rs)); err != nil {
			t.Fatalf("CreatePods after scaling back: %v", err)
		}
		if got := inner.writesAtCall[0]; !reflect.DeepEqual(got, []string{"create podgroups"}) {
			t.Errorf("writes when the pod was created = %v, want the PodGroup recreated first", got)
		}
		if sg := inner.templates[0].Spec.SchedulingGroup; sg == nil || ptr.Deref(sg.PodGroupName, "") != pg.Name {
			t.Errorf("schedulingGroup = %+v, want %s", sg, pg.Name)
		}
		again := e.GetPodGroup(pg.Name)
		if again.UID == pg.UID {
			t.Errorf("PodGroup not recreated (same UID)")
		}
		if again.Spec.SchedulingPolicy.Gang.MinCount != *TemplateMinCount(w) {
			t.Errorf("recreated minCount = %d, want the template's %d", again.Spec.SchedulingPolicy.Gang.MinCount, *TemplateMinCount(w))
		}
	})

	t.Run("D-U3_zero_without_podgroup_is_a_no_op", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		rs.Spec.Replicas = ptr.To[int32](0)
		e.Client.ClearActions()
		if pg, err := e.r.EnsurePodGroup(e.Ctx, rs); pg != nil || err != nil {
			t.Errorf("EnsurePodGroup = %v, %v", pg, err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("writes = %v, want none", got)
		}
	})

	t.Run("D-U3_zero_never_deletes_a_podgroup_it_does_not_control", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d, _, rs := ktGangSetup(t, e)
		foreign := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: PodGroupName(d.Name, "5d8f9c7b6"), Namespace: ktNS}}
		foreign.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
		e.Seed(foreign)
		rs.Spec.Replicas = ptr.To[int32](0)
		e.Client.ClearActions()
		if _, err := e.r.EnsurePodGroup(e.Ctx, rs); err != nil {
			t.Errorf("EnsurePodGroup: %v", err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("writes = %v, want none", got)
		}
	})

	t.Run("D-U3_terminating_podgroup_blocks_pods", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		pg := ktCachedPodGroup(t, e, rs)
		// Scale to zero against an apiserver where the podgroup-protection
		// finalizer keeps the PodGroup terminating.
		e.Client.PrependReactor("delete", "podgroups", func(a clienttesting.Action) (bool, runtime.Object, error) {
			obj, err := e.Client.Tracker().Get(a.GetResource(), a.GetNamespace(), a.(clienttesting.DeleteAction).GetName())
			if err != nil {
				return true, nil, err
			}
			cp := obj.(*schedulingv1beta1.PodGroup).DeepCopy()
			now := metav1.Now()
			cp.DeletionTimestamp = &now
			cp.Finalizers = []string{"scheduling.k8s.io/podgroup-protection"}
			cp.ResourceVersion = "999999"
			return true, nil, e.Client.Tracker().Update(a.GetResource(), cp, a.GetNamespace())
		})
		zero := rs.DeepCopy()
		zero.Spec.Replicas = ptr.To[int32](0)
		if _, err := e.r.EnsurePodGroup(e.Ctx, zero); err != nil {
			t.Fatal(err)
		}
		e.WaitPodGroupCached(pg.Name, "999999")
		e.Client.ClearActions()

		inner := &ktPodControl{client: e.Client}
		if err := e.r.PodControl(inner).CreatePods(e.Ctx, ktNS, &rs.Spec.Template, rs, ktRSControllerRef(rs)); err == nil {
			t.Errorf("CreatePods succeeded while the PodGroup is terminating")
		}
		if inner.calls != 0 {
			t.Errorf("%d pods created into a terminating PodGroup", inner.calls)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("writes = %v, want none while terminating", got)
		}
		// Once it is gone, the next attempt recreates it before the pod.
		e.DeleteBehindTheBack("podgroups", pg.Name)
		e.WaitPodGroupGone(pg.Name)
		if err := e.r.PodControl(inner).CreatePods(e.Ctx, ktNS, &rs.Spec.Template, rs, ktRSControllerRef(rs)); err != nil {
			t.Fatalf("CreatePods after the PodGroup is gone: %v", err)
		}
		if inner.calls != 1 || !reflect.DeepEqual(inner.writesAtCall[0], []string{"create podgroups"}) {
			t.Errorf("calls %d, writes at call %v; want the PodGroup recreated before the pod", inner.calls, inner.writesAtCall)
		}
	})
}

// TestKEP6276Idempotency covers D-U5.
func TestKEP6276Idempotency(t *testing.T) {
	t.Run("D-U5_ensure_workload_twice_creates_once", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
		e.storeDeployment(d)
		w1 := e.ensureWorkloadCached(d)
		w2, err := e.r.EnsureWorkload(e.Ctx, d)
		if err != nil || w2 == nil || w2.UID != w1.UID {
			t.Fatalf("second EnsureWorkload = %v, %v", w2, err)
		}
		if n := e.Count("create", "workloads"); n != 1 {
			t.Errorf("%d Workload creates, want 1", n)
		}
		if got := e.SchedulingWrites(); !reflect.DeepEqual(got, []string{"create workloads"}) {
			t.Errorf("writes = %v", got)
		}
		if ev := e.Events(); !fakeapi.HasEvent(ev, "Normal "+events.WorkloadCreated) {
			t.Errorf("events = %v, want %s", ev, events.WorkloadCreated)
		}
	})

	t.Run("D-U5_ensure_workload_back_to_back_creates_once", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
		e.storeDeployment(d)
		// The informer has not seen the first create when the second call runs.
		w1, err1 := e.r.EnsureWorkload(e.Ctx, d)
		w2, err2 := e.r.EnsureWorkload(e.Ctx, d)
		if err1 != nil || err2 != nil || w1 == nil || w2 == nil || w1.UID != w2.UID {
			t.Fatalf("EnsureWorkload twice = %v %v / %v %v", w1, err1, w2, err2)
		}
		if got := e.SchedulingWrites(); !reflect.DeepEqual(got, []string{"create workloads"}) {
			t.Errorf("writes = %v, want one Workload create", got)
		}
	})

	t.Run("D-U5_ensure_podgroup_twice_creates_once", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		e.Client.ClearActions()
		// Back to back: the informer has not seen the first create yet.
		pg1, err1 := e.r.EnsurePodGroup(e.Ctx, rs)
		pg2, err2 := e.r.EnsurePodGroup(e.Ctx, rs)
		if err1 != nil || err2 != nil || pg1 == nil || pg2 == nil || pg1.UID != pg2.UID {
			t.Fatalf("EnsurePodGroup twice = %v %v / %v %v", pg1, err1, pg2, err2)
		}
		e.WaitPodGroupCached(pg1.Name, pg1.ResourceVersion)
		pg3, err := e.r.EnsurePodGroup(e.Ctx, rs)
		if err != nil || pg3.UID != pg1.UID {
			t.Fatalf("third EnsurePodGroup = %v, %v", pg3, err)
		}
		if got := e.SchedulingWrites(); !reflect.DeepEqual(got, []string{"create podgroups"}) {
			t.Errorf("writes = %v, want one PodGroup create", got)
		}
	})

	t.Run("D-U5_deleted_workload_is_recreated_once", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
		e.storeDeployment(d)
		w := e.ensureWorkloadCached(d)
		e.DeleteBehindTheBack("workloads", w.Name)
		e.WaitWorkloadGone(w.Name)
		w2 := e.ensureWorkloadCached(d)
		if w2.UID == w.UID || !equality.Semantic.DeepEqual(w2.Spec, w.Spec) {
			t.Errorf("recreated Workload = %+v, want a new object with the same spec", w2)
		}
		if _, err := e.r.EnsureWorkload(e.Ctx, d); err != nil {
			t.Fatal(err)
		}
		if n := e.Count("create", "workloads"); n != 2 {
			t.Errorf("%d Workload creates, want 2 (first and recreation)", n)
		}
	})

	// The PodGroup is deleted after the informer has seen it, with an
	// EnsurePodGroup call in between (the informer had caught up).
	t.Run("D-U5_deleted_podgroup_is_recreated_once_after_a_resync", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		pg := ktCachedPodGroup(t, e, rs)
		if _, err := e.r.EnsurePodGroup(e.Ctx, rs); err != nil {
			t.Fatal(err)
		}
		ktDeleteAndRecreatePodGroup(t, e, rs, pg)
	})

	// The same without the call in between: a PodGroup this process created,
	// then deleted behind its back once the informer had it.
	t.Run("D-U5_deleted_podgroup_is_recreated_once", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		pg := ktCachedPodGroup(t, e, rs)
		ktDeleteAndRecreatePodGroup(t, e, rs, pg)
	})

	t.Run("D-U5_workload_already_exists_but_not_cached", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
		e.storeDeployment(d)
		inAPI, err := BuildWorkload(d, ktFullIntent())
		if err != nil {
			t.Fatal(err)
		}
		inAPI.UID, inAPI.ResourceVersion = "api-workload-uid", "7"
		ktAPIOnly(e, "workloads", inAPI)
		e.Client.ClearActions()

		got, err := e.r.EnsureWorkload(e.Ctx, d)
		if err != nil || got == nil || got.UID != inAPI.UID {
			t.Fatalf("EnsureWorkload = %+v, %v; want the API's Workload", got, err)
		}
		if c, g := e.Count("create", "workloads"), e.Count("get", "workloads"); c != 1 || g != 1 {
			t.Errorf("creates %d, gets %d; want one of each", c, g)
		}
		if got := e.SchedulingWrites(); !reflect.DeepEqual(got, []string{"create workloads"}) {
			t.Errorf("writes = %v, want only the refused create", got)
		}
	})

	t.Run("D-U5_podgroup_already_exists_but_not_cached", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, w, rs := ktGangSetup(t, e)
		inAPI, err := BuildPodGroup(w, rs, rs.Name, true)
		if err != nil {
			t.Fatal(err)
		}
		inAPI.UID, inAPI.ResourceVersion = "api-podgroup-uid", "7"
		ktAPIOnly(e, "podgroups", inAPI)
		e.Client.ClearActions()

		got, err := e.r.EnsurePodGroup(e.Ctx, rs)
		if err != nil || got == nil || got.UID != inAPI.UID {
			t.Fatalf("EnsurePodGroup = %+v, %v; want the API's PodGroup", got, err)
		}
		if c, g := e.Count("create", "podgroups"), e.Count("get", "podgroups"); c != 1 || g != 1 {
			t.Errorf("creates %d, gets %d; want one of each", c, g)
		}
		// The next call uses what it read: no second create.
		if again, err := e.r.EnsurePodGroup(e.Ctx, rs); err != nil || again.UID != inAPI.UID {
			t.Errorf("second EnsurePodGroup = %v, %v", again, err)
		}
		if c := e.Count("create", "podgroups"); c != 1 {
			t.Errorf("creates %d, want 1", c)
		}
		// Pods created right after get the PodGroup's UID.
		pod, err := e.r.ReplicaSetControllerClient(e.Client).CoreV1().Pods(ktNS).Create(e.Ctx, ktPod("p", rs, &got.Name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ktCheckPodOwners(t, pod, rs, got)
	})

	t.Run("D-U5_foreign_workload_is_never_adopted", func(t *testing.T) {
		for _, cached := range []bool{true, false} {
			e := ktNewEnv(t, ktEnvOptions{})
			d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
			e.storeDeployment(d)
			foreign, err := BuildWorkload(d, ktGang(ptr.To[int32](1)))
			if err != nil {
				t.Fatal(err)
			}
			// Same name, controlled by another Deployment of the same name (older UID).
			foreign.OwnerReferences[0].UID = "someone-else"
			if cached {
				e.Seed(foreign)
			} else {
				foreign.UID, foreign.ResourceVersion = "foreign-uid", "3"
				ktAPIOnly(e, "workloads", foreign)
			}
			e.Events()
			e.Client.ClearActions()
			w, err := e.r.EnsureWorkload(e.Ctx, d)
			if err == nil || w != nil {
				t.Errorf("cached=%v: EnsureWorkload = %v, %v; want an error", cached, w, err)
			}
			if got := e.SchedulingWrites(); len(got) > 1 || (cached && len(got) != 0) {
				t.Errorf("cached=%v: writes = %v, want none but a refused create", cached, got)
			}
			if e.Count("update", "workloads")+e.Count("delete", "workloads")+e.Count("patch", "workloads") != 0 {
				t.Errorf("cached=%v: the foreign Workload was modified", cached)
			}
			if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.WorkloadNameCollision) {
				t.Errorf("cached=%v: events = %v, want %s", cached, ev, events.WorkloadNameCollision)
			}
			// And no ReplicaSet is created on top of it.
			_, err = e.r.DeploymentControllerClient(e.Client).AppsV1().ReplicaSets(ktNS).Create(e.Ctx, ktReplicaSet(d, "5d8f9c7b6", 3), metav1.CreateOptions{})
			if err == nil || e.Count("create", "replicasets") != 0 {
				t.Errorf("cached=%v: ReplicaSet created over a foreign Workload (err %v)", cached, err)
			}
		}
	})

	t.Run("D-U5_foreign_podgroup_is_never_adopted", func(t *testing.T) {
		for _, cached := range []bool{true, false} {
			e := ktNewEnv(t, ktEnvOptions{})
			_, w, rs := ktGangSetup(t, e)
			other := rs.DeepCopy()
			other.UID = "older-replicaset-uid"
			foreign, err := BuildPodGroup(w, other, rs.Name, true)
			if err != nil {
				t.Fatal(err)
			}
			if cached {
				e.Seed(foreign)
			} else {
				foreign.UID, foreign.ResourceVersion = "foreign-uid", "3"
				ktAPIOnly(e, "podgroups", foreign)
			}
			e.Events()
			e.Client.ClearActions()
			inner := &ktPodControl{client: e.Client}
			if err := e.r.PodControl(inner).CreatePods(e.Ctx, ktNS, &rs.Spec.Template, rs, ktRSControllerRef(rs)); err == nil {
				t.Errorf("cached=%v: CreatePods succeeded with a foreign PodGroup", cached)
			}
			if inner.calls != 0 {
				t.Errorf("cached=%v: %d pods created into a foreign PodGroup", cached, inner.calls)
			}
			if got := e.SchedulingWrites(); len(got) > 1 || (cached && len(got) != 0) {
				t.Errorf("cached=%v: writes = %v, want none but a refused create", cached, got)
			}
			if e.Count("update", "podgroups")+e.Count("delete", "podgroups")+e.Count("patch", "podgroups") != 0 {
				t.Errorf("cached=%v: the foreign PodGroup was modified", cached)
			}
			if cached {
				if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.PodGroupNameCollision) {
					t.Errorf("events = %v, want %s", ev, events.PodGroupNameCollision)
				}
			}
		}
	})

	t.Run("D-U5_workload_reconciles_only_minCount", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
		e.storeDeployment(d)
		w := e.ensureWorkloadCached(d)
		e.Client.ClearActions()

		// Unchanged replicas: no write.
		if _, err := e.r.EnsureWorkload(e.Ctx, d); err != nil {
			t.Fatal(err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("writes with unchanged replicas = %v, want none", got)
		}
		// Scaled: one update, only minCount differs.
		d5 := d.DeepCopy()
		d5.Spec.Replicas = ptr.To[int32](5)
		w5 := e.ensureWorkloadCached(d5)
		if got := e.SchedulingWrites(); !reflect.DeepEqual(got, []string{"update workloads"}) {
			t.Errorf("writes after scaling = %v, want one update", got)
		}
		if *TemplateMinCount(w5) != 5 {
			t.Errorf("minCount = %d, want 5", *TemplateMinCount(w5))
		}
		cmp := w5.DeepCopy()
		cmp.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = 3
		if !equality.Semantic.DeepEqual(cmp.Spec, w.Spec) || !equality.Semantic.DeepEqual(cmp.OwnerReferences, w.OwnerReferences) || w5.UID != w.UID {
			t.Errorf("update changed more than minCount:\n%+v\n%+v", cmp.Spec, w.Spec)
		}
		if _, err := e.r.EnsureWorkload(e.Ctx, d5); err != nil {
			t.Fatal(err)
		}
		if got := e.SchedulingWrites(); len(got) != 1 {
			t.Errorf("writes after a repeated call = %v, want still one update", got)
		}
		// An explicit minCount does not follow replicas.
		ex := ktDeployment(t, "prefill-workers", ptr.To[int32](4), ktGang(ptr.To[int32](3)))
		e.storeDeployment(ex)
		wex := e.ensureWorkloadCached(ex)
		e.Client.ClearActions()
		ex6 := ex.DeepCopy()
		ex6.Spec.Replicas = ptr.To[int32](6)
		got, err := e.r.EnsureWorkload(e.Ctx, ex6)
		if err != nil || *TemplateMinCount(got) != 3 || *TemplateMinCount(wex) != 3 {
			t.Errorf("explicit minCount: %v, %v", got, err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("writes = %v, want none for an explicit minCount", got)
		}
	})
}

func ktDeleteAndRecreatePodGroup(t *testing.T, e *ktEnv, rs *appsv1.ReplicaSet, pg *schedulingv1beta1.PodGroup) {
	t.Helper()
	e.DeleteBehindTheBack("podgroups", pg.Name)
	e.WaitPodGroupGone(pg.Name)
	e.Client.ClearActions()

	inner := &ktPodControl{client: e.Client}
	pc := e.r.PodControl(inner)
	if err := pc.CreatePods(e.Ctx, ktNS, &rs.Spec.Template, rs, ktRSControllerRef(rs)); err != nil {
		t.Fatalf("CreatePods: %v", err)
	}
	if err := pc.CreatePods(e.Ctx, ktNS, &rs.Spec.Template, rs, ktRSControllerRef(rs)); err != nil {
		t.Fatalf("CreatePods: %v", err)
	}
	if got := e.SchedulingWrites(); !reflect.DeepEqual(got, []string{"create podgroups"}) {
		t.Errorf("writes after the PodGroup was deleted = %v, want it recreated exactly once", got)
	}
	if len(inner.writesAtCall) == 0 || !reflect.DeepEqual(inner.writesAtCall[0], []string{"create podgroups"}) {
		t.Errorf("writes at the first pod = %v, want the PodGroup recreated before it", inner.writesAtCall)
	}
	if _, err := e.Client.SchedulingV1beta1().PodGroups(ktNS).Get(e.Ctx, pg.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("PodGroup %s not recreated: %v; pods were created into a PodGroup that does not exist", pg.Name, err)
	}
}

// ktAPIOnly makes obj exist in the API without the informer ever seeing it:
// create answers AlreadyExists and get returns obj.
func ktAPIOnly(e *ktEnv, resource string, obj runtime.Object) {
	name := obj.(metav1.Object).GetName()
	gr := schedulingv1beta1.SchemeGroupVersion.WithResource(resource).GroupResource()
	e.Client.PrependReactor("create", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.CreateAction).GetObject().(metav1.Object).GetName() == name {
			return true, nil, apierrors.NewAlreadyExists(gr, name)
		}
		return false, nil, nil
	})
	e.Client.PrependReactor("get", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.GetAction).GetName() == name {
			return true, obj.DeepCopyObject(), nil
		}
		return false, nil, nil
	})
}

// TestKEP6276GateOffAndNoIntent covers D-I8 at unit level: nothing of
// KEP-6276 happens without the gate or the intent.
func TestKEP6276GateOffAndNoIntent(t *testing.T) {
	cases := []struct {
		name    string
		gateOff bool
		cfg     *intent.DeploymentSchedulingConfiguration
	}{
		{"D-I8_gate_off", true, ktFullIntent()},
		{"D-I8_no_intent", false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The scheduling API is not even served: nothing may need it.
			e := ktNewEnv(t, ktEnvOptions{gateOff: tc.gateOff, notServed: true})
			d := ktDeployment(t, "web", ptr.To[int32](3), tc.cfg)
			e.storeDeployment(d)
			rs := ktReplicaSet(d, "5d8f9c7b6", 3)

			if cfg := e.r.IntentFor(d); cfg != nil {
				t.Errorf("IntentFor = %+v, want nil", cfg)
			}
			if w, err := e.r.EnsureWorkload(e.Ctx, d); w != nil || err != nil {
				t.Errorf("EnsureWorkload = %v, %v; want nil, nil", w, err)
			}
			if pg, err := e.r.EnsurePodGroup(e.Ctx, rs); pg != nil || err != nil {
				t.Errorf("EnsurePodGroup = %v, %v; want nil, nil", pg, err)
			}
			rsClient := e.r.DeploymentControllerClient(e.Client).AppsV1().ReplicaSets(ktNS)
			created, err := rsClient.Create(e.Ctx, rs, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("ReplicaSet create: %v", err)
			}
			created.Spec.Replicas = ptr.To[int32](5)
			if _, err := rsClient.Update(e.Ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("ReplicaSet update: %v", err)
			}
			inner := &ktPodControl{client: e.Client}
			template := &rs.Spec.Template
			if err := e.r.PodControl(inner).CreatePods(e.Ctx, ktNS, template, rs, ktRSControllerRef(rs)); err != nil {
				t.Fatalf("CreatePods: %v", err)
			}
			if err := e.r.PodControl(inner).CreatePodsWithGenerateName(e.Ctx, ktNS, template, rs, ktRSControllerRef(rs), "g-"); err != nil {
				t.Fatalf("CreatePodsWithGenerateName: %v", err)
			}
			for i, got := range inner.templates {
				if got != template {
					t.Errorf("call %d: template not passed straight through", i)
				}
			}
			if template.Spec.SchedulingGroup != nil {
				t.Errorf("template got a schedulingGroup")
			}
			pod := ktPod("p", rs, nil)
			stored, err := e.r.ReplicaSetControllerClient(e.Client).CoreV1().Pods(ktNS).Create(e.Ctx, pod, metav1.CreateOptions{})
			if err != nil || !equality.Semantic.DeepEqual(stored.OwnerReferences, pod.OwnerReferences) || stored.Spec.SchedulingGroup != nil {
				t.Errorf("pod create not passed through: %+v, %v", stored, err)
			}
			if got := e.SchedulingActions(); len(got) != 0 {
				t.Errorf("scheduling.k8s.io actions = %v, want none", got)
			}
			if got := e.Writes(); !reflect.DeepEqual(got, []string{"create replicasets", "update replicasets", "create pods"}) {
				t.Errorf("writes = %v", got)
			}
			if ev := e.Events(); len(ev) != 0 {
				t.Errorf("events = %v, want none", ev)
			}
		})
	}

	t.Run("D-I8_gate_off_leaves_existing_podgroup_at_zero", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		ktCachedPodGroup(t, e, rs)
		e.gateOn.Store(false) // consulted on every call
		e.Client.ClearActions()
		rs.Spec.Replicas = ptr.To[int32](0)
		if got, err := e.r.EnsurePodGroup(e.Ctx, rs); got != nil || err != nil {
			t.Errorf("EnsurePodGroup = %v, %v", got, err)
		}
		if got := e.SchedulingActions(); len(got) != 0 {
			t.Errorf("scheduling actions with the gate off = %v, want none", got)
		}
	})

	t.Run("D-I8_malformed_annotation_is_nil_with_warning", func(t *testing.T) {
		for _, value := range []string{`{"schedulingPolicy": {"gang": {}}`, `{"schedulingPolicy": {"gang": {}}, "bogus": 1}`, `{} {}`, `"gang"`} {
			e := ktNewEnv(t, ktEnvOptions{notServed: true})
			d := ktDeployment(t, "web", ptr.To[int32](3), nil)
			d.Annotations = map[string]string{intent.DeploymentAnnotation: value}
			e.storeDeployment(d)
			if cfg := e.r.IntentFor(d); cfg != nil {
				t.Errorf("IntentFor(%s) = %+v, want nil", value, cfg)
			}
			if ev := e.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+events.InvalidSchedulingIntent) {
				t.Errorf("events for %s = %v, want one %s warning", value, ev, events.InvalidSchedulingIntent)
			}
			if w, err := e.r.EnsureWorkload(e.Ctx, d); w != nil || err != nil {
				t.Errorf("EnsureWorkload = %v, %v; want nil, nil", w, err)
			}
			if got := e.SchedulingActions(); len(got) != 0 {
				t.Errorf("scheduling actions = %v", got)
			}
		}
	})

	t.Run("D-I8_template_with_its_own_schedulingGroup_is_left_alone", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{notServed: true})
		d := ktDeployment(t, "web", ptr.To[int32](3), ktGang(nil))
		d.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("mine")}
		if cfg := e.r.IntentFor(d); cfg != nil {
			t.Errorf("IntentFor = %+v, want nil", cfg)
		}
	})

	t.Run("D-I8_gate_on_with_intent_but_api_not_served_is_retried", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{notServed: true})
		d := ktDeployment(t, "web", ptr.To[int32](3), ktGang(nil))
		e.storeDeployment(d)
		if w, err := e.r.EnsureWorkload(e.Ctx, d); err == nil || w != nil {
			t.Errorf("EnsureWorkload = %v, %v; want ErrNotServed", w, err)
		}
		_, err := e.r.DeploymentControllerClient(e.Client).AppsV1().ReplicaSets(ktNS).Create(e.Ctx, ktReplicaSet(d, "h", 3), metav1.CreateOptions{})
		if err == nil || e.Count("create", "replicasets") != 0 {
			t.Errorf("ReplicaSet created before its Workload could be (err %v)", err)
		}
	})
}

// TestKEP6276DeploymentClient covers the Deployment side of D-U1 (and the
// ordering of D-I2): the Workload is ensured before ReplicaSet writes.
func TestKEP6276DeploymentClient(t *testing.T) {
	t.Run("D-U1_workload_created_before_the_replicaset", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
		e.storeDeployment(d)
		e.Client.ClearActions()
		rs := ktReplicaSet(d, "5d8f9c7b6", 3)
		if _, err := e.r.DeploymentControllerClient(e.Client).AppsV1().ReplicaSets(ktNS).Create(e.Ctx, rs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := e.Writes(); !reflect.DeepEqual(got, []string{"create workloads", "create replicasets"}) {
			t.Errorf("writes = %v, want the Workload then the ReplicaSet", got)
		}
		w := e.GetWorkload(WorkloadName(d))
		if !metav1.IsControlledBy(w, d) || *TemplateMinCount(w) != 3 {
			t.Errorf("workload = %+v", w)
		}
	})

	t.Run("D-U1_scaling_update_reconciles_minCount_first", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
		e.storeDeployment(d)
		rsClient := e.r.DeploymentControllerClient(e.Client).AppsV1().ReplicaSets(ktNS)
		rs, err := rsClient.Create(e.Ctx, ktReplicaSet(d, "5d8f9c7b6", 3), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.WaitWorkloadCached(WorkloadName(d), "")
		e.Client.ClearActions()

		// The user scales the Deployment to 5; the controller scales its ReplicaSet.
		d5 := d.DeepCopy()
		d5.Spec.Replicas = ptr.To[int32](5)
		e.storeDeployment(d5)
		rs = rs.DeepCopy()
		rs.Spec.Replicas = ptr.To[int32](5)
		if _, err := rsClient.Update(e.Ctx, rs, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := e.Writes(); !reflect.DeepEqual(got, []string{"update workloads", "update replicasets"}) {
			t.Errorf("writes = %v, want the Workload minCount update before the ReplicaSet update", got)
		}
		if m := TemplateMinCount(e.GetWorkload(WorkloadName(d))); m == nil || *m != 5 {
			t.Errorf("minCount = %v, want 5", m)
		}
	})

	t.Run("D-U1_replicaset_of_unknown_deployment_passes_through", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
		e.storeDeployment(d)
		for _, rs := range []*appsv1.ReplicaSet{
			func() *appsv1.ReplicaSet { rs := ktReplicaSet(d, "a1", 1); rs.OwnerReferences = nil; return rs }(),
			func() *appsv1.ReplicaSet {
				rs := ktReplicaSet(d, "a2", 1)
				rs.OwnerReferences[0].UID = "stale"
				return rs
			}(),
		} {
			if _, err := e.r.DeploymentControllerClient(e.Client).AppsV1().ReplicaSets(ktNS).Create(e.Ctx, rs, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none", got)
		}
	})
}

// TestKEP6276FailureEvents: KEP-6276 names no event reasons, so the
// Deployment side records the ones KEP-6277 names for the same cases: a
// failed Workload or PodGroup create is WorkloadCreationFailed.
func TestKEP6276FailureEvents(t *testing.T) {
	quota := apierrors.NewForbidden(schedulingv1beta1.Resource("workloads"), "", fmt.Errorf("quota"))
	t.Run("failed_workload_create_is_WorkloadCreationFailed", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "inference-server", ptr.To[int32](3), ktFullIntent())
		e.storeDeployment(d)
		e.Fail("create", "workloads", quota)
		if w, err := e.r.EnsureWorkload(e.Ctx, d); err == nil {
			t.Fatalf("EnsureWorkload = %v with creates failing", w)
		}
		if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.WorkloadCreationFailed+" Error creating Workload") {
			t.Errorf("events = %v, want Warning %s about the Workload", ev, events.WorkloadCreationFailed)
		}
	})
	t.Run("failed_podgroup_create_is_WorkloadCreationFailed", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		_, _, rs := ktGangSetup(t, e)
		e.Events()
		e.Fail("create", "podgroups", quota)
		if pg, err := e.r.EnsurePodGroup(e.Ctx, rs); err == nil {
			t.Fatalf("EnsurePodGroup = %v with creates failing", pg)
		}
		if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.WorkloadCreationFailed+" Error creating PodGroup") {
			t.Errorf("events = %v, want Warning %s about the PodGroup", ev, events.WorkloadCreationFailed)
		}
	})
}

// TestKEP6276ScaleDownLowersQuorumBeforeDeletingPods covers D-I3's order on
// the ReplicaSet side: the pod control lowers the PodGroup's minCount before
// the ReplicaSet controller deletes a pod, right after the Deployment side
// lowered the Workload's, without waiting for the worker that also
// reconciles the PodGroup (it runs beside the ReplicaSet controller, and
// under load came second in the e2e suite).
func TestKEP6276ScaleDownLowersQuorumBeforeDeletingPods(t *testing.T) {
	e := ktNewEnv(t, ktEnvOptions{})
	d := ktDeployment(t, "scale-down", ptr.To[int32](4), ktGang(nil))
	e.storeDeployment(d)
	e.ensureWorkloadCached(d)
	rs := e.replicaSet(d, "5d8f9c7b6", 4)
	pg, err := e.r.EnsurePodGroup(e.Ctx, rs)
	if err != nil || pg == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 4 {
		t.Fatalf("EnsurePodGroup = %+v, %v; want a PodGroup at minCount 4", pg, err)
	}
	e.WaitPodGroupCached(pg.Name, pg.ResourceVersion)

	// The Deployment side: the Workload first (its hook runs before the
	// ReplicaSet update), then the ReplicaSet scaled to 2.
	down := d.DeepCopy()
	down.Spec.Replicas = ptr.To[int32](2)
	e.storeDeployment(down)
	if w, err := e.r.EnsureWorkload(e.Ctx, down); err != nil || TemplateMinCount(w) == nil || *TemplateMinCount(w) != 2 {
		t.Fatalf("EnsureWorkload = %+v, %v; want the template at minCount 2", w, err)
	}
	rs = rs.DeepCopy()
	rs.Spec.Replicas = ptr.To[int32](2)
	e.Store(rs)
	e.Client.ClearActions()

	inner := &ktPodControl{client: e.Client}
	if err := e.r.PodControl(inner).DeletePod(e.Ctx, ktNS, "scale-down-pod-3", rs); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	if got := inner.writesAtCall[0]; !reflect.DeepEqual(got, []string{"update podgroups"}) {
		t.Errorf("writes when the pod was deleted = %v, want the PodGroup's minCount lowered first", got)
	}
	if got := e.GetPodGroup(pg.Name).Spec.SchedulingPolicy.Gang.MinCount; got != 2 {
		t.Errorf("PodGroup minCount = %d when the pod was deleted, want 2", got)
	}
}

// TestKEP6276ScaleToZeroDeletesThePodGroupOnce covers the KEP's write list at
// zero replicas (D-U3): the pod control reconciles the PodGroup before each
// pod it deletes, and the PodGroup, kept by its protection finalizer, is
// still in the cache without a deletionTimestamp for the second pod; it must
// not be deleted twice.
func TestKEP6276ScaleToZeroDeletesThePodGroupOnce(t *testing.T) {
	e := ktNewEnv(t, ktEnvOptions{})
	d := ktDeployment(t, "to-zero", ptr.To[int32](2), ktGang(nil))
	e.storeDeployment(d)
	e.ensureWorkloadCached(d)
	rs := e.replicaSet(d, "5d8f9c7b6", 2)
	pg, err := e.r.EnsurePodGroup(e.Ctx, rs)
	if err != nil || pg == nil {
		t.Fatalf("EnsurePodGroup = %+v, %v", pg, err)
	}
	e.WaitPodGroupCached(pg.Name, pg.ResourceVersion)
	// The fake API has no finalizers: keep the deleted PodGroup from leaving
	// the informer, as the protection finalizer would until the pods go.
	e.Client.PrependReactor("delete", "podgroups", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})

	zero := rs.DeepCopy()
	zero.Spec.Replicas = ptr.To[int32](0)
	e.Store(zero)
	e.Client.ClearActions()
	pc := e.r.PodControl(&ktPodControl{client: e.Client})
	for _, pod := range []string{"to-zero-pod-0", "to-zero-pod-1"} {
		if err := pc.DeletePod(e.Ctx, ktNS, pod, zero); err != nil {
			t.Fatalf("DeletePod %s: %v", pod, err)
		}
	}
	if got := e.SchedulingWrites(); !reflect.DeepEqual(got, []string{"delete podgroups"}) {
		t.Errorf("scheduling writes = %v, want the PodGroup deleted once", got)
	}
}

// TestAdoptedReplicaSetPodGroup: a ReplicaSet the Deployment adopted has
// no pod-template-hash label (upstream's RollingUpdateDeployment and
// rollover e2e specs adopt one; make parity found the reference refusing
// it, which blocked every pod deletion of it and so the rollout). It is one
// revision: its PodGroup takes the ReplicaSet's own name, and at zero
// replicas that PodGroup goes like any other.
func TestAdoptedReplicaSetPodGroup(t *testing.T) {
	e := ktNewEnv(t, ktEnvOptions{})
	d, _, _ := ktGangSetup(t, e)
	rs := ktReplicaSet(d, "", 2)
	rs.Name = "adopted-by-hand"
	delete(rs.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	e.Store(rs)
	pg, err := e.r.EnsurePodGroup(e.Ctx, rs)
	if err != nil || pg == nil {
		t.Fatalf("EnsurePodGroup(adopted) = %v, %v; want a PodGroup", pg, err)
	}
	if pg.Name != rs.Name {
		t.Errorf("PodGroup %s, want the ReplicaSet's own name %s", pg.Name, rs.Name)
	}
	e.WaitPodGroupCached(pg.Name, pg.ResourceVersion)
	rs = rs.DeepCopy()
	rs.Spec.Replicas = ptr.To[int32](0)
	e.Store(rs)
	if got, err := e.r.EnsurePodGroup(e.Ctx, rs); err != nil || got != nil {
		t.Fatalf("EnsurePodGroup(adopted, 0 replicas) = %v, %v; want nil, nil", got, err)
	}
	if _, err := e.Client.SchedulingV1beta1().PodGroups(rs.Namespace).Get(e.Ctx, rs.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the adopted ReplicaSet's PodGroup at zero replicas: get err %v, want NotFound", err)
	}
}
