package localcluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// arg is one --key=value flag. Flags are kept as an ordered list so that the
// command lines in logs are stable and readable.
type arg struct{ key, value string }

// assembleArgs renders defaults, then the feature gates, then applies extra
// (overriding a default of the same key, appending the rest in sorted order).
func assembleArgs(defaults []arg, gates map[string]bool, extra map[string]string) []string {
	args := slices.Clone(defaults)
	if len(gates) > 0 {
		args = append(args, arg{"feature-gates", FormatFeatureGates(gates)})
	}
	seen := map[string]bool{}
	for i, a := range args {
		if v, ok := extra[a.key]; ok {
			args[i].value = v
			seen[a.key] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if !seen[k] {
			args = append(args, arg{k, extra[k]})
		}
	}
	out := make([]string, 0, len(args))
	for _, a := range args {
		out = append(out, fmt.Sprintf("--%s=%s", a.key, a.value))
	}
	return out
}

// FormatFeatureGates renders gates as the --feature-gates value, sorted by name.
func FormatFeatureGates(gates map[string]bool) string {
	parts := make([]string, 0, len(gates))
	for _, k := range slices.Sorted(maps.Keys(gates)) {
		parts = append(parts, fmt.Sprintf("%s=%t", k, gates[k]))
	}
	return strings.Join(parts, ",")
}

// FormatRuntimeConfig renders the --runtime-config value, sorted by group/version.
func FormatRuntimeConfig(rc map[string]string) string {
	parts := make([]string, 0, len(rc))
	for _, k := range slices.Sorted(maps.Keys(rc)) {
		parts = append(parts, k+"="+rc[k])
	}
	return strings.Join(parts, ",")
}

// EffectiveFeatureGates merges the cluster-wide gates with an add-on's and
// the component's own; nil for a component that takes none.
func (c *Config) EffectiveFeatureGates(name Component) map[string]bool {
	if !c.TakesFeatureGates(name) {
		return nil
	}
	gates := maps.Clone(c.FeatureGates)
	if gates == nil {
		gates = map[string]bool{}
	}
	if addon, _ := c.addonComponent(name); addon != nil {
		maps.Copy(gates, addon.FeatureGates)
	}
	maps.Copy(gates, c.Components[name].FeatureGates)
	for _, g := range c.Components[name].OmitFeatureGates {
		delete(gates, g)
	}
	return gates
}

// EffectiveRuntimeConfig merges the cluster-wide runtime-config with the
// kube-apiserver's own.
func (c *Config) EffectiveRuntimeConfig() map[string]string {
	rc := maps.Clone(c.RuntimeConfig)
	if rc == nil {
		rc = map[string]string{}
	}
	maps.Copy(rc, c.Components[APIServer].RuntimeConfig)
	return rc
}

// componentArgs returns the full command line (without the binary) of a
// component: its own flags (flags.go), then its gates and overrides.
func (c *Cluster) componentArgs(name Component) ([]string, error) {
	var defaults []arg
	if own, core := coreFlags[name]; core {
		defaults = own(c)
	} else {
		var err error
		if defaults, err = c.addonFlags(name); err != nil {
			return nil, err
		}
	}
	return assembleArgs(defaults, c.cfg.EffectiveFeatureGates(name), c.cfg.Components[name].ExtraArgs), nil
}
