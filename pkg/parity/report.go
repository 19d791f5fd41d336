package parity

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// Run is one mode's run: its Ginkgo JSON report and the Observer's record.
type Run struct {
	Mode string
	// Specs by name (full text without "[sig-apps]").
	Specs map[string]Spec
	// Rewritten: gang mode's specs whose Deployment or StatefulSet had its
	// strategy rewritten by the policy to allow gang.
	Rewritten map[string]bool
	Findings  []Finding
	Duration  time.Duration
}

// Spec is one spec's outcome in a run.
type Spec struct {
	State    string // passed, failed, skipped, pending, ...
	Duration time.Duration
	// Failure is the failure message (its start; firstLine for display).
	Failure string
}

// Files in a run directory, as hack/parity.sh writes them.
const (
	ReportFile       = "report.json"
	ObservationsFile = "observations.json"
)

// LoadRun reads a run directory.
func LoadRun(mode, dir string) (*Run, error) {
	r := &Run{Mode: mode, Specs: map[string]Spec{}, Rewritten: map[string]bool{}}
	reports, err := readGinkgoReports(filepath.Join(dir, ReportFile))
	if os.IsNotExist(err) {
		// The run did not get as far as a report: that fails the target.
		r.Specs["(the run wrote no report: see its e2e.log)"] = Spec{State: "failed", Failure: "no " + filepath.Join(dir, ReportFile)}
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the %s run: %w", mode, err)
	}
	for _, rep := range reports {
		r.Duration += rep.RunTime
		for _, s := range rep.SpecReports {
			if s.LeafNodeType != types.NodeTypeIt {
				if s.State.Is(types.SpecStateFailureStates) {
					// A suite node failed: every spec's outcome is suspect.
					r.Specs["(suite) "+s.LeafNodeType.String()] = Spec{State: s.State.String(), Failure: firstLine(s.FailureMessage())}
				}
				continue
			}
			if s.State == types.SpecStateSkipped && s.Failure.Message == "" {
				continue // left out by the focus
			}
			r.Specs[SpecName(s.FullText())] = Spec{State: s.State.String(), Duration: s.RunTime, Failure: truncate(s.FailureMessage(), 4000)}
		}
	}
	o, err := ReadObservations(filepath.Join(dir, ObservationsFile))
	switch {
	case os.IsNotExist(err):
		if mode != "baseline" && mode != "plain" {
			return nil, fmt.Errorf("the %s run: no %s: the observer did not report", mode, ObservationsFile)
		}
	case err != nil:
		return nil, err
	default:
		r.Findings = Judge(o)
		for _, ow := range o.Owners {
			if ns := o.Namespaces[ow.Namespace]; ns != nil && ow.RewrittenFrom != "" {
				r.Rewritten[SpecName(ns.Spec)] = true
			}
		}
	}
	return r, nil
}

func readGinkgoReports(path string) ([]types.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return reports, nil
}

// SpecName is a spec's name in parity.md and the progress lines: its full
// text without the prefix every spec shares.
func SpecName(full string) string {
	return strings.TrimSpace(strings.TrimPrefix(full, "[sig-apps]"))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// knownReasons explain baseline failures that come from the cluster, not
// the controllers: on the local cluster, kwok nodes run no containers. Each
// matches the spec's name and its failure.
var knownReasons = []struct {
	spec, failure *regexp.Regexp
	reason        string
}{
	{regexp.MustCompile(``), regexp.MustCompile(`RunHostCmd|error running .*kubectl.* exec`),
		"exec: the spec runs a command in a container (kwok nodes run none)"},
	{regexp.MustCompile(`Should recreate evicted statefulset`), regexp.MustCompile(``),
		"hostPort: the spec needs a kubelet that rejects a pod whose hostPort is taken (kwok accepts every pod)"},
	{regexp.MustCompile(`should serve a basic image on each replica`), regexp.MustCompile(``),
		"the spec reads each pod's HTTP answer through the API server's proxy (kwok pods serve nothing)"},
	{regexp.MustCompile(`proportional scaling`), regexp.MustCompile(``),
		"the spec stalls a rollout on an image that does not exist (kwok runs a pod of any image)"},
	{regexp.MustCompile(`Burst scaling|Scaling should happen in predictable order|canary updates and phased rolling updates`), regexp.MustCompile(``),
		"readiness: the spec makes pods unready and ready again through their HTTP probe (exec; kwok pods are ready regardless)"},
	{regexp.MustCompile(``), regexp.MustCompile(`(?i)hostport`), "hostPort (kwok nodes open no port)"},
	// On any cluster here: no registry is reachable, and the harness builds
	// the specs' agnhost and busybox images but not a database.
	{regexp.MustCompile(`CockroachDB cluster`), regexp.MustCompile(``),
		"image: the spec runs cockroachdb/cockroach from Docker Hub, which this machine cannot pull and the harness does not build"},
}

// reason says why a baseline spec failed, when a known cause matches.
func reason(spec, failure string) string {
	for _, k := range knownReasons {
		if k.spec.MatchString(spec) && k.failure.MatchString(failure) {
			return k.reason
		}
	}
	return "unexplained: " + firstLine(failure)
}

// Verdict of a comparison.
type Verdict struct {
	// Regressions: specs that pass in the baseline (or, without one, are
	// expected to pass) and fail in a mode, as "mode: spec: failure".
	Regressions []string
	// Missing: judged objects without the Workloads and PodGroups the KEPs
	// require, as "mode: kind ns/name: why".
	Missing []string
	// AsKEPRequires: specs that fail with intent the way a KEP requires
	// (hack/parity/kep-requires.txt), as "mode: spec: the KEP's sentence".
	AsKEPRequires []string
}

// OK says whether the target passes.
func (v Verdict) OK() bool { return len(v.Regressions) == 0 && len(v.Missing) == 0 }

// Compare judges the runs against the baseline (nil in vendor mode
// without one: then every failure is a regression).
func Compare(baseline *Run, runs []*Run, kepRules []KEPRule) Verdict {
	var v Verdict
	for _, r := range runs {
		for _, name := range sortedKeys(r.Specs) {
			s := r.Specs[name]
			if s.State != "failed" && s.State != "panicked" && s.State != "timedout" && s.State != "interrupted" && s.State != "aborted" {
				continue
			}
			if baseline != nil {
				if b, ok := baseline.Specs[name]; ok && b.State != "passed" {
					continue // fails on stock too: listed apart
				}
			}
			if r.Mode != "plain" {
				if quote, ok := RequiredByKEP(kepRules, name, s.Failure); ok {
					v.AsKEPRequires = append(v.AsKEPRequires, fmt.Sprintf("%s: %s: %s", r.Mode, name, quote))
					continue
				}
			}
			v.Regressions = append(v.Regressions, fmt.Sprintf("%s: %s: %s", r.Mode, name, firstLine(s.Failure)))
		}
		for _, f := range r.Findings {
			if f.Judged && !f.OK {
				v.Missing = append(v.Missing, fmt.Sprintf("%s: %s %s/%s (%s intent): %s", r.Mode, f.Kind, f.Namespace, f.Name, f.Intent, f.Why))
			}
		}
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteMarkdown writes parity.md: the verdict, the spec x mode matrix, the
// baseline's own failures with their reasons, the rewritten specs and the
// Workload and PodGroup record per mode.
func WriteMarkdown(w io.Writer, title string, baseline *Run, runs []*Run, v Verdict) {
	all := runs
	if baseline != nil {
		all = append([]*Run{baseline}, runs...)
	}
	fmt.Fprintf(w, "# %s\n\n", title)
	skipped := map[string]string{}
	for _, r := range all {
		for n, sp := range r.Specs {
			if sp.State == "skipped" {
				skipped[n] = firstLine(sp.Failure)
			}
		}
	}
	if v.OK() {
		fmt.Fprintf(w, "**PASS**: no spec fails with the implementation or with intent that passes %s, and every object with intent that created pods had the Workload and PodGroups the KEPs require.", baselineName(baseline))
		if len(skipped) > 0 {
			fmt.Fprintf(w, " **%d spec(s) SKIPPED** in some run (listed below): they prove nothing.", len(skipped))
		}
		fmt.Fprint(w, "\n\n")
	} else {
		fmt.Fprintf(w, "**FAIL**: %d regression(s), %d object(s) without the Workload or PodGroups the KEPs require.\n\n", len(v.Regressions), len(v.Missing))
		for _, s := range append(append([]string{}, v.Regressions...), v.Missing...) {
			fmt.Fprintf(w, "* %s\n", s)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "| run | specs | passed | failed | skipped | time | objects with intent: judged / OK |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range all {
		var passed, failed, skipped int
		for _, s := range r.Specs {
			switch s.State {
			case "passed":
				passed++
			case "skipped", "pending":
				skipped++
			default:
				failed++
			}
		}
		judged, ok := 0, 0
		for _, f := range r.Findings {
			if f.Judged {
				judged++
				if f.OK {
					ok++
				}
			}
		}
		objects := fmt.Sprintf("%d / %d", judged, ok)
		if r.Mode == "baseline" || r.Mode == "plain" {
			objects = "no intent"
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %s | %s |\n", r.Mode, len(r.Specs), passed, failed, skipped, r.Duration.Round(time.Second), objects)
	}
	fmt.Fprintln(w)

	names := map[string]bool{}
	for _, r := range all {
		for n := range r.Specs {
			names[n] = true
		}
	}
	fmt.Fprintln(w, "## Specs")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "pass ✓, fail ✗, skipped –, not run (blank); `rw`: run with the strategy rewritten to allow gang.")
	fmt.Fprintln(w)
	header := "| spec |"
	sep := "|---|"
	for _, r := range all {
		header += " " + r.Mode + " |"
		sep += "---|"
	}
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, sep)
	for _, n := range sortedKeys(names) {
		row := "| " + strings.ReplaceAll(n, "|", "\\|") + " |"
		for _, r := range all {
			s, ok := r.Specs[n]
			cell := ""
			if ok {
				switch s.State {
				case "passed":
					cell = "✓"
				case "skipped", "pending":
					cell = "–"
				default:
					cell = "✗"
				}
				if s.State != "skipped" && s.State != "pending" {
					cell += fmt.Sprintf(" %ds", int(s.Duration.Seconds()))
				}
				if r.Rewritten[n] {
					cell += " rw"
				}
			}
			row += " " + cell + " |"
		}
		fmt.Fprintln(w, row)
	}
	fmt.Fprintln(w)

	if len(v.AsKEPRequires) > 0 {
		fmt.Fprintln(w, "## Failing with intent as the KEPs require (not regressions)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Each failed on the field and with the error type that the KEP's rule names (hack/parity/kep-requires.txt); failing any other way would be a regression.")
		fmt.Fprintln(w)
		for _, s := range v.AsKEPRequires {
			fmt.Fprintf(w, "* %s\n", s)
		}
		fmt.Fprintln(w)
	}

	if baseline != nil {
		var fails []string
		for _, n := range sortedKeys(baseline.Specs) {
			if s := baseline.Specs[n]; s.State != "passed" && s.State != "skipped" && s.State != "pending" {
				fails = append(fails, fmt.Sprintf("* %s: **%s** (%s)", n, reason(n, s.Failure), firstLine(s.Failure)))
			}
		}
		if len(fails) > 0 {
			fmt.Fprintln(w, "## Failing on the baseline too (not judged)")
			fmt.Fprintln(w)
			for _, f := range fails {
				fmt.Fprintln(w, f)
			}
			fmt.Fprintln(w)
		}
	}

	if len(skipped) > 0 {
		fmt.Fprintf(w, "## SKIPPED: %d spec(s) did not run (not judged, not passed)\n\n", len(skipped))
		for _, n := range sortedKeys(skipped) {
			fmt.Fprintf(w, "* %s: %s\n", n, skipped[n])
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintln(w, "## Workloads and PodGroups")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every Deployment and StatefulSet with intent in the specs' namespaces: the Workloads it owns, the PodGroups it (a Deployment: its ReplicaSets) owns, its pods and how many named a PodGroup.")
	fmt.Fprintln(w)
	for _, r := range runs {
		if len(r.Findings) == 0 {
			continue
		}
		fmt.Fprintf(w, "### %s\n\n| spec | object | strategy | intent | Workloads | PodGroups | pods in a PodGroup | verdict |\n|---|---|---|---|---|---|---|---|\n", r.Mode)
		for _, f := range r.Findings {
			verdict := "OK"
			switch {
			case !f.Judged:
				verdict = "not judged: " + f.Why
			case !f.OK:
				verdict = "**MISSING**: " + f.Why
			}
			fmt.Fprintf(w, "| %s | %s %s/%s | %s | %s | %d | %d | %d of %d | %s |\n", strings.ReplaceAll(f.Spec, "|", "\\|"), f.Kind, f.Namespace, f.Name, f.Strategy, f.Intent, f.Workloads, f.PodGroups, f.PodsInGroup, f.Pods, verdict)
		}
		fmt.Fprintln(w)
	}
}

func baselineName(b *Run) string {
	if b == nil {
		return "the run without intent (no stock baseline given)"
	}
	return "stock kube-controller-manager (the baseline)"
}
