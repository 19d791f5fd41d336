package kubeadmhook

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Change is what one call of the reconfigure hook asks of a component: its
// pristine settings (what the cluster was installed with) plus these. The
// zero Change means "back to pristine". Each call replaces the previous
// one's for that component; changes never accumulate.
type Change struct {
	// FeatureGates are merged over the component's --feature-gates.
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
	// RuntimeConfig entries are merged over kube-apiserver's --runtime-config.
	RuntimeConfig map[string]string `json:"runtimeConfig,omitempty"`
	// Version runs the component's image at this tag (another Kubernetes
	// version, preloaded on the nodes). An older binary does not know this
	// cluster's gates, so with a Version the component's own --feature-gates
	// are dropped and only FeatureGates are given.
	Version string `json:"version,omitempty"`
	// Args are flags (name without the leading dashes) set over the
	// component's own, such as kube-controller-manager's controllers or the
	// reference controller-manager's crash-after.
	Args map[string]string `json:"args,omitempty"`
}

// IsZero: back to pristine.
func (c Change) IsZero() bool {
	return len(c.FeatureGates) == 0 && len(c.RuntimeConfig) == 0 && c.Version == "" && len(c.Args) == 0
}

func (c Change) String() string {
	var parts []string
	if len(c.FeatureGates) > 0 {
		parts = append(parts, "feature-gates "+JoinGates(c.FeatureGates))
	}
	if len(c.RuntimeConfig) > 0 {
		parts = append(parts, "runtime-config "+joinMap(c.RuntimeConfig))
	}
	if c.Version != "" {
		parts = append(parts, "version "+c.Version)
	}
	if len(c.Args) > 0 {
		parts = append(parts, "args "+joinMap(c.Args))
	}
	if len(parts) == 0 {
		return "its pristine settings"
	}
	return strings.Join(parts, ", ")
}

// ParseChange reads the hook protocol's arguments: feature gates
// ("A=true,B=false"), runtime-config ("g/v=false,..."), a version ("v1.36.3"
// or empty) and flags ("--name=value --other=value", space-separated).
func ParseChange(gates, runtimeConfig, version, args string) (Change, error) {
	var c Change
	var err error
	if c.FeatureGates, err = ParseGates(gates); err != nil {
		return c, err
	}
	if c.RuntimeConfig, err = parseMap(runtimeConfig, "runtime-config"); err != nil {
		return c, err
	}
	c.Version = strings.TrimSpace(version)
	if c.Version != "" && !strings.HasPrefix(c.Version, "v") {
		return c, fmt.Errorf("version %q: want a Kubernetes version such as v1.36.3", c.Version)
	}
	for _, f := range strings.Fields(args) {
		name, value, ok := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if !strings.HasPrefix(f, "--") || !ok || name == "" {
			return c, fmt.Errorf("flag %q: want --name=value", f)
		}
		if c.Args == nil {
			c.Args = map[string]string{}
		}
		c.Args[name] = value
	}
	return c, nil
}

// ParseGates reads "A=true,B=false".
func ParseGates(s string) (map[string]bool, error) {
	m, err := parseMap(s, "feature-gates")
	if err != nil || m == nil {
		return nil, err
	}
	gates := make(map[string]bool, len(m))
	for k, v := range m {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("feature-gates: %s=%s is not Name=true|false", k, v)
		}
		gates[k] = b
	}
	return gates, nil
}

func parseMap(s, what string) (map[string]string, error) {
	var m map[string]string
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: %q is not key=value", what, kv)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	return m, nil
}

// JoinGates renders gates as "A=true,B=false" in name order.
func JoinGates(g map[string]bool) string {
	m := make(map[string]string, len(g))
	for k, v := range g {
		m[k] = strconv.FormatBool(v)
	}
	return joinMap(m)
}

func joinMap(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// ApplyToFlags returns flags (a container's command or args: the program,
// then --name=value items) with c applied: gates and runtime-config merged
// into their flags (added if missing), each Arg set (replaced in place, or
// appended). With a Version, the component's own feature gates are dropped.
// Items that are not --name=value (the program, positional words) stay.
func ApplyToFlags(flags []string, c Change) []string {
	out := slices.Clone(flags)
	set := func(name, value string) {
		for i, f := range out {
			if n, _, ok := strings.Cut(f, "="); ok && n == "--"+name {
				out[i] = "--" + name + "=" + value
				return
			}
		}
		out = append(out, "--"+name+"="+value)
	}
	drop := func(name string) {
		out = slices.DeleteFunc(out, func(f string) bool { n, _, _ := strings.Cut(f, "="); return n == "--"+name })
	}
	if c.Version != "" {
		drop("feature-gates")
	}
	if len(c.FeatureGates) > 0 {
		merged, _ := ParseGates(flagValue(out, "feature-gates"))
		if merged == nil {
			merged = map[string]bool{}
		}
		maps.Copy(merged, c.FeatureGates)
		set("feature-gates", JoinGates(merged))
	}
	if len(c.RuntimeConfig) > 0 {
		merged, _ := parseMap(flagValue(out, "runtime-config"), "runtime-config")
		if merged == nil {
			merged = map[string]string{}
		}
		maps.Copy(merged, c.RuntimeConfig)
		set("runtime-config", joinMap(merged))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Args)) {
		set(name, c.Args[name])
	}
	return out
}

// flagValue is the value of --name=value in flags ("" when absent).
func flagValue(flags []string, name string) string {
	for _, f := range flags {
		if n, v, ok := strings.Cut(f, "="); ok && n == "--"+name {
			return v
		}
	}
	return ""
}

// WithTag returns image with its tag replaced by tag (a digest is dropped).
func WithTag(image, tag string) string {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return repo + ":" + tag
}
