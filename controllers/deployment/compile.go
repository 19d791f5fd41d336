package deployment

import (
	"fmt"
	"hash/fnv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	jobutil "k8s.io/kubernetes/pkg/api/job"
	hashutil "k8s.io/kubernetes/pkg/util/hash"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
)

// SchedulingPath is where the intent lives in the KEP's API; every error path
// is reported under it, whatever carries the intent.
var SchedulingPath = field.NewPath("spec", "scheduling")

// BuildOptions are the workloadbuilder options of a Deployment: the policies
// and disruption modes KEP-6276 supports. Owner, Name and Namespace are filled
// per object.
func BuildOptions() workloadbuilder.BuildOptions {
	return workloadbuilder.BuildOptions{
		AllowedPolicies:        []workloadbuilder.SchedulingPolicyOption{workloadbuilder.BasicPolicy, workloadbuilder.GangPolicy},
		AllowedDisruptionModes: []workloadbuilder.DisruptionModeOption{workloadbuilder.SingleMode, workloadbuilder.AllMode},
	}
}

// uidHash is the short, stable hash of the Deployment's UID in the Workload's
// name (the scheme the 1.37 Job controller uses), so a Deployment and another
// kind of controller with the same name never collide.
func uidHash(d *appsv1.Deployment) string {
	h := fnv.New32a()
	hashutil.DeepHashObject(h, d.UID)
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// withSuffix truncates base so that base-suffix fits max characters, and keeps
// the suffix whole: the hash is what makes the name unique.
func withSuffix(base, suffix string, max int) string {
	room := max - len(suffix) - 1
	if len(base) > room {
		// A cut right after a dot would leave an empty DNS label ("a.-hash").
		base = strings.TrimRight(base[:room], ".")
	}
	return base + "-" + suffix
}

// WorkloadName is <deployment>-<hash of its UID>, truncated to a DNS subdomain.
func WorkloadName(d *appsv1.Deployment) string {
	return withSuffix(d.Name, uidHash(d), validation.DNS1123SubdomainMaxLength)
}

// TemplateName names the Workload's sole PodGroupTemplate: the Workload's
// name, made a DNS label (at most 63 characters, no dots). The 1.37 Job
// controller does not truncate its template name, and fails past 57 characters.
func TemplateName(d *appsv1.Deployment) string {
	base := strings.ReplaceAll(d.Name, ".", "-")
	return withSuffix(base, uidHash(d), validation.DNS1123LabelMaxLength)
}

// PodGroupName is <deployment>-<pod-template-hash>: the ReplicaSet's own name,
// truncated exactly the way the Deployment controller truncates it (which
// does not trim a dot at the cut; neither may we, or the names would differ).
func PodGroupName(deploymentName, podTemplateHash string) string {
	room := validation.DNS1123SubdomainMaxLength - len(podTemplateHash) - 1
	if len(deploymentName) > room {
		deploymentName = deploymentName[:room]
	}
	return deploymentName + "-" + podTemplateHash
}

// ResolvedMinCount is the gang minCount for replicas: the user's explicit
// value, else replicas, and 1 at zero replicas (minCount must be positive).
func ResolvedMinCount(cfg *intent.DeploymentSchedulingConfiguration, replicas int32) int32 {
	if m := cfg.ExplicitMinCount(); m != nil {
		return *m
	}
	return max(1, replicas)
}

// WorkloadItem is the single-leaf workload tree of a Deployment, shared by the
// controller (which compiles it) and admission (which validates it), so the
// two can never disagree. path is where the intent sits (SchedulingPath).
func WorkloadItem(d *appsv1.Deployment, cfg *intent.DeploymentSchedulingConfiguration, path *field.Path) *workloadbuilder.WorkloadItem {
	if cfg == nil {
		cfg = &intent.DeploymentSchedulingConfiguration{}
	}
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	return &workloadbuilder.WorkloadItem{
		Name: TemplateName(d),
		Path: path,
		DefaultConfig: &workloadbuilder.SchedulingConfig{
			Policy:            &workloadbuilder.SchedulingPolicy{Basic: &workloadbuilder.BasicSchedulingPolicy{}},
			PriorityClassName: d.Spec.Template.Spec.PriorityClassName,
		},
		Input: jobutil.WorkloadInput(cfg.SchedulingPolicy, cfg.SchedulingConstraints, cfg.DisruptionMode, cfg.ResourceClaims),
		Callbacks: []workloadbuilder.SchedulingConfigFunc{func(sc *workloadbuilder.SchedulingConfig) {
			// Only the compiled copy gets the derived value; the user's
			// spec.scheduling is never written back.
			if sc != nil && sc.Policy != nil && sc.Policy.Gang != nil && sc.Policy.Gang.MinCount == nil {
				sc.Policy.Gang.MinCount = ptr.To(ResolvedMinCount(cfg, replicas))
			}
		}},
	}
}

// BuildWorkload compiles the Deployment's intent into its Workload: one
// PodGroupTemplate, a controller ownerReference to the Deployment, and
// spec.controllerRef naming it.
func BuildWorkload(d *appsv1.Deployment, cfg *intent.DeploymentSchedulingConfiguration) (*schedulingv1beta1.Workload, error) {
	opts := BuildOptions()
	opts.Name, opts.Namespace = WorkloadName(d), d.Namespace
	opts.Owner = metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	opts.DisableDeclarativeValidation = true // admission validated the intent
	return workloadbuilder.NewBuilder(WorkloadItem(d, cfg, SchedulingPath), opts).BuildWorkload()
}

// BuildPodGroup stamps the ReplicaSet's PodGroup from the Workload's sole
// template: a controller ownerReference to the ReplicaSet and a non-controller
// one to the Workload. With withClaims false (DRAWorkloadResourceClaims off),
// the template's resource claims are left off the PodGroup.
func BuildPodGroup(w *schedulingv1beta1.Workload, rs *appsv1.ReplicaSet, name string, withClaims bool) (*schedulingv1beta1.PodGroup, error) {
	if n := len(w.Spec.PodGroupTemplates); n != 1 {
		return nil, fmt.Errorf("workload %s/%s has %d podGroupTemplates, want exactly 1", w.Namespace, w.Name, n)
	}
	opts := BuildOptions()
	opts.Owner = metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	pg, err := workloadbuilder.NewBuilderFromExistingWorkload(w, opts).NewPodGroup(name, w.Spec.PodGroupTemplates[0].Name)
	if err != nil {
		return nil, err
	}
	pg.OwnerReferences = append(pg.OwnerReferences, metav1.OwnerReference{
		APIVersion: schedulingv1beta1.SchemeGroupVersion.String(),
		Kind:       "Workload",
		Name:       w.Name,
		UID:        w.UID,
	})
	if !withClaims {
		pg.Spec.ResourceClaims = nil
	}
	return pg, nil
}

// TemplateMinCount returns the gang minCount of the Workload's sole template,
// or nil for a basic template.
func TemplateMinCount(w *schedulingv1beta1.Workload) *int32 {
	if len(w.Spec.PodGroupTemplates) != 1 || w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang == nil {
		return nil
	}
	return ptr.To(w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount)
}
