// Package importcheck keeps the harness apart from the implementation it
// judges, the way Kubernetes' .import-restrictions files do: the packages
// that make up the conformance suite (framework/, suites/, pkg/ and
// cmd/testplan-report) must link nothing of the reference implementation
// (controllers/...) nor the upstream controllers it embeds
// (k8s.io/kubernetes/pkg/controller/...). What both sides share lives in
// api/ (the intent encoding, the crash points, the cluster table).
package importcheck

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/workload-aware/apps-harness"

// harness lists the restricted packages as `go list` arguments: each entry
// is one invocation (the suite binary needs its build tag).
var harness = [][]string{
	{"-test", "./framework/...", "./suites/...", "./pkg/...", "./cmd/testplan-report", "./cmd/bench-scale"},
	{"-test", "-tags", "e2e", "./suites/e2e"},
	// make parity's binary: Kubernetes' own e2e specs, which use upstream's
	// controller helpers themselves (upstreamTests below).
	{"-test", "-tags", "parity", "./suites/parity"},
}

// upstreamTests are Kubernetes' own e2e packages, which suites/parity runs
// unchanged: what they import (deployment and statefulset helpers of
// k8s.io/kubernetes/pkg/controller) is upstream's yardstick, not the
// reference; suites/parity itself is held to the rule like any suite.
const upstreamTests = "k8s.io/kubernetes/test/"

// forbidden reports whether the harness may not link path.
func forbidden(path string) bool {
	under := func(root string) bool { return path == root || strings.HasPrefix(path, root+"/") }
	return under(module+"/controllers") || under("k8s.io/kubernetes/pkg/controller")
}

// allowed are the exceptions, as imported package -> its only permitted
// importers. controllers/config holds the reference's manifests only (YAML,
// embedded, and their decoder): the packaging suite checks the reference's
// install manifests, which deploy/ renders with that RBAC compiled in. Any
// other importer, or any controller package controllers/config itself
// imported, would still be reported.
var allowed = map[string][]string{
	module + "/controllers/config": {module + "/deploy"},
}

func allowedEdge(from, to string) bool { return slices.Contains(allowed[to], from) }

// graph is `go list -deps` output: each package and its direct imports.
type graph map[string][]string

func list(t *testing.T, args ...string) (roots []string, g graph) {
	t.Helper()
	run := func(extra ...string) []string {
		cmd := exec.Command("go", append(append([]string{"list"}, extra...), args...)...)
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("go list %v: %v\n%s", args, err, stderr)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	roots = run("-f", "{{.ImportPath}}")
	g = graph{}
	for _, line := range run("-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}") {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			g[fields[0]] = fields[1:]
		}
	}
	return roots, g
}

// reachableOutside is every package the roots import without going
// through a package under prefix (whose own imports are its business).
func (g graph) reachableOutside(roots []string, prefix string) map[string]bool {
	seen := map[string]bool{}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] || strings.HasPrefix(p, prefix) {
			continue
		}
		seen[p] = true
		queue = append(queue, g[p]...)
	}
	return seen
}

// chain returns the import path from one of roots to target, for the message.
func (g graph) chain(roots []string, target string) []string {
	prev := map[string]string{}
	queue := slices.Clone(roots)
	for _, r := range roots {
		prev[r] = ""
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == target {
			var out []string
			for ; p != ""; p = prev[p] {
				out = append([]string{strings.TrimPrefix(p, module+"/")}, out...)
			}
			return out
		}
		for _, next := range g[p] {
			if _, seen := prev[next]; !seen {
				prev[next] = p
				queue = append(queue, next)
			}
		}
	}
	return []string{target}
}

// violations lists every import of a forbidden package, with the chain
// of imports that brings it into the harness.
func violations(t *testing.T) []string {
	var out []string
	for _, args := range harness {
		roots, g := list(t, args...)
		own := g.reachableOutside(roots, upstreamTests)
		for from, imports := range g {
			if _, exception := allowed[from]; forbidden(from) && !exception {
				continue // inside the reference: only the harness's way in is reported
			}
			if !own[from] {
				continue
			}
			for _, to := range imports {
				if forbidden(to) && !allowedEdge(from, to) {
					out = append(out, fmt.Sprintf("%s -> %s (go list %s)", strings.Join(g.chain(roots, from), " -> "),
						strings.TrimPrefix(to, module+"/"), strings.Join(args, " ")))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestHarnessLinksNoReferenceImplementation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the whole harness")
	}
	if v := violations(t); len(v) > 0 {
		t.Errorf("the harness links the implementation it judges (%d imports):\n  %s\n"+
			"Move what both sides need to api/ (a contract package), or read the reference's files at run time.",
			len(v), strings.Join(v, "\n  "))
	}
}

func TestForbidden(t *testing.T) {
	for path, want := range map[string]bool{
		module + "/controllers/deployment":            true,
		module + "/controllers":                       true,
		module + "/controllersx":                      false,
		module + "/api/intent":                        false,
		"k8s.io/kubernetes/pkg/controller":            true,
		"k8s.io/kubernetes/pkg/controller/deployment": true,
		"k8s.io/kubernetes/pkg/controlplane":          false,
		"k8s.io/kubernetes/pkg/apis/core":             false,
	} {
		if got := forbidden(path); got != want {
			t.Errorf("forbidden(%s) = %t, want %t", path, got, want)
		}
	}
}

func TestAllowedEdges(t *testing.T) {
	if !allowedEdge(module+"/deploy", module+"/controllers/config") {
		t.Error("deploy may embed controllers/config's manifests")
	}
	if allowedEdge(module+"/framework", module+"/controllers/config") || allowedEdge(module+"/deploy", module+"/controllers/admission") {
		t.Error("only the listed importer of a listed package is allowed")
	}
}
