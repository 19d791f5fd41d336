package testplan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// EnvironmentFile is the name of the environment record in $ARTIFACTS.
const EnvironmentFile = "environment.json"

// Environment is what the suite saw of the cluster under test: written by
// the suite (framework.CheckPrerequisites / SetupCluster) to
// $ARTIFACTS/environment.json and read by the report. It lives here, not in
// framework, so that the report generator needs no cluster client.
type Environment struct {
	// Cluster says whose cluster it is: "local" (started by the harness) or
	// "existing" (vendor mode: --kubeconfig).
	Cluster string `json:"cluster"`
	// Server is the apiserver URL.
	Server        string `json:"server,omitempty"`
	ServerVersion string `json:"serverVersion,omitempty"`
	// APIs are the API group versions checked, served or not.
	APIs []APICheck `json:"apis,omitempty"`
	// APIServerGates are the kube-apiserver's gates as its /metrics reports
	// them (kubernetes_feature_enabled); a gate the server does not know is
	// absent. Empty when /metrics could not be read (see Problems).
	APIServerGates map[string]bool `json:"apiServerGates,omitempty"`
	// ComponentGates are the gates each component was started with, when the
	// harness knows them (its local cluster).
	ComponentGates map[string]map[string]bool `json:"componentGates,omitempty"`
	// IntentDeployment and IntentStatefulSet are how scheduling intent is
	// written: "native" (spec.scheduling) or "annotation".
	IntentDeployment  string `json:"intentDeployment,omitempty"`
	IntentStatefulSet string `json:"intentStatefulSet,omitempty"`
	// Implementation names the implementation under test.
	Implementation string `json:"implementation,omitempty"`
	// Evidence lists what showed the implementation is present.
	Evidence []string `json:"evidence,omitempty"`
	// KEPs says, per KEP, whether the prerequisite check found it
	// implemented, and why (vendor mode; empty on the harness's own
	// cluster, which is not probed). The specs of a KEP not implemented
	// skip (NotImplementedPrefix) and report NOT-IMPLEMENTED.
	KEPs []KEPCheck `json:"keps,omitempty"`
	// Problems lists what is missing; essential ones stop the suite.
	Problems  []Problem `json:"problems,omitempty"`
	CheckedAt time.Time `json:"checkedAt"`
}

// APICheck is one API group version and whether the server serves the
// resources the suite needs from it.
type APICheck struct {
	GroupVersion string   `json:"groupVersion"`
	Resources    []string `json:"resources"`
	Served       bool     `json:"served"`
	// Required: the suite cannot run without it (else only some specs need it).
	Required bool `json:"required"`
}

// KEPCheck is the prerequisite check's verdict on one KEP.
type KEPCheck struct {
	// KEP is the KEP's spec label, e.g. "KEP-6276".
	KEP         string `json:"kep"`
	Implemented bool   `json:"implemented"`
	// Reason says what showed it (implemented) or what was missing (not).
	Reason string `json:"reason"`
}

// NotImplemented maps each KEP found not implemented to the reason.
func (e *Environment) NotImplemented() map[string]string {
	out := map[string]string{}
	for _, k := range e.KEPs {
		if !k.Implemented {
			out[k.KEP] = k.Reason
		}
	}
	return out
}

// Problem is a missing prerequisite, said plainly with how to fix it.
type Problem struct {
	Essential bool   `json:"essential"`
	Message   string `json:"message"`
}

// Essentials returns the essential problems' messages.
func (e *Environment) Essentials() []string {
	var out []string
	for _, p := range e.Problems {
		if p.Essential {
			out = append(out, p.Message)
		}
	}
	return out
}

// WriteEnvironment writes env as indented JSON to path.
func WriteEnvironment(path string, env *Environment) error {
	data, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadEnvironment reads an environment record; a missing file returns nil
// and no error (the report then says the environment was not recorded).
func ReadEnvironment(path string) (*Environment, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var env Environment
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &env, nil
}

// EnvironmentMarkdown renders env as the markdown list the report shows
// under "## Environment" (and was-harness conformance --check-only prints).
func EnvironmentMarkdown(env *Environment) string {
	var b strings.Builder
	writeEnvironmentList(&b, env)
	return b.String()
}

// writeEnvironmentMarkdown renders the environment section of the report.
func writeEnvironmentMarkdown(b *strings.Builder, env *Environment) {
	b.WriteString("## Environment\n\n")
	writeEnvironmentList(b, env)
	b.WriteString("\n")
}

const environmentNotRecorded = "Not recorded (no " + EnvironmentFile + " next to the JUnit report)."

func writeEnvironmentList(b *strings.Builder, env *Environment) {
	if env == nil {
		b.WriteString(environmentNotRecorded + "\n")
		return
	}
	for _, f := range environmentFacts(env) {
		fmt.Fprintf(b, "- %s: ", markdownPart(envPart{Text: f.Label, Warn: f.LabelWarn}))
		for _, p := range f.Parts {
			b.WriteString(markdownPart(p))
		}
		b.WriteString("\n")
		for _, s := range f.Sub {
			fmt.Fprintf(b, "  - %s\n", cell(s))
		}
	}
}

func markdownPart(p envPart) string {
	if p.Warn {
		return "**" + cell(p.Text) + "**"
	}
	return cell(p.Text)
}

// envFact is one line of the environment list, for both writers.
type envFact struct {
	Label     string
	LabelWarn bool
	Parts     []envPart
	Sub       []string
}

// envPart is a piece of a fact's value; Warn parts are shown emphasised.
type envPart struct {
	Text string
	Warn bool
}

func fact(label, value string) envFact {
	return envFact{Label: label, Parts: []envPart{{Text: value}}}
}

func environmentFacts(env *Environment) []envFact {
	cluster := env.Cluster
	switch env.Cluster {
	case "local":
		cluster = "local cluster started by the harness"
	case "existing":
		cluster = "existing cluster (vendor mode)"
	}
	if env.Server != "" {
		cluster += ", " + env.Server
	}
	facts := []envFact{fact("Cluster", cluster), fact("Kubernetes version", orUnknown(env.ServerVersion))}
	if len(env.APIs) > 0 {
		facts = append(facts, apiFact(env.APIs))
	}
	if len(env.APIServerGates) > 0 {
		facts = append(facts, fact("kube-apiserver feature gates (from its /metrics)", formatGates(env.APIServerGates)))
	}
	for _, c := range slices.Sorted(maps.Keys(env.ComponentGates)) {
		facts = append(facts, fact(c+" feature gates (configured)", formatGates(env.ComponentGates[c])))
	}
	if env.IntentDeployment != "" || env.IntentStatefulSet != "" {
		facts = append(facts, fact("Scheduling intent", fmt.Sprintf("%s (Deployments), %s (StatefulSets)", orUnknown(env.IntentDeployment), orUnknown(env.IntentStatefulSet))))
	}
	impl := fact("Implementation", orUnknown(env.Implementation))
	impl.Sub = env.Evidence
	facts = append(facts, impl)
	for _, k := range env.KEPs {
		f := envFact{Label: k.KEP, Parts: []envPart{{Text: "implemented"}, {Text: ": " + k.Reason}}}
		if !k.Implemented {
			f.Parts[0] = envPart{Text: "not implemented", Warn: true}
		}
		facts = append(facts, f)
	}
	for _, p := range env.Problems {
		f := fact("note", p.Message)
		if p.Essential {
			f.Label, f.LabelWarn = "missing", true
		}
		facts = append(facts, f)
	}
	if !env.CheckedAt.IsZero() {
		facts = append(facts, fact("Checked at", env.CheckedAt.UTC().Format(time.RFC3339)))
	}
	return facts
}

func apiFact(apis []APICheck) envFact {
	f := envFact{Label: "APIs"}
	for i, a := range apis {
		if i > 0 {
			f.Parts = append(f.Parts, envPart{Text: "; "})
		}
		f.Parts = append(f.Parts, envPart{Text: fmt.Sprintf("%s (%s): ", a.GroupVersion, strings.Join(a.Resources, ", "))})
		if a.Served {
			f.Parts = append(f.Parts, envPart{Text: "served"})
		} else {
			f.Parts = append(f.Parts, envPart{Text: "not served", Warn: true})
		}
	}
	return f
}

func formatGates(g map[string]bool) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(g)) {
		parts = append(parts, fmt.Sprintf("%s=%t", k, g[k]))
	}
	return strings.Join(parts, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
