package admission

// Shared by the two admission fuzz targets (validation_fuzz_test.go,
// statefulset_fuzz_test.go): the invariants every rejection must meet, the
// apiserver's own validation of the compiled Workload and PodGroup, and the
// seed harvesting from fixtures/ and the unit tests.

import (
	"bufio"
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kubernetes/pkg/apis/scheduling"
	schedulingv1beta1internal "k8s.io/kubernetes/pkg/apis/scheduling/v1beta1"
	schedulingvalidation "k8s.io/kubernetes/pkg/apis/scheduling/validation"
	"sigs.k8s.io/yaml"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/deployment"
)

// rejectionCheck says which paths outside spec.scheduling an input may be
// rejected at: cross-field rules report at the other field (spec.replicas,
// the StatefulSet's partition), and only when their condition holds.
type rejectionCheck struct {
	annotationPath string
	// extra maps a path to whether this input may be rejected there.
	extra map[string]bool
}

// checkRejections asserts that every error says where and why: a field
// path under spec.scheduling (or the intent annotation, or an allowed
// cross-field path), a type, and a reason. An InternalError is a finding: it
// is what a panic in the builder is turned into (validateWithBuilder).
// A malformed annotation is reported alone, and no error is reported twice.
func checkRejections(t *testing.T, op string, errs field.ErrorList, rc rejectionCheck) {
	t.Helper()
	seen := map[string]bool{}
	atAnnotation := false
	for _, e := range errs {
		if e == nil {
			t.Fatalf("%s: nil error in %v", op, errs)
		}
		switch {
		case e.Type == "":
			t.Fatalf("%s: error without a type: %#v", op, e)
		case e.Type == field.ErrorTypeInternal:
			t.Fatalf("%s: internal error (a panic or a bug, not a reason): %v", op, e)
		}
		switch {
		case e.Field == rc.annotationPath:
			atAnnotation = true
		case e.Field == "spec.scheduling", strings.HasPrefix(e.Field, "spec.scheduling."), strings.HasPrefix(e.Field, "spec.scheduling["):
		case rc.extra[e.Field]:
		default:
			t.Fatalf("%s: error at %q, which is neither under spec.scheduling nor the annotation nor a cross-field path this input allows (%v): %v", op, e.Field, rc.extra, e)
		}
		if strings.TrimSpace(e.Detail) == "" {
			switch e.Type {
			case field.ErrorTypeRequired, field.ErrorTypeDuplicate, field.ErrorTypeNotFound:
				// the type is the reason ("Required value", "Duplicate value")
			default:
				t.Fatalf("%s: %s error at %s gives no reason: %#v", op, e.Type, e.Field, e)
			}
		}
		if !strings.Contains(e.Error(), e.Field) {
			t.Fatalf("%s: message %q does not name the field %s", op, e.Error(), e.Field)
		}
		key := string(e.Type) + "\x00" + e.Field + "\x00" + e.Detail
		if seen[key] {
			t.Fatalf("%s: error reported twice: %v (all: %v)", op, e, errs.ToAggregate())
		}
		seen[key] = true
	}
	if atAnnotation && len(errs) != 1 {
		t.Fatalf("%s: a malformed annotation must stop validation, got %d errors: %v", op, len(errs), errs.ToAggregate())
	}
}

// schedulingScheme holds what the kube-apiserver applies to a created
// Workload or PodGroup: v1beta1 defaults and declarative validation, and the
// conversion to the internal type its hand-written validation takes.
var schedulingScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(scheduling.AddToScheme(s))
	utilruntime.Must(schedulingv1beta1internal.AddToScheme(s))
	return s
}()

// apiserverOptions are the declarative-validation options the Workload and
// PodGroup strategies pass: their feature gates, all on as in the harness's
// cluster (deploy/*.yaml).
var apiserverOptions = map[string]bool{
	"TopologyAwareWorkloadScheduling": true,
	"DRAWorkloadResourceClaims":       true,
	"PodGroupPreemptionPolicy":        true,
	"CompositePodGroup":               true,
}

// apiserverRejectsWorkload returns what the kube-apiserver would say to a
// create of w: declarative validation (the v1beta1 DV) and the registry's
// hand-written ValidateWorkload, after defaulting.
func apiserverRejectsWorkload(t *testing.T, w *schedulingv1beta1.Workload) field.ErrorList {
	t.Helper()
	w = w.DeepCopy()
	schedulingScheme.Default(w)
	errs := schedulingScheme.Validate(context.Background(), apiserverOptions, w)
	var internal scheduling.Workload
	if err := schedulingScheme.Convert(w, &internal, nil); err != nil {
		t.Fatalf("converting Workload to the internal type: %v", err)
	}
	return append(errs, schedulingvalidation.ValidateWorkload(&internal)...)
}

// apiserverRejectsPodGroup is apiserverRejectsWorkload for a PodGroup.
func apiserverRejectsPodGroup(t *testing.T, pg *schedulingv1beta1.PodGroup) field.ErrorList {
	t.Helper()
	pg = pg.DeepCopy()
	schedulingScheme.Default(pg)
	errs := schedulingScheme.Validate(context.Background(), apiserverOptions, pg)
	var internal scheduling.PodGroup
	if err := schedulingScheme.Convert(pg, &internal, nil); err != nil {
		t.Fatalf("converting PodGroup to the internal type: %v", err)
	}
	return append(errs, schedulingvalidation.ValidatePodGroup(&internal)...)
}

// fixtureObject is the part of a fixture manifest the seeds use.
type fixtureObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	raw []byte
}

// fixtureObjects returns every document of kind in fixtures/, including the
// manifests kept as *.yaml.example because admission rejects them.
func fixtureObjects(f *testing.F, kind string) []fixtureObject {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join(moduleRoot(f), "fixtures", "*", "*.yaml*"))
	if err != nil {
		f.Fatal(err)
	}
	var out []fixtureObject
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Fatalf("%s: %v", path, err)
			}
			var obj fixtureObject
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				f.Fatalf("%s: %v", path, err)
			}
			if obj.Kind == kind {
				obj.raw = doc
				out = append(out, obj)
			}
		}
	}
	if len(out) == 0 {
		f.Fatalf("no %s in fixtures/: the seeds would miss every real manifest", kind)
	}
	return out
}

// testIntentLiterals returns every string literal of this package's unit
// tests whose text starts with "{" (the intent values of their cases), so a
// new unit test case becomes a seed without being listed twice.
func testIntentLiterals(f *testing.F) []string {
	f.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		f.Fatalf("no test files: %v", err)
	}
	var out []string
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "fuzz_test.go") {
			continue // the fuzz targets' own seeds are added directly
		}
		parsed, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			f.Fatal(err)
		}
		ast.Inspect(parsed, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(strings.TrimSpace(s), "{") && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
			return true
		})
	}
	if len(out) == 0 {
		f.Fatal("no intent literal found in the unit tests")
	}
	return out
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot(f *testing.F) string {
	f.Helper()
	dir, err := os.Getwd()
	if err != nil {
		f.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			f.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// oddIntents are the values the old "odd input" subtests fed to the
// validators, which only had to not panic; they are seeds now.
var oddIntents = []string{
	``, `null`, `[]`, `"x"`, `0`, `{`, `{}}`, `{}`, `{"schedulingPolicy":null}`, `{"schedulingPolicy":{"gang":null}}`,
	`{"schedulingPolicy":{"gang":{"minCount":null}}}`, `{"schedulingPolicy":{"gang":{"minCount":-2147483648}}}`,
	`{"schedulingPolicy":{"gang":{"minCount":2147483647}}}`, `{"schedulingPolicy":{"gang":{"minCount":1e99}}}`,
	`{"schedulingConstraints":{"topology":null}}`, `{"schedulingConstraints":{"topology":[{}]}}`,
	`{"disruptionMode":{"single":{},"all":{}}}`, `{"resourceClaims":null}`, `{"resourceClaims":[{}]}`,
	`{"resourceClaims":[{"name":""},{"name":""}]}`, `{"resourceClaims":[` + strings.Repeat(`{"name":"a"},`, 50) + `{"name":"a"}]}`,
	"\x00\xff", `{"schedulingPolicy":{"basic":{},"gang":{"minCount":0}},"disruptionMode":{}}`,
}

// TestApiserverValidationOfCompiledObjects keeps the fuzz targets' compile
// check from passing vacuously: the apiserver validation they use accepts a
// compiled Workload and PodGroup and rejects broken copies of them.
func TestApiserverValidationOfCompiledObjects(t *testing.T) {
	d := newDeployment(annotation(example1))
	cfg, err := intent.FromAnnotations(d.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	w, err := deployment.BuildWorkload(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.UID = "9c2d0000-4444-4b4b-8c8c-000000000001"
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "inference-server-" + podTemplateHash, Namespace: d.Namespace, UID: "7e1f0000-3333-4a4a-9b9b-000000000001"}}
	pg, err := deployment.BuildPodGroup(w, rs, rs.Name, true)
	if err != nil {
		t.Fatal(err)
	}
	if errs := apiserverRejectsWorkload(t, w); len(errs) > 0 {
		t.Fatalf("compiled Workload rejected: %v", errs.ToAggregate())
	}
	if errs := apiserverRejectsPodGroup(t, pg); len(errs) > 0 {
		t.Fatalf("compiled PodGroup rejected: %v", errs.ToAggregate())
	}

	brokenWorkloads := map[string]func(*schedulingv1beta1.Workload){
		"minCount 0":        func(w *schedulingv1beta1.Workload) { w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = 0 },
		"template name a.b": func(w *schedulingv1beta1.Workload) { w.Spec.PodGroupTemplates[0].Name = "a.b" },
		"no namespace":      func(w *schedulingv1beta1.Workload) { w.Namespace = "" },
		"two topology keys": func(w *schedulingv1beta1.Workload) {
			c := w.Spec.PodGroupTemplates[0].SchedulingConstraints
			c.Topology = append(c.Topology, c.Topology[0])
		},
		"duplicate template": func(w *schedulingv1beta1.Workload) {
			w.Spec.PodGroupTemplates = append(w.Spec.PodGroupTemplates, w.Spec.PodGroupTemplates[0])
		},
		"claim with no source": func(w *schedulingv1beta1.Workload) {
			w.Spec.PodGroupTemplates[0].ResourceClaims = []schedulingv1beta1.PodGroupResourceClaim{{Name: "gpu"}}
		},
		"owner without its uid": func(w *schedulingv1beta1.Workload) { w.OwnerReferences[0].UID = "" },
	}
	for name, breakIt := range brokenWorkloads {
		broken := w.DeepCopy()
		breakIt(broken)
		if errs := apiserverRejectsWorkload(t, broken); len(errs) == 0 {
			t.Errorf("Workload with %s accepted", name)
		}
	}
	brokenPodGroups := map[string]func(*schedulingv1beta1.PodGroup){
		"minCount 0": func(pg *schedulingv1beta1.PodGroup) { pg.Spec.SchedulingPolicy.Gang.MinCount = 0 },
		"basic and gang": func(pg *schedulingv1beta1.PodGroup) {
			pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
		},
		"name ending in .": func(pg *schedulingv1beta1.PodGroup) { pg.Name = "inference-server." },
	}
	for name, breakIt := range brokenPodGroups {
		broken := pg.DeepCopy()
		breakIt(broken)
		if errs := apiserverRejectsPodGroup(t, broken); len(errs) == 0 {
			t.Errorf("PodGroup with %s accepted", name)
		}
	}
}
