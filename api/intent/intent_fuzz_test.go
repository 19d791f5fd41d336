package intent

// Native Go fuzz targets for the two intent parsers (the Deployment's and the
// StatefulSet's annotation). `go test` runs their seeds; `make fuzz` fuzzes
// them. The names carry no test-plan id on purpose: they prove properties of
// the parser, not a KEP rule.

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	k8sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/workload-aware/apps-harness/fixtures"
)

func FuzzDeploymentIntent(f *testing.F) {
	for _, v := range intentSeeds(f) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value string) {
		checkIntent(t, DeploymentAnnotation, value, func(a map[string]string) (*SchedulingConfiguration, error) {
			return FromAnnotations(a)
		})
	})
}

func FuzzStatefulSetIntent(f *testing.F) {
	for _, v := range intentSeeds(f) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value string) {
		checkIntent(t, StatefulSetAnnotation, value, func(a map[string]string) (*SchedulingConfiguration, error) {
			return FromAnnotation(a, StatefulSetAnnotation)
		})
	})
}

// checkIntent checks one annotation value read through parse (the kind's
// entry point, which reads key):
//   - absent is nil, nil; present is exactly one of a config or an error;
//   - an error is a *ParseError that names the annotation and says why;
//   - the decision and the decoded value are the apiserver's for a native
//     field under fieldValidation=Strict (case-sensitive field names, no
//     unknown or duplicate fields, no trailing data), plus "must be an object";
//   - an accepted value survives Marshal and Parse unchanged.
func checkIntent(t *testing.T, key, value string, parse func(map[string]string) (*SchedulingConfiguration, error)) {
	if cfg, err := parse(map[string]string{"unrelated": value}); cfg != nil || err != nil {
		t.Fatalf("annotation absent: got %+v, %v; want nil, nil", cfg, err)
	}
	cfg, err := parse(map[string]string{key: value})
	ref, refErr := strictDecode(value)

	if err != nil {
		if cfg != nil {
			t.Fatalf("%q: got both a config %+v and an error %v", value, cfg, err)
		}
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Annotation != key || pe.Err == nil || strings.TrimSpace(pe.Err.Error()) == "" {
			t.Fatalf("%q: error %#v is not a *ParseError for %s with a reason", value, err, key)
		}
		if !strings.Contains(err.Error(), key) {
			t.Fatalf("%q: error %q does not name the annotation %s", value, err, key)
		}
		if refErr == nil {
			t.Fatalf("%q: rejected (%v), but the apiserver's strict decoding accepts it as %+v", value, err, ref)
		}
		return
	}
	if cfg == nil {
		t.Fatalf("%q: annotation present but got neither a config nor an error", value)
	}
	if refErr != nil {
		t.Fatalf("%q: accepted as %s, but the apiserver's strict decoding rejects it: %v", value, mustMarshal(t, cfg), refErr)
	}
	if !reflect.DeepEqual(cfg, ref) {
		t.Fatalf("%q: decoded as %s, the apiserver's strict decoding gives %s", value, mustMarshal(t, cfg), mustMarshal(t, ref))
	}

	again, err := Parse(mustMarshal(t, cfg))
	if err != nil || !equality.Semantic.DeepEqual(cfg, again) {
		t.Fatalf("%q: Marshal then Parse gives %+v, %v; want %+v", value, again, err, cfg)
	}
}

// strictDecode decodes value the way the apiserver decodes a request body
// with fieldValidation=Strict (sigs.k8s.io/json), and requires a JSON object.
func strictDecode(value string) (*SchedulingConfiguration, error) {
	if trimmed := strings.TrimLeft(value, " \t\r\n"); !strings.HasPrefix(trimmed, "{") {
		return nil, errors.New("not a JSON object")
	}
	cfg := &SchedulingConfiguration{}
	strictErrs, err := k8sjson.UnmarshalStrict([]byte(value), cfg)
	if err != nil {
		return nil, err
	}
	if len(strictErrs) > 0 {
		return nil, errors.Join(strictErrs...)
	}
	return cfg, nil
}

func mustMarshal(t *testing.T, cfg *SchedulingConfiguration) string {
	t.Helper()
	s, err := Marshal(cfg)
	if err != nil {
		t.Fatalf("Marshal(%+v): %v", cfg, err)
	}
	return s
}

// oddIntents are values that once only had to "not panic" in the admission
// unit tests; they are seeds now.
var oddIntents = []string{
	``, `null`, `[]`, `"x"`, `0`, `{`, `{}}`, `{}`, ` {} `, "\t{}\n", "\u00a0{}", `{"schedulingPolicy":null}`,
	`{"schedulingPolicy":{"gang":null}}`, `{"schedulingPolicy":{"gang":{"minCount":null}}}`,
	`{"schedulingPolicy":{"gang":{"minCount":-2147483648}}}`, `{"schedulingPolicy":{"gang":{"minCount":2147483647}}}`,
	`{"schedulingPolicy":{"gang":{"minCount":1e99}}}`, `{"schedulingPolicy":{"gang":{"minCount":3.0}}}`,
	`{"schedulingConstraints":{"topology":null}}`, `{"schedulingConstraints":{"topology":[{}]}}`,
	`{"disruptionMode":{"single":{},"all":{}}}`, `{"resourceClaims":null}`, `{"resourceClaims":[]}`, `{"resourceClaims":[{}]}`,
	`{"resourceClaims":[null]}`, `{"resourceClaims":[{"name":""},{"name":""}]}`,
	`{"resourceClaims":[` + strings.Repeat(`{"name":"a"},`, 50) + `{"name":"a"}]}`,
	"\x00\xff", `{"schedulingPolicy":{"basic":{},"gang":{"minCount":0}},"disruptionMode":{}}`,
	`{"schedulingPolicy":{"gang":{"minCount":"3"}}}`, `{"schedulingPolicy":{}} {}`, `{"podGroupTemplateRef":{}}`,
}

// intentSeeds are the fuzz seeds of both parsers: the odd values above, every
// intent annotation in fixtures/, and every string literal that looks like a
// JSON object in this package's tests and the admission tests.
func intentSeeds(f *testing.F) []string {
	f.Helper()
	seeds := append([]string(nil), oddIntents...)
	seeds = append(seeds, fixtureIntents(f)...)
	root := moduleRoot(f)
	for _, dir := range []string{".", filepath.Join(root, "controllers", "admission")} {
		seeds = append(seeds, jsonObjectLiterals(f, dir)...)
	}
	return dedupe(seeds)
}

func dedupe(values []string) []string {
	seen := map[string]bool{}
	out := values[:0]
	for _, v := range values {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// fixtureIntents returns the intent annotation of every Deployment and
// StatefulSet in fixtures/.
func fixtureIntents(f *testing.F) []string {
	f.Helper()
	paths, err := fs.Glob(fixtures.FS, "*/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	var out []string
	for _, path := range paths {
		docs, err := fixtures.Documents(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, doc := range docs {
			var obj struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				f.Fatalf("%s: %v", path, err)
			}
			for _, key := range []string{DeploymentAnnotation, StatefulSetAnnotation} {
				if v, ok := obj.Metadata.Annotations[key]; ok {
					out = append(out, v)
				}
			}
		}
	}
	if len(out) == 0 {
		f.Fatal("no intent annotation found in fixtures/: the seeds would miss every real manifest")
	}
	return out
}

// jsonObjectLiterals returns every string literal in the _test.go files of
// dir whose text starts with "{" (the unit tests' intent values), so new unit
// test cases become seeds without being listed twice.
func jsonObjectLiterals(f *testing.F, dir string) []string {
	f.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no test files in %s: %v", dir, err)
	}
	var out []string
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
			if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(strings.TrimSpace(s), "{") {
				out = append(out, s)
			}
			return true
		})
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
