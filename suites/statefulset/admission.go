package statefulset

import (
	"context"
	"fmt"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// KEP-6277, Admission Validation, asserted through the API the way a user
// meets it: create, update and /scale of StatefulSets whose spec.scheduling
// is written through the intent seam. A rejection is judged by its field
// path and error type (framework.ExpectRejected), not by its wording: where
// the KEP prints an error ("spec.scheduling.schedulingPolicy.gang: Forbidden:
// ..."), its path and type are asserted and its text is the implementation's.

const (
	gangPath      = "spec.scheduling.schedulingPolicy.gang"
	minCountPath  = "spec.scheduling.schedulingPolicy.gang.minCount"
	partitionPath = "spec.updateStrategy.rollingUpdate.partition"
	claimsPath    = "spec.scheduling.resourceClaims"
)

// Error types the KEP allows per rule: it prints "Forbidden" for the
// OrderedReady and partition conflicts; +k8s:immutable yields Invalid (or
// Forbidden for list items, k8s.io/apimachinery/pkg/api/validate/update.go);
// a rule the KEP only calls "rejected" or "forbidden" in prose may use either.
var (
	forbiddenType = []field.ErrorType{field.ErrorTypeForbidden}
	rejectedTypes = []field.ErrorType{field.ErrorTypeInvalid, field.ErrorTypeForbidden}
	claimTypes    = []field.ErrorType{field.ErrorTypeInvalid, field.ErrorTypeForbidden, field.ErrorTypeRequired}
	tooManyTypes  = []field.ErrorType{field.ErrorTypeTooMany, field.ErrorTypeInvalid, field.ErrorTypeForbidden}
)

var _ = ginkgo.Describe("StatefulSet spec.scheduling admission", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-admission")

		ginkgo.It("rejects gang with OrderedReady, set or left to the default, with the KEP's Forbidden message", framework.ID("S-V1"), func(ctx context.Context) {
			ordered := builder.StatefulSet("ordered", f.Namespace).Replicas(0).OrderedReady().Obj()
			_, err := tryCreate(ctx, ordered, gang(), false)
			expectRejected(err, forbiddenType, gangPath)
			defaulted := builder.StatefulSet("defaulted", f.Namespace).Replicas(0).Obj() // podManagementPolicy unset: OrderedReady
			_, err = tryCreate(ctx, defaulted, gang(), false)
			expectRejected(err, forbiddenType, gangPath)

			ginkgo.By("the same StatefulSets with basic, and Parallel with gang, are accepted")
			create(ctx, ordered, basic())
			create(ctx, builder.StatefulSet("parallel", f.Namespace).Replicas(0).Parallel().Obj(), gang())
		})

		ginkgo.It("rejects a user-set gang.minCount", framework.ID("S-V2"), func(ctx context.Context) {
			for _, n := range []int32{1, 2, 3} {
				cfg := gang()
				cfg.SchedulingPolicy.Gang.MinCount = ptr.To(n)
				_, err := tryCreate(ctx, parallel(f, fmt.Sprintf("mincount-%d", n), 3, "100m").Obj(), cfg, false)
				expectRejected(err, rejectedTypes, minCountPath)
			}
		})

		ginkgo.It("rejects rollingUpdate.partition > 0 with spec.scheduling, on create and on update", framework.ID("S-V3"), func(ctx context.Context) {
			_, err := tryCreate(ctx, parallel(f, "canary", 2, "100m").Partition(1).Obj(), gang(), false)
			expectRejected(err, forbiddenType, partitionPath)
			_, err = tryCreate(ctx, parallel(f, "canary-basic", 2, "100m").Partition(1).Obj(), &framework.StatefulSetScheduling{}, false)
			expectRejected(err, forbiddenType, partitionPath)

			ginkgo.By("partition 0 is accepted; raising it afterwards is rejected")
			set := create(ctx, parallel(f, "rolling", 0, "100m").Partition(0).Obj(), gang())
			_, err = framework.Intent.UpdateStatefulSet(ctx, f.Namespace, set.Name, func(s *appsv1.StatefulSet, _ **framework.StatefulSetScheduling) {
				s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](1)
			})
			expectRejected(err, forbiddenType, partitionPath)

			ginkgo.By("a partitioned rollout without spec.scheduling stays allowed")
			create(ctx, parallel(f, "plain-canary", 0, "100m").Partition(1).Obj(), nil)
		})

		ginkgo.It("rejects disruptionMode all with the basic policy, spelled out or by default", framework.ID("S-V4"), func(ctx context.Context) {
			all := &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
			spelled := basic()
			spelled.DisruptionMode = all
			_, err := tryCreate(ctx, parallel(f, "basic-all", 2, "100m").Obj(), spelled, false)
			expectRejected(err, rejectedTypes, "spec.scheduling")
			_, err = tryCreate(ctx, parallel(f, "default-all", 2, "100m").Obj(), &framework.StatefulSetScheduling{DisruptionMode: all}, false)
			expectRejected(err, rejectedTypes, "spec.scheduling")

			ginkgo.By("all with gang is accepted")
			g := gang()
			g.DisruptionMode = all
			create(ctx, parallel(f, "gang-all", 0, "100m").Obj(), g)
		})

		ginkgo.It("accepts Parallel with gang, OrderedReady with basic, topology and shared claims, and scheduling: {}", framework.ID("S-V5"),
			framework.WithFeatureGate(framework.TopologyAwareWorkloadScheduling, framework.DRAWorkloadResourceClaims), func(ctx context.Context) {
				create(ctx, parallel(f, "gang", 0, "100m").Obj(), gang())
				shared := withTopology(basic(), framework.TestContext.TopologyKey)
				shared.ResourceClaims = []schedulingv1alpha3.WorkloadPodGroupResourceClaim{draClaim("gpu", "", "gpu")}
				create(ctx, builder.StatefulSet("ordered", f.Namespace).Replicas(0).OrderedReady().
					PodTemplate(func(p *builder.PodWrapper) { p.ResourceClaim("gpu", "", "gpu") }).Obj(), shared)
				create(ctx, builder.StatefulSet("empty-ordered", f.Namespace).Replicas(0).Obj(), &framework.StatefulSetScheduling{})
				create(ctx, parallel(f, "empty-parallel", 0, "100m").Obj(), &framework.StatefulSetScheduling{})
			})

		ginkgo.It("rejects every change of spec.scheduling after creation, and accepts updates and /scale that keep it", framework.ID("S-V6"),
			framework.WithFeatureGate(framework.DRAWorkloadResourceClaims), func(ctx context.Context) {
				set := create(ctx, parallel(f, "frozen", 1, "100m").Obj(), gang())
				update := func(mutate func(cfg *framework.StatefulSetScheduling) *framework.StatefulSetScheduling) error {
					_, err := framework.Intent.UpdateStatefulSet(ctx, f.Namespace, set.Name, func(_ *appsv1.StatefulSet, cfg **framework.StatefulSetScheduling) {
						*cfg = mutate(*cfg)
					})
					return err
				}
				ginkgo.By("unsetting spec.scheduling")
				expectRejected(update(func(*framework.StatefulSetScheduling) *framework.StatefulSetScheduling { return nil }), rejectedTypes, "spec.scheduling")
				ginkgo.By("switching gang to basic")
				expectRejected(update(func(*framework.StatefulSetScheduling) *framework.StatefulSetScheduling { return basic() }), rejectedTypes, "spec.scheduling")
				ginkgo.By("adding disruptionMode")
				expectRejected(update(func(c *framework.StatefulSetScheduling) *framework.StatefulSetScheduling {
					c.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
					return c
				}), rejectedTypes, "spec.scheduling")
				ginkgo.By("adding a resource claim")
				expectRejected(update(func(c *framework.StatefulSetScheduling) *framework.StatefulSetScheduling {
					c.ResourceClaims = []schedulingv1alpha3.WorkloadPodGroupResourceClaim{draClaim("gpu", "", "gpu")}
					return c
				}), rejectedTypes, "spec.scheduling")

				ginkgo.By("adding spec.scheduling to a StatefulSet created without it")
				plain := create(ctx, parallel(f, "plain", 1, "100m").Obj(), nil)
				_, err := framework.Intent.UpdateStatefulSet(ctx, f.Namespace, plain.Name, func(_ *appsv1.StatefulSet, cfg **framework.StatefulSetScheduling) {
					*cfg = gang()
				})
				expectRejected(err, rejectedTypes, "spec.scheduling")

				ginkgo.By("a basic StatefulSet's claims cannot be edited either")
				withClaims := basic()
				withClaims.ResourceClaims = []schedulingv1alpha3.WorkloadPodGroupResourceClaim{draClaim("gpu", "", "gpu")}
				claimed := create(ctx, builder.StatefulSet("claimed", f.Namespace).Replicas(0).OrderedReady().
					PodTemplate(func(p *builder.PodWrapper) { p.ResourceClaim("gpu", "", "gpu") }).Obj(), withClaims)
				_, err = framework.Intent.UpdateStatefulSet(ctx, f.Namespace, claimed.Name, func(_ *appsv1.StatefulSet, cfg **framework.StatefulSetScheduling) {
					(*cfg).ResourceClaims = []schedulingv1alpha3.WorkloadPodGroupResourceClaim{draClaim("gpu", "other", "")}
				})
				expectRejected(err, rejectedTypes, "spec.scheduling")

				ginkgo.By("updates that keep spec.scheduling are accepted: spec.replicas, a label, /scale")
				a := apps.StatefulSet(set)
				gomega.Expect(apps.TryScale(ctx, f, a, 2)).To(gomega.Succeed())
				_, err = framework.Intent.UpdateStatefulSet(ctx, f.Namespace, set.Name, func(s *appsv1.StatefulSet, _ **framework.StatefulSetScheduling) {
					s.Labels = map[string]string{"was-harness.io/touched": "true"}
				})
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a label change keeps spec.scheduling")
				gomega.Expect(apps.TryScaleSubresource(ctx, f, a, 3)).To(gomega.Succeed(), "/scale keeps spec.scheduling")
				stored, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(stored.Spec.Replicas).To(gomega.HaveValue(gomega.Equal(int32(3))))
			})

		ginkgo.It("requires exactly one source per resourceClaims entry and at most 4 entries", framework.ID("S-V7"),
			framework.WithFeatureGate(framework.DRAWorkloadResourceClaims), func(ctx context.Context) {
				claims := func(entries ...schedulingv1alpha3.WorkloadPodGroupResourceClaim) *framework.StatefulSetScheduling {
					cfg := gang()
					cfg.ResourceClaims = entries
					return cfg
				}
				both := draClaim("both", "a-claim", "a-template")
				_, err := tryCreate(ctx, parallel(f, "both", 0, "100m").Obj(), claims(both), false)
				expectRejected(err, claimTypes, claimsPath+"[0]")
				_, err = tryCreate(ctx, parallel(f, "neither", 0, "100m").Obj(), claims(draClaim("ok", "a-claim", ""), draClaim("neither", "", "")), false)
				expectRejected(err, claimTypes, claimsPath+"[1]")
				var five []schedulingv1alpha3.WorkloadPodGroupResourceClaim
				for i := range 5 {
					five = append(five, draClaim(fmt.Sprintf("c%d", i), fmt.Sprintf("claim-%d", i), ""))
				}
				_, err = tryCreate(ctx, parallel(f, "five", 0, "100m").Obj(), claims(five...), false)
				expectRejected(err, tooManyTypes, claimsPath)

				ginkgo.By("four entries of one source each are accepted")
				four := parallel(f, "four", 0, "100m").PodTemplate(func(p *builder.PodWrapper) {
					for _, c := range five[:4] {
						p.ResourceClaim(c.Name, ptr.Deref(c.ResourceClaimName, ""), "")
					}
				}).Obj()
				create(ctx, four, claims(five[:4]...))
			})

		ginkgo.It("warns, and does not reject, when the pod template lacks the entry matching a PodGroup-level claim, on create and on update", framework.ID("S-V8"),
			framework.WithFeatureGate(framework.DRAWorkloadResourceClaims), func(ctx context.Context) {
				cfg := gang()
				cfg.ResourceClaims = []schedulingv1alpha3.WorkloadPodGroupResourceClaim{draClaim("shared-gpu", "", "gpu")}
				warnings, err := tryCreate(ctx, parallel(f, "unmatched", 0, "100m").Obj(), cfg, false)
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a missing pod template entry must not be rejected")
				gomega.Expect(warnings).To(gomega.ContainElement(gomega.ContainSubstring("shared-gpu")), "a warning must name the unmatched claim; warnings: %q", warnings)
				logf("warnings: %q", warnings)

				ginkgo.By("a pod template entry of the same name and source: no warning about the claim")
				matched := parallel(f, "matched", 0, "100m").PodTemplate(func(p *builder.PodWrapper) { p.ResourceClaim("shared-gpu", "", "gpu") }).Obj()
				warnings, err = tryCreate(ctx, matched, cfg, false)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(warnings).NotTo(gomega.ContainElement(gomega.ContainSubstring("shared-gpu")), "warnings: %q", warnings)

				// KEP-6277: "Changing the Pod template does not replace the
				// PodGroup or its claims; validation warns if it no longer
				// contains matching entries for the configured shared claims."
				ginkgo.By("an update that drops the pod template's entry is accepted, with a warning naming the claim")
				warnings, err = tryUpdate(ctx, f.Namespace, matched.Name, func(u *unstructured.Unstructured) {
					setTemplateClaims(u, map[string]string{"other": "gpu"})
				})
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a pod template update that drops the matching entry must not be rejected")
				gomega.Expect(warnings).To(gomega.ContainElement(gomega.ContainSubstring("shared-gpu")), "a warning must name the unmatched claim; warnings: %q", warnings)
				logf("warnings on update: %q", warnings)

				ginkgo.By("an update that brings the entry back: accepted, no warning about the claim")
				warnings, err = tryUpdate(ctx, f.Namespace, matched.Name, func(u *unstructured.Unstructured) {
					setTemplateClaims(u, map[string]string{"shared-gpu": "gpu"})
				})
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(warnings).NotTo(gomega.ContainElement(gomega.ContainSubstring("shared-gpu")), "warnings: %q", warnings)

				// A matching entry is one of the same name and source: "Per
				// KEP-5729, each claim in a replacement Pod is shared only if
				// its name and claim source exactly match an entry in the
				// PodGroup. A nonmatching claim is instead reserved for that
				// Pod (or generated from its template for that Pod)."
				ginkgo.By("an update that keeps the entry's name but generates it from another template: accepted, with a warning naming the claim")
				warnings, err = tryUpdate(ctx, f.Namespace, matched.Name, func(u *unstructured.Unstructured) {
					setTemplateClaims(u, map[string]string{"shared-gpu": "other-gpu"})
				})
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a pod template update that changes the entry's source must not be rejected")
				gomega.Expect(warnings).To(gomega.ContainElement(gomega.ContainSubstring("shared-gpu")), "a warning must name the claim whose entry no longer matches; warnings: %q", warnings)
				logf("warnings on update (same name, other source): %q", warnings)
			})
	})

// tryCreate creates set with spec.scheduling cfg, encoded by the intent seam,
// and returns the server's warnings with its answer (dryRun: admission only,
// nothing stored).
func tryCreate(ctx context.Context, set *appsv1.StatefulSet, cfg *framework.StatefulSetScheduling, dryRun bool) ([]string, error) {
	ginkgo.GinkgoHelper()
	u, err := framework.Intent.WithStatefulSetScheduling(set, cfg)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "encoding spec.scheduling")
	warnings := &warningRecorder{}
	rc := framework.RESTConfig()
	rc.WarningHandler = warnings
	dyn, err := dynamic.NewForConfig(rc)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	_, err = dyn.Resource(gvr).Namespace(set.Namespace).Create(ctx, u, opts)
	return warnings.all(), err
}

// warningRecorder keeps the Warning headers of the responses.
type warningRecorder struct {
	mu   sync.Mutex
	text []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.text...)
}

// expectRejected asserts err rejects the request at one of paths (or below)
// with one of types; in annotation mode a path under spec.scheduling may be
// reported as the intent annotation, the field the user wrote.
func expectRejected(err error, types []field.ErrorType, paths ...string) {
	ginkgo.GinkgoHelper()
	framework.ExpectRejected(err, framework.Rejection{Paths: paths, Types: types, Annotation: framework.Intent.StatefulSetAnnotation()})
}

// tryUpdate applies mutate to the stored StatefulSet in its unstructured
// form (so the intent, native field or annotation, is kept as stored) and
// returns the server's warnings with its answer.
func tryUpdate(ctx context.Context, namespace, name string, mutate func(u *unstructured.Unstructured)) ([]string, error) {
	ginkgo.GinkgoHelper()
	warnings := &warningRecorder{}
	rc := framework.RESTConfig()
	rc.WarningHandler = warnings
	dyn, err := dynamic.NewForConfig(rc)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	res := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}).Namespace(namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(u)
		_, err = res.Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	return warnings.all(), err
}

// setTemplateClaims replaces the pod template's resourceClaims, and the
// first container's claims to match, with one entry per name (each from the
// ResourceClaimTemplate of the same name as in draClaim(name, "", template)).
func setTemplateClaims(u *unstructured.Unstructured, claims map[string]string) {
	ginkgo.GinkgoHelper()
	var podClaims, containerClaims []any
	for name, template := range claims {
		podClaims = append(podClaims, map[string]any{"name": name, "resourceClaimTemplateName": template})
		containerClaims = append(containerClaims, map[string]any{"name": name})
	}
	gomega.Expect(unstructured.SetNestedSlice(u.Object, podClaims, "spec", "template", "spec", "resourceClaims")).To(gomega.Succeed())
	containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	first := containers[0].(map[string]any)
	gomega.Expect(unstructured.SetNestedSlice(first, containerClaims, "resources", "claims")).To(gomega.Succeed())
	gomega.Expect(unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")).To(gomega.Succeed())
}
